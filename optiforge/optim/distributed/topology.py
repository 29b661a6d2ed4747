"""Who talks to whom in one round of decentralized training: mixing matrices and their cost.

A topology turns a round into a mixing matrix ``W`` (``m x m``, symmetric, doubly stochastic):
after the round agent ``i`` holds ``sum_j W_ij theta_j``. Being doubly stochastic, every ``W``
keeps the agents' average unchanged, so the single global merge at the end (the average) sees
exactly the iterate that the decentralized-SGD theory of Zhu et al. (2026) analyses.

Each topology also says how many parameters its round puts on the wire (``floats_sent``):
point-to-point mixing sends one model per non-zero off-diagonal entry of ``W`` (agent ``i``
must receive ``theta_j``); the all-reduce is costed as a ring all-reduce, ``2 (m - 1) P``
floats in all, the ``O(2 m P)`` of the paper's cost model.

References
----------
Zhu, Zhang, Wang, Zhou & Wang, "On the surprising effectiveness of a single global merging in
decentralized learning", ICLR 2026 (arXiv 2507.06542): each round an agent gossips with one
random peer with probability ``R`` (``R = 0.2`` in the paper); full all-reduce windows; a final
global merge.

Metropolis–Hastings weights (Xiao & Boyd, "Fast linear iterations for distributed averaging",
2004): ``W_ij = 1 / (1 + max(deg_i, deg_j))`` on each edge, the rest on the diagonal.

Deviation: in the paper's simulator an agent pulls its peer's model (a row-stochastic step).
Here a gossip edge is an exchange, and overlapping edges (two agents picking the same peer)
get Metropolis weights, which keeps ``W`` doubly stochastic; an edge between two agents that
no one else picked is exactly the pairwise average ``(theta_i + theta_j) / 2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from optiforge import validation as check


@runtime_checkable
class Topology(Protocol):
    """A round's communication: a mixing matrix (``None``: nobody talks) and its cost."""

    name: str

    def matrix(self, m: int, rng: np.random.Generator) -> np.ndarray | None:
        """The mixing matrix of one round among ``m`` agents (may draw from ``rng``)."""
        ...

    def floats_sent(self, w: np.ndarray | None, n_params: int) -> int:
        """Parameters put on the wire by a round that mixed with ``w``."""
        ...


def metropolis(adjacency: np.ndarray) -> np.ndarray:
    """Metropolis–Hastings mixing matrix of an undirected graph (symmetric, doubly stochastic)."""
    adj = np.asarray(adjacency, dtype=bool)
    adj = adj & ~np.eye(len(adj), dtype=bool)
    deg = adj.sum(1)
    w = np.where(adj, 1.0 / (1.0 + np.maximum.outer(deg, deg)), 0.0)
    w[np.diag_indices_from(w)] = 1.0 - w.sum(1)
    return w


def _point_to_point_floats(w: np.ndarray | None, n_params: int) -> int:
    if w is None:
        return 0
    off = w.copy()
    np.fill_diagonal(off, 0.0)
    return int(np.count_nonzero(off)) * n_params


@dataclass(frozen=True)
class NoCommunication:
    """Every agent trains alone this round."""

    name: str = "none"

    def matrix(self, m: int, rng: np.random.Generator) -> np.ndarray | None:
        return None

    def floats_sent(self, w: np.ndarray | None, n_params: int) -> int:
        return 0


@dataclass(frozen=True)
class Gossip:
    """Each agent, with probability ``r``, picks one peer uniformly among the others and the
    two exchange models (Zhu et al.'s random gossip; Metropolis weights where picks overlap)."""

    r: float = 0.2
    name: str = "gossip"

    def __post_init__(self) -> None:
        check.unit(self.r, "r", closed=True)

    def picks(self, m: int, rng: np.random.Generator) -> np.ndarray:
        """Each agent's chosen peer this round, ``-1`` for agents that stay silent."""
        active = rng.random(m) < self.r
        # A peer among the other m - 1 agents: draw in [0, m-1) and skip over oneself.
        peer = rng.integers(0, max(m - 1, 1), size=m)
        peer = peer + (peer >= np.arange(m))
        return np.where(active & (m > 1), peer, -1)

    def edges(self, m: int, rng: np.random.Generator) -> np.ndarray:
        """The round's undirected edges as a boolean adjacency matrix."""
        peer = self.picks(m, rng)
        src = np.flatnonzero(peer >= 0)
        adj = np.zeros((m, m), dtype=bool)
        adj[src, peer[src]] = True
        return adj | adj.T

    def matrix(self, m: int, rng: np.random.Generator) -> np.ndarray | None:
        adj = self.edges(m, rng)
        return metropolis(adj) if adj.any() else None

    def floats_sent(self, w: np.ndarray | None, n_params: int) -> int:
        return _point_to_point_floats(w, n_params)


@dataclass(frozen=True)
class Ring:
    """Each agent averages with its two ring neighbours (weights 1/3 each for ``m >= 3``)."""

    name: str = "ring"

    def matrix(self, m: int, rng: np.random.Generator) -> np.ndarray | None:
        if m == 1:
            return None
        i = np.arange(m)
        adj = np.zeros((m, m), dtype=bool)
        adj[i, (i + 1) % m] = adj[(i + 1) % m, i] = True
        return metropolis(adj)

    def floats_sent(self, w: np.ndarray | None, n_params: int) -> int:
        return _point_to_point_floats(w, n_params)


@dataclass(frozen=True)
class Graph:
    """A fixed undirected graph (``adjacency``: ``m x m``, symmetric), Metropolis weights."""

    adjacency: tuple[tuple[bool, ...], ...]
    name: str = "graph"

    @classmethod
    def from_adjacency(cls, adjacency: np.ndarray | list[list[int]]) -> Graph:
        """Validate a square symmetric 0/1 adjacency matrix (the diagonal is ignored)."""
        adj = np.asarray(adjacency)
        if adj.ndim != 2 or adj.shape[0] != adj.shape[1] or adj.shape[0] < 1:
            raise ValueError(f"adjacency: expected a square matrix, got shape {adj.shape}")
        if not np.isin(adj, (0, 1)).all():
            raise ValueError("adjacency: entries must be 0 or 1")
        if not (adj == adj.T).all():
            raise ValueError("adjacency: must be symmetric (an undirected graph)")
        return cls(tuple(tuple(bool(v) for v in row) for row in adj))

    def matrix(self, m: int, rng: np.random.Generator) -> np.ndarray | None:
        adj = np.asarray(self.adjacency, dtype=bool)
        if len(adj) != m:
            raise ValueError(f"adjacency: has {len(adj)} nodes for {m} agents")
        return metropolis(adj)

    def floats_sent(self, w: np.ndarray | None, n_params: int) -> int:
        return _point_to_point_floats(w, n_params)


@dataclass(frozen=True)
class AllReduce:
    """Every agent gets the exact average (``W = 11^T / m``), costed as a ring all-reduce."""

    name: str = "allreduce"

    def matrix(self, m: int, rng: np.random.Generator) -> np.ndarray | None:
        return np.full((m, m), 1.0 / m)

    def floats_sent(self, w: np.ndarray | None, n_params: int) -> int:
        return 0 if w is None else 2 * (len(w) - 1) * n_params
