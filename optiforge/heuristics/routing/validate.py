"""The trusted TSPTW / TSPDL checker and PIP's table metrics.

A tour is the ``n`` node ids of one instance, a permutation starting at the depot 0; the
vehicle returns to the depot after the last customer. The checker replays it against its own
copy of the instances:

* TSPTW: ``a_j = max(a_i + d_ij, e_j)`` (waiting allowed); node ``j`` is violated when
  ``a_j > l_j`` and its lateness is ``a_j - l_j`` (the depot's deadline is checked on return);
* TSPDL: the load carried into ``j`` plus ``demand[j]`` must not exceed ``draft[j]``; the
  violation is the excess.

A row of ``-1`` (a decoder that gave up) is a missing tour: infeasible, no length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optiforge.heuristics.routing.instances import RoutingInstances

TOLERANCE = 1e-6
"""Slack on every constraint (normalised units), so float summation order cannot flip a verdict."""


@dataclass(frozen=True)
class TourCheck:
    """The verdict on one tour per instance (arrays of length ``B``).

    Attributes
    ----------
    length : numpy.ndarray
        Closed tour length (``nan`` for a missing tour).
    violated : numpy.ndarray
        Number of nodes whose constraint is violated.
    lateness : numpy.ndarray
        Total violation: time after the deadlines (TSPTW) or load above the drafts (TSPDL).
    complete : numpy.ndarray
        The row is a permutation of ``0..n-1`` starting at the depot.
    """

    length: np.ndarray
    violated: np.ndarray
    lateness: np.ndarray
    complete: np.ndarray

    @property
    def feasible(self) -> np.ndarray:
        """A complete tour with no violated node."""
        return self.complete & (self.violated == 0)


def check_tours(instances: RoutingInstances, tours: np.ndarray) -> TourCheck:
    """Validate one tour per instance (vectorised over the batch).

    Parameters
    ----------
    instances : RoutingInstances
        ``B`` instances of ``n`` nodes.
    tours : array-like of int
        ``(B, n)`` node ids; row ``b`` starts at 0 and visits every node once, or is all ``-1``.

    Returns
    -------
    TourCheck

    Raises
    ------
    ValueError
        If ``tours`` does not have shape ``(B, n)`` or holds non-integers.
    """
    arr = np.asarray(tours)
    B, n = instances.size, instances.n
    if arr.shape != (B, n):
        raise ValueError(f"tours: expected shape {(B, n)}, got {arr.shape}")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"tours: expected integer node ids, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    in_range = ((arr >= 0) & (arr < n)).all(axis=1)
    safe = np.where(in_range[:, None], arr, np.arange(n)[None, :])
    counts = np.zeros((B, n), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(B), n), safe.ravel()), 1)
    complete = in_range & (counts == 1).all(axis=1) & (safe[:, 0] == 0)
    tour = np.where(complete[:, None], safe, np.arange(n)[None, :])

    dist = instances.distances()
    rows = np.arange(B)
    nxt = np.roll(tour, -1, axis=1)
    legs = dist[rows[:, None], tour, nxt]
    length = np.where(complete, legs.sum(axis=1), np.nan)

    violated = np.zeros(B, dtype=np.int64)
    lateness = np.zeros(B)
    if instances.problem == "tsptw":
        start = np.take_along_axis(instances.tw_start, tour, axis=1)
        end = np.take_along_axis(instances.tw_end, tour, axis=1)
        t = np.zeros(B)
        for s in range(1, n + 1):
            # s == n is the return to the depot (position 0 again).
            k = s % n
            t = np.maximum(t + legs[:, s - 1], start[:, k])
            late = t - end[:, k]
            bad = late > TOLERANCE
            violated += bad
            lateness += np.where(bad, late, 0.0)
    else:
        demand = np.take_along_axis(instances.demand, tour, axis=1)
        draft = np.take_along_axis(instances.draft, tour, axis=1)
        carried = np.cumsum(demand, axis=1)  # load on arrival at position s, its demand included
        excess = carried[:, 1:] - draft[:, 1:]
        bad = excess > TOLERANCE
        violated = bad.sum(axis=1)
        lateness = np.where(bad, excess, 0.0).sum(axis=1)
    violated = np.where(complete, violated, n)
    return TourCheck(length, violated, lateness, complete)


@dataclass(frozen=True)
class TableRow:
    """One row of PIP's tables (percentages in %, objective in normalised units).

    ``sol_inf``: share of all generated solutions that are infeasible; ``inst_inf``: share of
    instances with no feasible solution among their samples; ``obj``: mean over instances
    with a feasible solution of the best feasible length; ``gap``: mean % gap of that length
    to the reference on the instances both solved (``nan`` without a reference);
    ``time_s``: total wall time.
    """

    method: str
    sol_inf: float
    inst_inf: float
    obj: float
    gap: float
    time_s: float
    instances: int

    def as_dict(self) -> dict[str, float | str | int]:
        """JSON-able, with the table's column names."""
        return {"method": self.method, "sol_inf_pct": self.sol_inf, "inst_inf_pct": self.inst_inf,
                "obj": self.obj, "gap_pct": self.gap, "time_s": self.time_s, "instances": self.instances}


def best_feasible(checks: list[TourCheck]) -> np.ndarray:
    """Per instance, the shortest feasible length among several samples (``nan`` if none)."""
    lengths = np.stack([np.where(c.feasible, c.length, np.inf) for c in checks])
    best = lengths.min(axis=0)
    return np.where(np.isfinite(best), best, np.nan)


def table_row(method: str, checks: list[TourCheck], time_s: float,
              reference: np.ndarray | None = None) -> TableRow:
    """Summarise the samples of each instance (one :class:`TourCheck` per sample) as a table row.

    Parameters
    ----------
    method : str
        Row label.
    checks : list of TourCheck
        One check per sample (e.g. 8 dihedral augmentations), each over the same ``B`` instances.
    time_s : float
        Total wall time of the method.
    reference : numpy.ndarray, optional
        ``(B,)`` reference lengths (``nan`` where the reference found nothing) for the gap.
    """
    if not checks:
        raise ValueError("checks: expected at least one TourCheck")
    feasible = np.stack([c.feasible for c in checks])
    best = best_feasible(checks)
    solved = np.isfinite(best)
    obj = float(best[solved].mean()) if solved.any() else float("nan")
    gap = float("nan")
    if reference is not None:
        both = solved & np.isfinite(reference)
        if both.any():
            gap = float((100.0 * (best[both] / reference[both] - 1.0)).mean())
    return TableRow(method, 100.0 * float(1.0 - feasible.mean()), 100.0 * float(1.0 - solved.mean()),
                    obj, gap, float(time_s), int(feasible.shape[1]))
