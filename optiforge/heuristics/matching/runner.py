"""Run one matching method on an instance, recording cost as requests arrive and time per request.

The one table of method names is :data:`METHODS`; the CLI and the benchmarks go through
:func:`run_method`. The batched method imports torch on first use (this module doesn't).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optiforge import validation
from optiforge.heuristics.matching.instances import MatchingInstance
from optiforge.heuristics.matching.online import SelectServer, online_steps
from optiforge.heuristics.matching.pushrelabel import PushRelabelMatcher, PushRelabelParams
from optiforge.heuristics.matching.reference import (
    greedy_steps,
    matching_cost,
    opt_assignment,
    quadtree_steps,
)

Progress = Callable[[int, int], None]

METHODS: dict[str, str] = {
    "pushrelabel": "multi-level push-relabel, one request at a time (CPU reference, numpy)",
    "pushrelabel-batched": "multi-level push-relabel on torch, requests in batches (slack-scan kernel)",
    "greedy": "nearest free server, irrevocable",
    "quadtree": "hierarchical greedy on a randomly shifted quadtree (2-D data only)",
    "opt": "exact optimum of each prefix (linear_sum_assignment); not an online method",
}
"""Method name -> what it is. ``program`` (a ``select_server`` function) is the extra one."""


@dataclass
class MatchingRun:
    """What one method did on one instance.

    Attributes
    ----------
    method : str
        The method name.
    assignment : numpy.ndarray
        The final server of every request.
    cost : float
        Total distance of the final matching.
    checkpoints : list of int
        Numbers of requests after which the cost was recorded.
    costs : list of float
        Cost of the method's matching after each checkpoint (with recourse, for push-relabel).
    request_times : numpy.ndarray
        Seconds spent per request (a batch's time is shared by its requests; ``opt`` is the
        exact solve of all requests divided by their number).
    stats : dict
        Method-specific counters (pushes, relabels, rebuilds, ...).
    """

    method: str
    assignment: np.ndarray
    cost: float
    checkpoints: list[int]
    costs: list[float]
    request_times: np.ndarray
    stats: dict[str, Any] = field(default_factory=dict)

    def summary(self, opt: float | None = None) -> dict[str, Any]:
        """JSON-able summary: cost, ratio to ``opt``, mean / p99 time per request (ms)."""
        t = self.request_times
        return {
            "method": self.method,
            "cost": self.cost,
            "ratio_to_opt": None if not opt else self.cost / opt,
            "ms_per_request_mean": float(t.mean() * 1e3) if t.size else 0.0,
            "ms_per_request_p99": float(np.percentile(t, 99) * 1e3) if t.size else 0.0,
            "total_s": float(t.sum()),
            "checkpoints": list(self.checkpoints),
            "costs": list(self.costs),
            "stats": dict(self.stats),
        }


def default_checkpoints(n_requests: int, batch_size: int, count: int = 10) -> list[int]:
    """About ``count`` prefix sizes, on multiples of ``batch_size`` where possible, ending at
    ``n_requests``."""
    batch_size = validation.integer(batch_size, "batch_size", minimum=1)
    step = max(1, math.ceil(n_requests / count / batch_size)) * batch_size
    points = list(range(step, n_requests, step)) + [n_requests]
    return points if len(points) > 1 or n_requests < 2 else [n_requests]


def opt_curve(instance: MatchingInstance, checkpoints: list[int]) -> list[float]:
    """The exact optimum of each prefix of the requests."""
    return [matching_cost(instance.cost[:k], opt_assignment(instance.cost[:k])) for k in checkpoints]


def run_method(instance: MatchingInstance, method: str, *, params: PushRelabelParams | None = None,
               batch_size: int = 200, seed: int = 0, checkpoints: list[int] | None = None,
               program: SelectServer | None = None, device: str | None = None,
               backend: str | None = None, progress: Progress | None = None) -> MatchingRun:
    """Run ``method`` on ``instance``, inserting the requests in arrival order.

    Parameters
    ----------
    instance : MatchingInstance
        The servers, the requests and their distances.
    method : str
        A key of :data:`METHODS`, or ``"program"`` with ``program`` given.
    params : PushRelabelParams, optional
        Push-relabel parameters (paper defaults).
    batch_size : int
        Requests per batch for ``pushrelabel-batched`` (the paper uses 200).
    seed : int
        Seed of the method's own randomness (quadtree shift, batched tie-breaking).
    checkpoints : list of int, optional
        Prefix sizes at which to record the cost (default :func:`default_checkpoints`).
    program : callable, optional
        A ``select_server`` heuristic (method ``"program"``).
    device, backend : str, optional
        Torch device and kernel backend of ``pushrelabel-batched``.
    progress : callable, optional
        ``progress(done, total)`` after each request or batch.

    Returns
    -------
    MatchingRun

    Raises
    ------
    ValueError
        On an unknown method, a bad batch size or checkpoint, or a method that does not fit
        the data (quadtree on non-2-D points).
    """
    names = (*METHODS, "program")
    validation.choice(method, "method", names)
    batch_size = validation.integer(batch_size, "batch_size", minimum=1)
    r = instance.n_requests
    points = default_checkpoints(r, batch_size) if checkpoints is None else sorted(
        {validation.integer(k, "checkpoints", minimum=1, maximum=r) for k in checkpoints})
    if method == "program" and program is None:
        raise ValueError("program: method 'program' needs a select_server function")
    if method == "pushrelabel-batched":
        return _run_batched(instance, params, batch_size, seed, points, device, backend, progress)
    if method == "pushrelabel":
        return _run_reference(instance, params, points, progress)
    if method == "opt":
        start = time.perf_counter()
        assignment = opt_assignment(instance.cost)
        elapsed = time.perf_counter() - start
        return MatchingRun(method, assignment, matching_cost(instance.cost, assignment), points,
                           opt_curve(instance, points), np.full(r, elapsed / r))
    steps: Iterator[int]
    if method == "greedy":
        steps = greedy_steps(instance.cost)
    elif method == "quadtree":
        if instance.dim != 2:
            raise ValueError(f"method: quadtree needs 2-D points; {instance.family!r} is not 2-D")
        steps = quadtree_steps(instance.servers, instance.requests, instance.cost, seed)
    else:
        steps = online_steps(program, instance.cost, instance.server_cost)
    return _run_irrevocable(instance, method, steps, points, progress)


def _run_irrevocable(instance: MatchingInstance, method: str, steps: Iterator[int],
                     points: list[int], progress: Progress | None) -> MatchingRun:
    r = instance.n_requests
    assignment = np.empty(r, dtype=np.int64)
    times = np.empty(r)
    for i in range(r):
        start = time.perf_counter()
        assignment[i] = next(steps)
        times[i] = time.perf_counter() - start
        if progress is not None:
            progress(i + 1, r)
    prefix = np.cumsum(instance.cost[np.arange(r), assignment])
    return MatchingRun(method, assignment, float(prefix[-1]), points,
                       [float(prefix[k - 1]) for k in points], times)


def _run_reference(instance: MatchingInstance, params: PushRelabelParams | None,
                   points: list[int], progress: Progress | None) -> MatchingRun:
    r = instance.n_requests
    matcher = PushRelabelMatcher(instance.n_servers, params)
    times, costs, marks = np.empty(r), [], set(points)
    for i in range(r):
        start = time.perf_counter()
        matcher.insert(instance.cost[i])
        times[i] = time.perf_counter() - start
        if i + 1 in marks:
            costs.append(matcher.cost())
        if progress is not None:
            progress(i + 1, r)
    return MatchingRun("pushrelabel", matcher.assignment(), matcher.cost(), points, costs, times,
                       {**matcher.stats.as_dict(), "omega": matcher.omega})


def _run_batched(instance: MatchingInstance, params: PushRelabelParams | None, batch_size: int,
                 seed: int, points: list[int], device: str | None, backend: str | None,
                 progress: Progress | None) -> MatchingRun:
    from optiforge.heuristics.matching.batched import BatchedPushRelabelMatcher

    r = instance.n_requests
    matcher = BatchedPushRelabelMatcher(instance.n_servers, params, device=device, backend=backend,
                                        seed=seed)
    # Batches end at every checkpoint, so the recorded costs are exact prefixes.
    ends = sorted(set(range(batch_size, r, batch_size)) | set(points) | {r})
    times, costs, marks, lo = np.empty(r), [], set(points), 0
    for hi in ends:
        start = time.perf_counter()
        matcher.insert_batch(instance.cost[lo:hi])
        times[lo:hi] = (time.perf_counter() - start) / (hi - lo)
        if hi in marks:
            costs.append(matcher.cost())
        if progress is not None:
            progress(hi, r)
        lo = hi
    stats = {**matcher.stats, "omega": matcher.omega, "device": str(matcher.device),
             "materialized": matcher.materialized}
    return MatchingRun("pushrelabel-batched", matcher.assignment(), matcher.cost(), points, costs,
                       times, stats)
