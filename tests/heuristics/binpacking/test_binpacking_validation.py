"""The trusted scorer rejects each kind of malformed solution."""

from __future__ import annotations

import copy

import pytest

from optiforge.heuristics import evaluate_in_process, get_task, load_trusted_function
from optiforge.heuristics.binpacking import BinPackingTask


@pytest.fixture(scope="module")
def task() -> BinPackingTask:
    return get_task("binpacking")


@pytest.fixture(scope="module")
def good(task: BinPackingTask) -> list[list[int]]:
    fn = load_trusted_function(task, task.seeds["best_fit"])
    return task.solve(fn, task.inputs("train"))


def test_valid_solution_scores_as_excess_over_l1_bound(task: BinPackingTask, good) -> None:
    ev = task.score("train", good)
    assert ev.valid and ev.error is None
    ds = task.dataset("weibull_1k")
    avg_bins = sum(len(set(a)) for a in good) / len(good)
    lb = float(ds.l1_bounds().mean())
    assert ev.score == pytest.approx(100 * (avg_bins - lb) / lb)
    assert ev.metrics["weibull_1k/avg_bins"] == pytest.approx(avg_bins)


def _mutate(sol, fn):
    sol = copy.deepcopy(sol)
    fn(sol)
    return sol


@pytest.mark.parametrize(
    ("mutation", "needle"),
    [
        (lambda s: s.pop(), "instances, expected"),
        (lambda s: s.append(s[0]), "instances, expected"),
        (lambda s: s[1].pop(), "expected 1000 bin indices"),
        (lambda s: s[2].__setitem__(0, 1.0), "integers"),
        (lambda s: s[2].__setitem__(0, True), "integers"),
        (lambda s: s[2].__setitem__(0, "0"), "integers"),
        (lambda s: s[3].__setitem__(5, -1), "out of range"),
        (lambda s: s[3].__setitem__(5, 1000), "out of range"),
        (lambda s: s[3].__setitem__(5, 2**70), "out of range"),
        (lambda s: s.__setitem__(0, [0] * 1000), "capacity"),
        (lambda s: s.__setitem__(4, {"a": 1}), "expected a list"),
    ],
)
def test_malformed_solutions_are_invalid(task: BinPackingTask, good, mutation, needle: str) -> None:
    ev = task.score("train", _mutate(good, mutation))
    assert not ev.valid and ev.score is None
    assert needle in ev.error


@pytest.mark.parametrize("bad", [None, {"instances": []}, "[[0]]", 3])
def test_non_list_solution_is_invalid(task: BinPackingTask, bad) -> None:
    assert not task.score("train", bad).valid


def test_overfull_bin_by_one_unit_is_caught(task: BinPackingTask, good) -> None:
    items = task.dataset("weibull_1k").instances[0]
    sol = copy.deepcopy(good)
    # Move one item into another used bin that lacks room: found by the task's own loads.
    loads: dict[int, int] = {}
    for it, b in zip(items.tolist(), sol[0], strict=True):
        loads[b] = loads.get(b, 0) + it
    i = 0
    target = next(b for b in loads if b != sol[0][i] and loads[b] + items[i] > 100)
    sol[0][i] = target
    ev = task.score("train", sol)
    assert not ev.valid and "capacity" in ev.error


def test_unknown_split_names_the_argument(task: BinPackingTask) -> None:
    with pytest.raises(ValueError, match="split"):
        task.inputs("nope")
    with pytest.raises(ValueError, match="split"):
        task.score("nope", [])
    with pytest.raises(ValueError, match="name"):
        task.dataset("weibull_7k")


def test_evaluate_in_process_reports_program_errors_as_invalid(task: BinPackingTask) -> None:
    ev = evaluate_in_process(task, "def priority(item, bins):\n    raise RuntimeError('boom')\n")
    assert not ev.valid and "RuntimeError: boom" in ev.error
    ev = evaluate_in_process(task, "def heuristic(item, bins):\n    return bins\n")
    assert not ev.valid and "priority" in ev.error
    ev = evaluate_in_process("binpacking", "def priority(item, bins):\n    return np.zeros(3)\n")
    assert not ev.valid and "one score per bin" in ev.error
    with pytest.raises(TypeError, match="program_source"):
        evaluate_in_process(task, b"def priority(item, bins): return bins")
