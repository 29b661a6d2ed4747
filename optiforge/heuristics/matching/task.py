"""The online-matching heuristic task ("matching"): the rule that picks each request's server.

What the sandbox loads: this module, :mod:`.instances` (numpy; scipy and scikit-learn only
inside the generators, which run in the trusted parent), :mod:`.online` and :mod:`.validate`.
Never torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from optiforge.heuristics.base import NamedDatasetSplits
from optiforge.heuristics.matching.instances import FAMILIES, MatchingInstance, make_instance
from optiforge.heuristics.matching.online import assign_online
from optiforge.heuristics.matching.seeds import IMPORTS, SEEDS
from optiforge.heuristics.matching.validate import check_assignment, gap_pct
from optiforge.types import Evaluation

DESCRIPTION = (
    "Online bipartite matching in a metric space: a fixed set of servers (drivers, machines) "
    "waits, requests (riders, jobs) arrive one at a time, and each request must be given a free "
    "server at once, for good; the goal is a small total distance between requests and their "
    "servers. The function `select_server(request_distances, free, server_distances, assignment)` "
    "gets the arriving request's distance to every server, a boolean mask of the servers still "
    "free, the matrix of distances between servers, and an array with the index of the request "
    "each server holds (-1 if free); it returns the index of a free server. There are as many "
    "requests as servers, so the last requests take whatever is left: saving well-placed servers "
    "for later can pay. Instances: uniform points, a clustered taxi-like city, handwritten digits "
    "(L1 distance) and shortest paths on a road graph."
)

TEMPLATE = '''import numpy as np
import math


def select_server(request_distances: np.ndarray, free: np.ndarray, server_distances: np.ndarray,
                  assignment: np.ndarray) -> int:
    """Chooses the server for the request that just arrived.

    Args:
        request_distances: Distance from the arriving request to every server, shape (S,).
        free: Boolean mask of the servers still free, shape (S,).
        server_distances: Distances between servers, shape (S, S) (do not modify).
        assignment: Index of the request each server holds, -1 for free servers, shape (S,).

    Returns:
        Index of a free server (free[index] must be True).
    """
    return int(np.argmin(np.where(free, request_distances, np.inf)))
'''

# name -> (family, servers = requests per instance, instances, base seed)
_SPECS: dict[str, tuple[str, int, int, int]] = {
    **{f"{f}_train": (f, 100, 2, 51_100 + 10 * k) for k, f in enumerate(FAMILIES)},
    **{f"{f}_val": (f, 200, 3, 52_200 + 10 * k) for k, f in enumerate(FAMILIES)},
    **{f"{f}_200": (f, 200, 5, 53_200 + 10 * k) for k, f in enumerate(FAMILIES)},
    **{f"{f}_400": (f, 400, 2, 53_400 + 10 * k) for k, f in enumerate(FAMILIES)},
}

SPLIT_DATASETS: dict[str, tuple[str, ...]] = {
    "train": tuple(f"{f}_train" for f in FAMILIES),
    "validation": tuple(f"{f}_val" for f in FAMILIES),
    "test": tuple(f"{f}_{n}" for n in (200, 400) for f in FAMILIES),
}


def dataset_names() -> list[str]:
    """Names accepted as a split (besides train / validation / test)."""
    return list(_SPECS)


@dataclass(frozen=True)
class MatchingDataset:
    """A named set of instances of one family and size, with their exact optima."""

    name: str
    instances: tuple[MatchingInstance, ...]

    @property
    def optima(self) -> np.ndarray:
        return _optima(self.name)


@cache
def get_dataset(name: str) -> MatchingDataset:
    """The named dataset (generated once per process).

    Raises
    ------
    ValueError
        If ``name`` is unknown (the message lists the known names).
    """
    if not isinstance(name, str) or name not in _SPECS:
        raise ValueError(f"name: unknown matching dataset {name!r}; known: {', '.join(_SPECS)}")
    family, n, count, seed = _SPECS[name]
    return MatchingDataset(name, tuple(make_instance(family, n, seed + i) for i in range(count)))


@cache
def _optima(name: str) -> np.ndarray:
    from optiforge.heuristics.matching.reference import opt_cost

    return np.array([opt_cost(inst.cost) for inst in get_dataset(name).instances])


def _payload(inst: MatchingInstance) -> dict[str, Any]:
    if inst.metric == "graph":  # no coordinates: ship the distances
        return {"metric": "graph", "request_distances": inst.cost.tolist(),
                "server_distances": inst.server_cost.tolist()}
    return {"metric": inst.metric, "servers": inst.servers.tolist(), "requests": inst.requests.tolist()}


def _distances(a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
    out = np.empty((len(a), len(b)))
    for lo in range(0, len(a), 64):  # bounded temporaries for 64-d digits
        diff = a[lo:lo + 64, None, :] - b[None, :, :]
        out[lo:lo + 64] = np.abs(diff).sum(-1) if metric == "l1" else np.sqrt((diff**2).sum(-1))
    return out


class MatchingTask(NamedDatasetSplits):
    """Online metric matching with a ``select_server`` heuristic.

    Each request, in arrival order, gets the free server the heuristic returns
    (:func:`~optiforge.heuristics.matching.online.assign_online`). Score: the mean over the
    split's datasets of the mean % excess cost over the exact optimum of the whole instance
    (``linear_sum_assignment``, computed by trusted code). Lower is better; greedy scores
    about 10-60 % depending on the data. ``split`` accepts ``"train"`` (4 families x 2 x 100),
    ``"validation"`` (4 x 3 x 200), ``"test"`` (4 x 5 x 200 and 4 x 2 x 400) or one dataset name.

    References
    ----------
    .. [1] S. Das et al., "Efficient Algorithms for Incremental Metric Bipartite Matching",
       ICLR 2026 (the data families and the cost / OPT measure).
    """

    name = "matching"
    description = DESCRIPTION
    entry_point = "select_server"
    template = TEMPLATE
    imports = IMPORTS
    split_table = SPLIT_DATASETS
    all_datasets = staticmethod(dataset_names)
    dataset_metric = "gap_pct"
    baseline = "greedy"

    def __init__(self) -> None:
        self.seeds: dict[str, str] = dict(SEEDS)

    def dataset(self, name: str) -> MatchingDataset:
        """The named dataset, e.g. ``task.dataset("road_200")``."""
        return get_dataset(name)

    def inputs(self, split: str) -> dict[str, Any]:
        """JSON-able payload: per instance the points and metric, or the distances (road)."""
        return {"instances": [_payload(inst) for name in self.split_datasets(split)
                              for inst in get_dataset(name).instances]}

    def solve(self, fn: Callable[..., Any], inputs: dict[str, Any]) -> list[list[int]]:
        """Match every instance online with heuristic ``fn``; the server of each request."""
        out = []
        for inst in inputs["instances"]:
            if inst["metric"] == "graph":
                req = np.asarray(inst["request_distances"], dtype=np.float64)
                srv = np.asarray(inst["server_distances"], dtype=np.float64)
            else:
                servers = np.asarray(inst["servers"], dtype=np.float64)
                requests = np.asarray(inst["requests"], dtype=np.float64)
                req = _distances(requests, servers, inst["metric"])
                srv = _distances(servers, servers, inst["metric"])
            out.append(assign_online(fn, req, srv))
        return out

    def score(self, split: str, solution: Any) -> Evaluation:
        """Validate the matchings against this process's own instances and score them."""
        names = self.split_datasets(split)
        expected = sum(len(get_dataset(n).instances) for n in names)
        if not isinstance(solution, list):
            return Evaluation.invalid(f"solution must be a list of per-instance assignments, got {type(solution).__name__}")
        if len(solution) != expected:
            return Evaluation.invalid(f"solution has {len(solution)} instances, expected {expected}")
        metrics: dict[str, float] = {}
        per_ds, k = [], 0
        for name in names:
            ds = get_dataset(name)
            gaps = []
            for i, (inst, opt) in enumerate(zip(ds.instances, ds.optima, strict=True)):
                arr, why = check_assignment(solution[k], inst.n_requests, inst.n_servers)
                if why is not None:
                    return Evaluation.invalid(f"{name} instance {i}: {why}")
                gaps.append(gap_pct(inst.cost, arr, float(opt)))
                k += 1
            per_ds.append(float(np.mean(gaps)))
            metrics[f"{name}/gap_pct"] = per_ds[-1]
        return Evaluation(valid=True, score=float(np.mean(per_ds)), metrics=metrics)
