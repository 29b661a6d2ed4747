"""KD-tree partition of the unit cube into leaf regions (HOLLM's "meta-arms").

HOLLM refits a KD-tree on all evaluated points every iteration and treats its leaves as the
arms of a bandit. The tree is scipy's ``KDTree(leafsize=m_t, balanced_tree=False)``: each
node splits the dimension of largest data spread at the midpoint of the data's extent
(sliding-midpoint rule), so leaves hold at most ``m_t`` points and the leaf boxes tile the
cube.

References
----------
.. [1] A. Schwanke, L. Ivanov, D. Salinas, F. Ferreira, A. Klein, F. Hutter, A. Zela,
   "Improving LLM-based Global Optimization with Search Space Partitioning",
   arXiv:2505.21372 (ICLR 2026), Sec. 3 (adaptive KD-tree partitioning).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree


@dataclass
class Region:
    """One leaf: the box ``[lo, hi]`` (unit-cube coordinates) and the points inside it."""

    lo: np.ndarray
    hi: np.ndarray
    indices: np.ndarray

    @property
    def volume_score(self) -> float:
        """Geometric mean side length ``(prod(hi - lo))^(1/d)`` (the paper's V)."""
        sides = np.clip(self.hi - self.lo, 0.0, None)
        return (
            float(np.exp(np.mean(np.log(np.maximum(sides, 1e-300))))) if np.all(sides > 0) else 0.0
        )

    def contains(self, x: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Row mask of the points of ``x`` inside the box (with a tiny float tolerance)."""
        x = np.atleast_2d(x)
        return np.all((x >= self.lo - tol) & (x <= self.hi + tol), axis=1)


def leaf_size(t: int, dim: int, m0: float | None = None, lam: float = 0.0) -> int:
    """Leaf capacity ``m_t = m0 + ceil(lam * log(1 + t))`` (defaults ``m0 = 0.5 d``, ``lam = 0``).

    Parameters
    ----------
    t : int
        Number of evaluations so far.
    dim : int
        Dimension ``d`` of the space.
    m0 : float, optional
        Base leaf size; ``None`` means ``0.5 * d`` (the public code's ``use_dimension_scaling``).
    lam : float
        Growth rate of the leaf size with ``t``.

    Returns
    -------
    int
        At least 1 (scipy needs a positive leaf size).
    """
    base = 0.5 * dim if m0 is None else float(m0)
    return max(1, int(base) + int(math.ceil(lam * math.log1p(max(t, 0)))))


def kd_partition(points: np.ndarray, leafsize: int) -> list[Region]:
    """Partition ``[0, 1]^d`` by a KD-tree fitted on ``points`` (shape ``(n, d)``, n >= 1).

    Returns
    -------
    list of Region
        Leaves in tree order; their boxes tile the cube and each holds >= 1 point.
    """
    points = np.asarray(points, dtype=float)
    if points.ndim != 2 or points.shape[0] == 0:
        raise ValueError(f"points: expected a non-empty (n, d) array, got shape {points.shape}")
    d = points.shape[1]
    tree = cKDTree(points, leafsize=max(1, int(leafsize)), balanced_tree=False)
    regions: list[Region] = []
    stack = [(tree.tree, np.zeros(d), np.ones(d))]
    while stack:
        node, lo, hi = stack.pop()
        if node.split_dim < 0 or node.lesser is None:
            regions.append(Region(lo, hi, np.asarray(node.indices, dtype=int)))
            continue
        dim = node.split_dim
        # Python min/max, not np.clip: a scalar np.clip costs microseconds on each of ~300 nodes.
        split = min(max(float(node.split), float(lo[dim])), float(hi[dim]))
        hi_left, lo_right = hi.copy(), lo.copy()
        hi_left[dim] = split
        lo_right[dim] = split
        # Push right first so leaves come out left-to-right (deterministic order).
        stack.append((node.greater, lo_right, hi))
        stack.append((node.lesser, lo, hi_left))
    return regions
