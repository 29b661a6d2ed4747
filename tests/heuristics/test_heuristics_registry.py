"""Both built-in tasks are registered, satisfy the protocol, and their templates/seeds run."""

from __future__ import annotations

import time

import pytest

from optiforge.heuristics import HeuristicTask, evaluate_in_process, get_task, task_names
from optiforge.heuristics.binpacking import BinPackingTask
from optiforge.heuristics.tsp import TSPTask
from optiforge.validation import UnknownTaskError


@pytest.mark.parametrize("name", ["binpacking", "tsp"])
def test_task_is_registered_and_complete(name: str) -> None:
    assert name in task_names()
    task = get_task(name)
    assert isinstance(task, HeuristicTask) and task.name == name
    assert task.baseline in task.seeds
    assert f"def {task.entry_point}(" in task.template
    for src in [task.template, *task.seeds.values()]:
        ev = evaluate_in_process(task, src, "train")
        assert ev.valid and ev.score is not None, ev.error


@pytest.mark.parametrize("cls", [BinPackingTask, TSPTask])
def test_construction_is_cheap(cls) -> None:
    t0 = time.perf_counter()
    for _ in range(100):
        cls()
    assert time.perf_counter() - t0 < 0.5


def test_unknown_task_is_a_value_error() -> None:
    with pytest.raises(UnknownTaskError, match="task"):  # a ValueError
        get_task("knapsack-42")


def test_score_by_dataset_reads_the_tasks_metric_and_tolerates_tasks_without_one() -> None:
    from optiforge.heuristics import NamedDatasetSplits

    class OlderPlugin(NamedDatasetSplits):  # written before dataset_metric existed
        split_table = {"test": ("a", "b")}
        all_datasets = staticmethod(lambda: ["a", "b"])

    assert OlderPlugin().score_by_dataset("test", {"a/gap_pct": 1.0}) == {}
    tsp = get_task("tsp")
    metrics = {"tsp20/gap_pct": 3.0, "tsp20/avg_length": 9.9, "tsp50/gap_pct": 4.0}
    assert tsp.score_by_dataset("test", metrics) == {"tsp20": 3.0, "tsp50": 4.0}  # missing: left out
    with pytest.raises(ValueError, match="split"):
        tsp.score_by_dataset("nope", metrics)
