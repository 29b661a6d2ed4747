"""Trusted TSP reference tours: nearest neighbour + 2-opt + Or-opt, and exact Held-Karp.

The reference tour that the ``tsp`` task measures gaps against is a local optimum of
both the 2-opt [1]_ and the Or-opt [2]_ neighbourhoods, reached by best-improvement
descent from several nearest-neighbour starts; each move search is one vectorised
numpy evaluation of all candidate moves (O(n^2) per move). Held-Karp dynamic
programming [3]_ (O(2^n n^2)) gives exact optima on tiny instances to check it.

References
----------
.. [1] G. A. Croes, "A method for solving traveling-salesman problems", Operations
   Research 6(6), 791-812 (1958).
.. [2] I. Or, "Traveling salesman-type combinatorial problems and their relation to the
   logistics of regional blood banking", PhD thesis, Northwestern University (1976).
.. [3] M. Held and R. M. Karp, "A dynamic programming approach to sequencing problems",
   J. SIAM 10(1), 196-210 (1962).
"""

from __future__ import annotations

import numpy as np

_EPS = 1e-10


def distance_matrix(coords: np.ndarray) -> np.ndarray:
    """Euclidean distance matrix of ``(n, 2)`` coordinates."""
    diff = coords[:, None, :] - coords[None, :, :]
    return np.sqrt((diff**2).sum(-1))


def tour_length(dist: np.ndarray, tour: np.ndarray) -> float:
    """Length of the closed tour visiting ``tour`` in order and returning to its first node."""
    tour = np.asarray(tour)
    return float(dist[tour, np.roll(tour, -1)].sum())


def nearest_neighbor_tour(dist: np.ndarray, start: int = 0) -> np.ndarray:
    """Greedy nearest-neighbour tour from ``start`` (ties go to the lowest node id)."""
    n = dist.shape[0]
    visited = np.zeros(n, dtype=bool)
    tour = np.empty(n, dtype=np.int64)
    tour[0], visited[start] = start, True
    for k in range(1, n):
        row = np.where(visited, np.inf, dist[tour[k - 1]])
        tour[k] = int(np.argmin(row))
        visited[tour[k]] = True
    return tour


def two_opt(dist: np.ndarray, tour: np.ndarray) -> tuple[np.ndarray, bool]:
    """Best-improvement 2-opt descent. Returns ``(tour, improved_at_least_once)``."""
    tour = tour.copy()
    n = tour.shape[0]
    if n < 4:
        return tour, False
    # Pairs (i, j) with j >= i + 2, excluding the pair of edges that share node tour[0].
    i_idx, j_idx = np.triu_indices(n, k=2)
    keep = ~((i_idx == 0) & (j_idx == n - 1))
    i_idx, j_idx = i_idx[keep], j_idx[keep]
    improved = False
    while True:
        a, b = tour, np.roll(tour, -1)
        delta = (dist[a[i_idx], a[j_idx]] + dist[b[i_idx], b[j_idx]]
                 - dist[a[i_idx], b[i_idx]] - dist[a[j_idx], b[j_idx]])
        k = int(np.argmin(delta))
        if delta[k] >= -_EPS:
            return tour, improved
        i, j = i_idx[k], j_idx[k]
        tour[i + 1 : j + 1] = tour[i + 1 : j + 1][::-1]
        improved = True


def or_opt(dist: np.ndarray, tour: np.ndarray, max_segment: int = 3) -> tuple[np.ndarray, bool]:
    """One best-improvement Or-opt move: relocate a segment of 1..``max_segment`` nodes
    (optionally reversed) between two other adjacent nodes. Returns ``(tour, improved)``."""
    n = tour.shape[0]
    best = (-_EPS, None)
    pos = np.arange(n)
    for seg in range(1, min(max_segment, n - 3) + 1):
        first, last = tour, np.roll(tour, -(seg - 1))  # segment k = positions k..k+seg-1 (cyclic)
        prev, nxt = np.roll(tour, 1), np.roll(tour, -seg)
        removal_gain = dist[prev, first] + dist[last, nxt] - dist[prev, nxt]
        u, v = tour, np.roll(tour, -1)  # candidate edge p = (tour[p], tour[p+1])
        base = -dist[u, v][None, :] - removal_gain[:, None]
        fwd = base + dist[u[None, :], first[:, None]] + dist[last[:, None], v[None, :]]
        rev = base + dist[u[None, :], last[:, None]] + dist[first[:, None], v[None, :]]
        # Edge p touches the segment (or its neighbours' joining edge) when p is in [k-1, k+seg-1].
        offset = (pos[None, :] - pos[:, None]) % n
        invalid = (offset >= n - 1) | (offset <= seg - 1)
        for reverse, cand in ((False, fwd), (True, rev)):
            cand = np.where(invalid, np.inf, cand)
            flat = int(np.argmin(cand))
            if cand.flat[flat] < best[0]:
                best = (float(cand.flat[flat]), (seg, reverse, *divmod(flat, n)))
    if best[1] is None:
        return tour, False
    seg, reverse, k, p = best[1]
    rolled = np.roll(tour, -k)  # segment now at the front
    segment, rest = rolled[:seg], rolled[seg:]
    if reverse:
        segment = segment[::-1]
    anchor = int(np.flatnonzero(rest == tour[p])[0])
    return np.concatenate([rest[: anchor + 1], segment, rest[anchor + 1 :]]), True


def local_search(dist: np.ndarray, tour: np.ndarray) -> np.ndarray:
    """Alternate 2-opt descent and Or-opt moves until neither improves the tour."""
    tour = np.asarray(tour, dtype=np.int64)
    while True:
        tour, _ = two_opt(dist, tour)
        tour, moved = or_opt(dist, tour)
        if not moved:
            return tour


def reference_tour(dist: np.ndarray, starts: int = 4) -> np.ndarray:
    """Best 2-opt + Or-opt local optimum from ``starts`` nearest-neighbour starts.

    Parameters
    ----------
    dist : numpy.ndarray
        Symmetric ``(n, n)`` distance matrix.
    starts : int
        Number of start nodes for nearest neighbour (nodes ``0, n/starts, 2n/starts, ...``).

    Returns
    -------
    numpy.ndarray
        A tour (permutation of ``0..n-1``).
    """
    n = dist.shape[0]
    if n <= 3:
        return np.arange(n)
    best, best_len = None, np.inf
    for s in np.unique(np.linspace(0, n, num=starts, endpoint=False).astype(int)):
        t = local_search(dist, nearest_neighbor_tour(dist, int(s)))
        length = tour_length(dist, t)
        if length < best_len - _EPS:
            best, best_len = t, length
    return best


def held_karp(dist: np.ndarray) -> tuple[float, np.ndarray]:
    """Exact optimal tour by Held-Karp dynamic programming (use for n <= ~13).

    Returns ``(length, tour)`` with the tour starting at node 0.
    """
    n = dist.shape[0]
    if n <= 3:
        t = np.arange(n)
        return tour_length(dist, t), t
    m = n - 1  # subsets of nodes 1..n-1
    full = 1 << m
    cost = np.full((full, m), np.inf)
    parent = np.full((full, m), -1, dtype=np.int64)
    cost[1 << np.arange(m), np.arange(m)] = dist[0, 1:]
    d = dist[1:, 1:]
    for subset in range(1, full):
        row = cost[subset]
        if not np.isfinite(row).any():
            continue
        members = np.flatnonzero([(subset >> j) & 1 for j in range(m)])
        for j in range(m):
            if (subset >> j) & 1:
                continue
            cand = row[members] + d[members, j]
            b = int(np.argmin(cand))
            nxt = subset | (1 << j)
            if cand[b] < cost[nxt, j]:
                cost[nxt, j], parent[nxt, j] = cand[b], members[b]
    last = cost[full - 1] + dist[1:, 0]
    j = int(np.argmin(last))
    length = float(last[j])
    path, subset = [], full - 1
    while j >= 0:
        path.append(j + 1)
        subset, j = subset & ~(1 << j), int(parent[subset, j])
    return length, np.array([0, *path[::-1]], dtype=np.int64)
