"""Trusted references for incremental matching: the exact optimum, POT's cross-check, greedy
and a quadtree-style hierarchical greedy.

* :func:`opt_cost` / :func:`opt_assignment`: the minimum-cost matching of the requests so far
  to the servers, by ``scipy.optimize.linear_sum_assignment`` on the rectangular
  ``requests x servers`` matrix (rows <= columns). What "cost / OPT" divides by.
* :func:`emd_cost`: the same optimum by POT's network simplex (``ot.emd``), a cross-check;
  with fewer requests than servers, zero-cost dummy requests balance the masses.
* :func:`greedy`: each arriving request takes the nearest free server, irrevocably.
* :func:`quadtree_greedy`: each arriving request climbs a randomly shifted quadtree from its
  own cell to the smallest cell that still holds a free server and takes the nearest free
  server in that cell (the hierarchical greedy behind the HST-based online matching of
  Meyerson, Nanavati and Poplawski [1]_; the paper's QuadTree baseline). 2-D only.

References
----------
.. [1] A. Meyerson, A. Nanavati and L. Poplawski, "Randomized online algorithms for minimum
   metric bipartite matching", SODA 2006.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from optiforge import validation
from optiforge.extras import missing_extra


def _check_cost(cost: np.ndarray, name: str = "cost") -> np.ndarray:
    c = np.asarray(cost, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] > c.shape[1] or c.shape[0] < 1:
        raise ValueError(f"{name}: expected a (requests, servers) matrix with requests <= servers, got shape {c.shape}")
    if not np.all(np.isfinite(c)) or c.min() < 0:
        raise ValueError(f"{name}: distances must be finite and non-negative")
    return c


def opt_assignment(cost: np.ndarray) -> np.ndarray:
    """The server of each request in a minimum-cost matching (``linear_sum_assignment``)."""
    from scipy.optimize import linear_sum_assignment

    c = _check_cost(cost)
    rows, cols = linear_sum_assignment(c)
    out = np.empty(c.shape[0], dtype=np.int64)
    out[rows] = cols
    return out


def opt_cost(cost: np.ndarray) -> float:
    """Cost of the minimum-cost matching of every request (row) to a distinct server."""
    c = np.asarray(cost, dtype=np.float64)
    a = opt_assignment(c)
    return float(c[np.arange(len(a)), a].sum())


def emd_cost(cost: np.ndarray) -> float:
    """The same optimum by POT's exact optimal transport (``ot.emd``), for cross-checking.

    Raises
    ------
    MissingExtraError
        If POT is not installed (``pip install 'optiforge[matching]'``).
    """
    try:
        import ot
    except ImportError as exc:
        raise missing_extra("matching", "the POT cross-check", "ot") from exc
    c = _check_cost(cost)
    r, s = c.shape
    if r < s:  # dummy requests at cost 0 take the servers the real ones leave
        c = np.vstack([c, np.zeros((s - r, s))])
    plan = ot.emd(np.ones(s), np.ones(s), c)
    return float((plan[:r] * c[:r]).sum())


def matching_cost(cost: np.ndarray, assignment: np.ndarray) -> float:
    """Total distance of ``assignment`` (server of each request, arrival order)."""
    a = np.asarray(assignment, dtype=np.int64)
    return float(np.asarray(cost)[np.arange(len(a)), a].sum())


def greedy_steps(cost: np.ndarray) -> Iterator[int]:
    """Online greedy, one request at a time: an iterator over the nearest free server of each
    request in turn (lowest index on ties)."""
    return _greedy(_check_cost(cost))


def _greedy(c: np.ndarray) -> Iterator[int]:
    free = np.ones(c.shape[1], dtype=bool)
    for row in c:
        j = int(np.argmin(np.where(free, row, np.inf)))
        free[j] = False
        yield j


def greedy(cost: np.ndarray) -> np.ndarray:
    """Online greedy: the server each request takes (see :func:`greedy_steps`)."""
    return np.fromiter(greedy_steps(cost), dtype=np.int64)


def quadtree_greedy(servers: np.ndarray, requests: np.ndarray, cost: np.ndarray, seed: int = 0) -> np.ndarray:
    """The server each request takes under :func:`quadtree_steps`."""
    return np.fromiter(quadtree_steps(servers, requests, cost, seed), dtype=np.int64)


def quadtree_steps(servers: np.ndarray, requests: np.ndarray, cost: np.ndarray,
                   seed: int = 0) -> Iterator[int]:
    """Online hierarchical greedy on a randomly shifted quadtree over 2-D points (a generator:
    the server of each request, as it arrives).

    Parameters
    ----------
    servers, requests : numpy.ndarray
        ``(S, 2)`` and ``(R, 2)`` points (requests in arrival order).
    cost : numpy.ndarray
        ``(R, S)`` distances used to pick the nearest free server inside the chosen cell.
    seed : int
        Seed of the random shift of the grid.

    Yields
    ------
    int
        The server of each request in turn.

    Raises
    ------
    ValueError
        If the points are not 2-D.
    """
    servers = np.asarray(servers, dtype=np.float64)
    requests = np.asarray(requests, dtype=np.float64)
    if servers.ndim != 2 or servers.shape[1] != 2 or requests.ndim != 2 or requests.shape[1] != 2:
        raise ValueError("quadtree: needs 2-D points (the uniform and taxi data)")
    c = _check_cost(cost)
    seed = validation.integer(seed, "seed", minimum=0)
    return _quadtree(servers, requests, c, seed)


def _quadtree(servers: np.ndarray, requests: np.ndarray, c: np.ndarray, seed: int) -> Iterator[int]:
    rng = np.random.default_rng([seed, 7])
    pts = np.vstack([servers, requests])
    lo = pts.min(0)
    side = float((pts.max(0) - lo).max()) * 2.0 + 1e-12  # a doubled box leaves room for the shift
    origin = lo - rng.random(2) * side / 2.0
    depth = max(1, int(np.ceil(np.log2(max(len(servers), 2)) / 2)) + 2)

    def cells(p: np.ndarray, k: int) -> np.ndarray:
        g = np.floor((p - origin) / (side / 2**k)).astype(np.int64)
        return g[:, 0] * (2**k) + g[:, 1]

    # members[k][cell] = servers in that cell on level k (level 0 is the root: one cell).
    members = []
    for k in range(depth + 1):
        ids = cells(servers, k)
        order = np.argsort(ids, kind="stable")
        keys, starts = np.unique(ids[order], return_index=True)
        bounds = np.append(starts, len(order))
        members.append({int(key): order[bounds[i]:bounds[i + 1]] for i, key in enumerate(keys)})
    free_count = [{key: len(v) for key, v in m.items()} for m in members]
    server_cells = [cells(servers, k) for k in range(depth + 1)]
    free = np.ones(len(servers), dtype=bool)
    for i, p in enumerate(requests):
        for k in range(depth, -1, -1):
            key = int(cells(p[None], k)[0])
            if free_count[k].get(key, 0) > 0:
                cand = members[k][key]
                cand = cand[free[cand]]
                j = int(cand[np.argmin(c[i, cand])])
                break
        free[j] = False
        for k in range(depth + 1):
            free_count[k][int(server_cells[k][j])] -= 1
        yield j
