"""The trusted checker and scorer of the ``matching`` task. numpy, and scipy when scoring.

A solution is, per instance, the server of every request in arrival order. It is valid when
it has one integer per request, every integer names a server and no server is used twice.
Its cost is recomputed here from this process's own instances and compared with the exact
optimum (``linear_sum_assignment``); nothing the program reports is used.
"""

from __future__ import annotations

import numpy as np


def check_assignment(assignment: object, n_requests: int, n_servers: int) -> tuple[np.ndarray | None, str | None]:
    """Return ``(array, None)`` for a valid matching, else ``(None, why)``."""
    if not isinstance(assignment, list | tuple):
        return None, f"expected a list of {n_requests} server indices, got {type(assignment).__name__}"
    if len(assignment) != n_requests:
        return None, f"{len(assignment)} assignments, expected {n_requests} (one per request)"
    if not all(type(v) is int for v in assignment):
        bad = next(v for v in assignment if type(v) is not int)
        return None, f"server indices must be integers, got {bad!r}"
    arr = np.asarray(assignment, dtype=np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n_servers):
        return None, f"server index out of range [0, {n_servers})"
    counts = np.bincount(arr, minlength=n_servers)
    if counts.max(initial=0) > 1:
        return None, f"server {int(np.argmax(counts))} is matched to more than one request"
    return arr, None


def gap_pct(cost: np.ndarray, assignment: np.ndarray, opt: float) -> float:
    """``100 * (cost of assignment / opt - 1)``: % above the optimum (0 when opt is 0 and so
    is the cost)."""
    total = float(cost[np.arange(len(assignment)), assignment].sum())
    if opt <= 0:
        return 0.0 if total <= 0 else float("inf")
    return 100.0 * (total / opt - 1.0)
