"""The "matching" task: registered, numpy-only in the sandbox, seeds score, bad solutions rejected."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from optiforge.heuristics import evaluate_in_process, get_task
from optiforge.heuristics.matching import MatchingTask


@pytest.fixture(scope="module")
def task() -> MatchingTask:
    return get_task("matching")


@pytest.fixture(scope="module")
def greedy_solution(task):
    from optiforge.heuristics import load_trusted_function

    return task.solve(load_trusted_function(task, task.seeds["greedy"]), task.inputs("train"))


def test_greedy_seed_scores_as_gap_to_the_optimum(task, greedy_solution):
    ev = task.score("train", greedy_solution)
    assert ev.valid and 5 < ev.score < 80
    assert set(ev.metrics) == {f"{f}_train/gap_pct" for f in ("uniform", "taxi", "digits", "road")}
    assert all(v >= 0 for v in ev.metrics.values())  # nothing beats the optimum


def test_a_better_rule_scores_lower(task):
    # Greedy that breaks near-ties toward the server with the most free neighbours nearby
    # would be a real idea; here the check is simply that the score ranks rules: a rule
    # that takes the farthest free server is far worse than greedy.
    far = "def select_server(d, free, sd, a):\n    return int(np.argmax(np.where(free, d, -1.0)))\n"
    assert evaluate_in_process(task, far).score > evaluate_in_process(task, task.seeds["greedy"]).score


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda s: s[0].__setitem__(1, s[0][0]), "more than one request"),
        (lambda s: s[0].pop(), "expected 100"),
        (lambda s: s[0].__setitem__(0, 100), "out of range"),
        (lambda s: s[0].__setitem__(0, True), "integers"),
        (lambda s: s.pop(), "expected 8"),
    ],
)
def test_invalid_solutions_are_rejected(task, greedy_solution, mutate, needle):
    sol = copy.deepcopy(greedy_solution)
    mutate(sol)
    ev = task.score("train", sol)
    assert not ev.valid and needle in ev.error


def test_a_rule_that_takes_a_used_server_is_invalid(task):
    ev = evaluate_in_process(task, "def select_server(d, free, sd, a):\n    return 0\n")
    assert not ev.valid and "not a free server" in ev.error


def test_unknown_split_names_the_argument(task):
    with pytest.raises(ValueError, match="split"):
        task.inputs("nope")
    with pytest.raises(ValueError, match="name"):
        task.dataset("uniform_7")


def test_the_sandbox_side_never_imports_torch():
    code = ("import sys, json; from optiforge.heuristics import get_task; t = get_task('matching'); "
            "json.dumps(t.inputs('train')); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
