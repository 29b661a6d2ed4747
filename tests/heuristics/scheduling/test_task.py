"""The "workflow" task: registered, numpy-only in the sandbox, seeds rank, forged solutions rejected."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from optiforge.heuristics import evaluate_in_process, get_task, load_trusted_function
from optiforge.heuristics.scheduling.task import WorkflowSchedulingTask


@pytest.fixture(scope="module")
def task() -> WorkflowSchedulingTask:
    return get_task("workflow")


@pytest.fixture(scope="module")
def prolis_solution(task):
    return task.solve(load_trusted_function(task, task.seeds["prolis"]), task.inputs("train"))


def test_seeds_score_as_cost_and_rank_as_the_simulator_says(task, prolis_solution):
    ev = task.score("train", prolis_solution)
    assert ev.valid and ev.score > 0
    assert ev.score == pytest.approx(ev.metrics["vm_cost"] + ev.metrics["penalty"])
    heft = evaluate_in_process(task, task.seeds["heft"])
    assert heft.valid and heft.score > ev.score
    assert evaluate_in_process(task, task.template).score == pytest.approx(ev.score)  # template = ProLiS


def test_forged_or_broken_solutions_are_invalid(task, prolis_solution):
    short = copy.deepcopy(prolis_solution)
    short[0].pop()
    assert "actions" in task.score("train", short).error
    bad = copy.deepcopy(prolis_solution)
    bad[0][0] = 10_000
    assert "candidate index" in task.score("train", bad).error
    flags = copy.deepcopy(prolis_solution)
    flags[0][0] = True
    assert "ints" in task.score("train", flags).error
    assert not task.score("train", prolis_solution[:-1]).valid
    assert not task.score("train", "cheap").valid


def test_a_program_that_returns_nonsense_is_invalid(task):
    ev = evaluate_in_process(task, "def priority(task, vms):\n    return np.zeros(3)\n")
    assert not ev.valid and "scores" in ev.error


def test_unknown_split_names_the_argument(task):
    with pytest.raises(ValueError, match="split"):
        task.inputs("nope")


def test_the_sandbox_side_never_imports_torch_or_networkx():
    code = ("import sys, json; from optiforge.heuristics import get_task; t = get_task('workflow'); "
            "json.dumps(t.inputs('train')); print('torch' in sys.modules, 'networkx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False False"


def test_the_sandboxed_executor_scores_a_program(task):
    from optiforge.platform.executors import make_executor

    with make_executor("local", workers=1) as ex:
        good, forged = ex.evaluate(task, [task.seeds["prolis"],
                                          "def priority(task, vms):\n    print('cost: 0')\n    raise SystemExit(0)\n"])
    assert good.valid and good.score == pytest.approx(evaluate_in_process(task, task.seeds["prolis"]).score)
    assert not forged.valid
