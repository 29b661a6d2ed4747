"""Datasets: distributions, split composition, determinism across processes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from optiforge.heuristics.base import SPLITS
from optiforge.heuristics.binpacking import BinPackingTask, dataset_names, get_dataset


def test_weibull_sets_follow_the_funsearch_distribution() -> None:
    for name, n_items in [("weibull_1k", 1000), ("weibull_5k", 5000), ("weibull_10k", 10000)]:
        ds = get_dataset(name)
        assert ds.capacity == 100 and len(ds.instances) == 5
        items = np.concatenate(ds.instances)
        assert all(len(x) == n_items for x in ds.instances)
        assert items.dtype.kind == "i" and items.min() >= 1 and items.max() <= 100
        # E[floor(45 * Weibull(3))] = 45 * Gamma(4/3) - 1/2 ~= 39.68 (std of the mean < 0.21 here).
        assert abs(items.mean() - 39.68) < 0.7


def test_or_sets_follow_the_or_library_distribution() -> None:
    for name, n_items in [("or1", 120), ("or2", 250), ("or3", 500), ("or4", 1000)]:
        ds = get_dataset(name)
        assert ds.capacity == 150 and len(ds.instances) == 20
        items = np.concatenate(ds.instances)
        assert all(len(x) == n_items for x in ds.instances)
        assert items.min() == 20 and items.max() == 100
        assert abs(items.mean() - 60.0) < 1.5


def test_split_composition_keeps_test_held_out() -> None:
    task = BinPackingTask()
    assert task.split_datasets("train") == ("weibull_1k",)
    assert set(task.split_datasets("test")) == {"weibull_5k", "weibull_10k", "or1", "or2", "or3", "or4"}
    val = get_dataset(task.split_datasets("validation")[0])
    test = get_dataset("weibull_5k")
    assert not any(np.array_equal(a, b) for a in val.instances for b in test.instances)
    assert len(task.inputs("test")["instances"]) == 5 + 5 + 4 * 20
    assert set(dataset_names()) >= set(task.split_datasets("test"))


def test_datasets_are_read_only() -> None:
    with pytest.raises(ValueError):
        get_dataset("or1").instances[0][0] = 5


_DIGEST = (
    "import hashlib, json; from optiforge.heuristics import get_task; t = get_task('binpacking'); "
    "print(json.dumps({s: hashlib.sha256(json.dumps(t.inputs(s)).encode()).hexdigest() for s in SPLITS}))"
)


def test_instances_identical_in_a_fresh_process() -> None:
    task = BinPackingTask()
    here = {s: hashlib.sha256(json.dumps(task.inputs(s)).encode()).hexdigest() for s in SPLITS}
    out = subprocess.run(
        [sys.executable, "-c", f"SPLITS = {list(SPLITS)!r}; " + _DIGEST], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == here
