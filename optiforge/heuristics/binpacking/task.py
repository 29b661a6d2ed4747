"""The online bin-packing heuristic task ("binpacking"), as in FunSearch / EoH / CALM."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from optiforge.heuristics.base import NamedDatasetSplits
from optiforge.heuristics.binpacking.datasets import (
    SPLIT_DATASETS,
    BinPackingDataset,
    dataset_names,
    get_dataset,
)
from optiforge.heuristics.binpacking.seeds import IMPORTS, SEEDS
from optiforge.heuristics.binpacking.simulate import check_assignment, count_bins, online_pack
from optiforge.types import Evaluation

DESCRIPTION = (
    "Online bin packing: items arrive one at a time and each must be placed at once into a bin "
    "of fixed capacity; the goal is to use as few bins as possible. For each item, the function "
    "`priority(item, bins)` receives the item size and a numpy array with the remaining capacity "
    "of every bin the item fits in (including still-empty bins, which have the full capacity), "
    "and returns one priority score per bin; the item goes to the bin with the highest score."
)

TEMPLATE = '''import numpy as np
import math


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Returns the priority with which to add `item` to each bin.

    Args:
        item: Size of the item to be packed.
        bins: Remaining capacities of the bins that can fit the item (empty bins included).

    Returns:
        Array of the same shape as `bins` with the priority score of each bin;
        the item is packed into the bin with the highest score.
    """
    return -(bins - item)
'''


class BinPackingTask(NamedDatasetSplits):
    """Online 1-D bin packing with a learned ``priority(item, bins)`` heuristic.

    The simulation follows FunSearch [1]_ exactly (see
    :mod:`optiforge.heuristics.binpacking.simulate`); the score is the mean, over the
    split's datasets, of the % excess bins over the L1 lower bound
    ``ceil(sum(items) / capacity)``, computed per dataset as FunSearch does:
    ``100 * (mean bins - mean L1) / mean L1``. Lower is better.

    ``split`` arguments accept ``"train"`` (Weibull 5 x 1k), ``"validation"`` (Weibull
    5 x 5k), ``"test"`` (Weibull 5 x 5k held-out seed, 5 x 10k, OR1-OR4), or any single
    dataset name from :meth:`datasets` (e.g. ``"weibull_5k"``, ``"or3"``).

    References
    ----------
    .. [1] B. Romera-Paredes et al., "Mathematical discoveries from program search with
       large language models", Nature 625, 468-475 (2024).
    .. [2] F. Liu et al., "Evolution of Heuristics: Towards Efficient Automatic Algorithm
       Design Using Large Language Model", ICML 2024.
    .. [3] Z. Huang et al., "CALM: Co-evolution of Algorithms and Language Model for
       Automatic Heuristic Design", arXiv:2505.12285 (2025).
    """

    name = "binpacking"
    description = DESCRIPTION
    entry_point = "priority"
    template = TEMPLATE
    imports = IMPORTS
    split_table = SPLIT_DATASETS
    all_datasets = staticmethod(dataset_names)
    dataset_metric = "excess_pct"
    baseline = "best_fit"
    # The graft operator's building blocks (optiforge.agents.evolution.graft): the space an
    # item would leave, the same as a fraction of the capacity (an empty bin is always among
    # ``bins``, so its maximum is the capacity), and how full the item would make the bin.
    features = {"bins - item": 10.0, "(bins - item) / np.max(bins)": 0.1, "item / bins": 0.5}
    score_scale = 10.0  # best fit's -(bins - item) spreads over about this much

    def __init__(self) -> None:
        # Instance data is generated lazily (get_dataset caches it per process): construction is cheap.
        self.seeds: dict[str, str] = dict(SEEDS)

    # -- datasets -------------------------------------------------------------------------
    def dataset(self, name: str) -> BinPackingDataset:
        """The named dataset, e.g. ``task.dataset("weibull_5k")``."""
        return get_dataset(name)

    # -- protocol ---------------------------------------------------------------------------
    def inputs(self, split: str) -> dict[str, Any]:
        """JSON-able payload: ``{"instances": [{"capacity": int, "items": [int, ...]}, ...]}``."""
        instances = []
        for ds_name in self.split_datasets(split):
            ds = get_dataset(ds_name)
            instances += [{"capacity": ds.capacity, "items": x.tolist()} for x in ds.instances]
        return {"instances": instances}

    def solve(self, fn: Callable[..., Any], inputs: dict[str, Any]) -> list[list[int]]:
        """Pack every instance online with heuristic ``fn``; return each item's bin index."""
        return [online_pack(fn, inst["items"], inst["capacity"]).tolist() for inst in inputs["instances"]]

    def score(self, split: str, solution: Any) -> Evaluation:
        """Validate ``solution`` against this process's own copy of the items and score it."""
        names = self.split_datasets(split)
        expected = sum(len(get_dataset(n).instances) for n in names)
        if not isinstance(solution, list):
            return Evaluation.invalid(f"solution must be a list of per-instance bin lists, got {type(solution).__name__}")
        if len(solution) != expected:
            return Evaluation.invalid(f"solution has {len(solution)} instances, expected {expected}")
        metrics: dict[str, float] = {}
        excesses = []
        k = 0
        for n in names:
            ds = get_dataset(n)
            bins_used = []
            for i, items in enumerate(ds.instances):
                arr, why = check_assignment(items, solution[k], ds.capacity)
                if why is not None:
                    return Evaluation.invalid(f"{n} instance {i}: {why}")
                bins_used.append(count_bins(arr))
                k += 1
            avg_bins = float(np.mean(bins_used))
            avg_lb = float(np.mean(ds.l1_bounds()))
            excess = 100.0 * (avg_bins - avg_lb) / avg_lb
            excesses.append(excess)
            metrics[f"{n}/excess_pct"] = excess
            metrics[f"{n}/avg_bins"] = avg_bins
            metrics[f"{n}/l1_bound"] = avg_lb
        return Evaluation(valid=True, score=float(np.mean(excesses)), metrics=metrics)
