"""The evolvable "tsptw" / "tspdl" tasks: registered, numpy-only in the sandbox, trusted scoring."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from optiforge.heuristics import evaluate_in_process, get_task


@pytest.fixture(params=["tsptw", "tspdl"])
def task(request):
    return get_task(request.param)


def test_seeds_score_and_are_feasible(task) -> None:
    scores = {}
    for name, source in task.seeds.items():
        ev = evaluate_in_process(task, source, "train")
        assert ev.valid, ev.error
        scores[name] = ev.score
    # Hard sets are feasible; greedy-C inside LazyMask always finds the tours (TSPDL's
    # nearest-first, by contrast, often spends the backtracking budget: room for evolution).
    assert evaluate_in_process(task, task.seeds["greedy_c"], "train").metrics["feasible_pct"] == 100.0
    # The score is the mean feasible length: two different rules give different scores.
    assert scores["greedy_c"] != scores["nearest"]


def test_a_scorer_that_ignores_the_constraints_still_gets_feasible_tours() -> None:
    # Farthest-first would be hopeless without masks; the decoder's masks keep it feasible.
    task = get_task("tsptw")
    far = task.seeds["nearest"].replace("return -distance_matrix", "return distance_matrix")
    ev = evaluate_in_process(task, far, "train")
    assert ev.valid and ev.metrics["feasible_pct"] > 90.0
    assert ev.score > evaluate_in_process(task, task.seeds["nearest"], "train").score


def test_forged_and_malformed_solutions(task) -> None:
    ins = task.instances("train")
    identity = np.tile(np.arange(ins.n), (ins.size, 1))
    forged = task.score("train", identity.tolist())  # valid permutations, mostly infeasible
    honest = evaluate_in_process(task, task.seeds["greedy_c"], "train")
    assert forged.valid and forged.score > honest.score
    assert not task.score("train", identity[:3].tolist()).valid
    assert not task.score("train", [[0.5] * ins.n] * ins.size).valid
    assert not task.score("train", "tours").valid


def test_a_program_with_the_wrong_output_is_invalid(task) -> None:
    src = task.template.rsplit("return", 1)[0] + "return np.zeros(len(candidates) + 1)\n"
    ev = evaluate_in_process(task, src, "train")
    assert not ev.valid and "scores for" in ev.error


def test_unknown_split_names_the_argument(task) -> None:
    with pytest.raises(ValueError, match="split"):
        task.inputs("nope")


def test_the_sandbox_side_never_imports_torch() -> None:
    code = ("import sys, json; from optiforge.heuristics import get_task; t = get_task('tsptw'); "
            "json.dumps(t.inputs('train')); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_sandboxed_evaluation_matches_the_trusted_one() -> None:
    from optiforge.platform.sandbox import Sandbox, evaluate_programs

    task = get_task("tsptw")
    programs = [task.seeds["greedy_c"], task.seeds["nearest"]]
    with Sandbox(workers=1) as sandbox:
        evals = evaluate_programs(sandbox, "tsptw", programs, "train")
    for ev, src in zip(evals, programs, strict=True):
        assert ev.valid, ev.error
        assert ev.score == pytest.approx(evaluate_in_process(task, src, "train").score)
