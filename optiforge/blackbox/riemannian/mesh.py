"""Mesh vertices inside their cells: a triangulated grid parameterised by barycentric weights.

Each interior vertex of an ``n`` x ``n`` grid (every square split along the same diagonal, so
an interior vertex has 6 neighbours) is a convex combination of its neighbours,
``x_i = sum_j w_ij x_j`` with ``w_i`` in the open 5-simplex, and the boundary vertices stay on
the unit square. Solving these equations places every vertex; by Tutte's theorem (Floater's
version for arbitrary positive weights) the result is a valid triangulation, with no inverted
or degenerate triangle, for *every* choice of positive weights. So the parameter space of valid
meshes contains the product of open simplices (one per interior vertex), the setting of the mesh
experiment of Ma & Huang: the structure-preserving metric keeps every weight positive and so every
mesh valid, while the inherited Euclidean metric lets weights turn negative and meshes fold.

References
----------
.. [1] W. T. Tutte, "How to draw a graph", Proc. London Math. Soc. 13 (1963).
.. [2] M. S. Floater, "Parametrization and smooth approximation of surface triangulations",
   CAGD 14 (1997).
.. [3] S. Ma and H. Huang, arXiv:2601.08039 (the mesh experiment).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from optiforge.blackbox.riemannian.manifolds import ConformalBarrier, Simplex

NEIGHBOURS = ((1, 0), (0, 1), (-1, 1), (-1, 0), (0, -1), (1, -1))
"""Offsets of a vertex's 6 neighbours (squares split along the (1,0)-(0,1) diagonal)."""


class TutteMesh:
    """An ``n`` x ``n`` vertex grid on the unit square with Tutte-embedded interior vertices.

    Parameters
    ----------
    n : int
        Vertices per side (the paper's coarse grid: 20).
    """

    def __init__(self, n: int) -> None:
        if n < 3:
            raise ValueError(f"n: need at least 3 vertices per side, got {n}")
        self.n = n
        idx = np.arange(n * n).reshape(n, n)  # idx[i, j]: vertex at (i, j), i along x
        g = np.linspace(0.0, 1.0, n)
        self.grid = np.stack(np.meshgrid(g, g, indexing="ij"), axis=-1).reshape(-1, 2)
        interior = [(i, j) for i in range(1, n - 1) for j in range(1, n - 1)]
        self.interior = np.array([idx[i, j] for i, j in interior])
        self.boundary = np.setdiff1d(np.arange(n * n), self.interior)
        self.neighbours = np.array([[idx[i + di, j + dj] for di, dj in NEIGHBOURS] for i, j in interior])
        # The sparse pattern of the Tutte system, built once: slot k of interior vertex r
        # couples to interior vertex col (or to a fixed boundary vertex).
        slot_in, rows, cols, slot_bd, bd_rows, bd_verts = [], [], [], [], [], []
        pos = {int(v): k for k, v in enumerate(self.interior)}
        for r, nb in enumerate(self.neighbours):
            for k, u in enumerate(nb):
                if int(u) in pos:
                    slot_in.append(r * 6 + k)
                    rows.append(r)
                    cols.append(pos[int(u)])
                else:
                    slot_bd.append(r * 6 + k)
                    bd_rows.append(r)
                    bd_verts.append(int(u))
        m = len(self.interior)
        self._slot_in, self._slot_bd = np.array(slot_in), np.array(slot_bd)
        self._rows = np.concatenate([np.arange(m), rows]).astype(int)
        self._cols = np.concatenate([np.arange(m), cols]).astype(int)
        self._bd_rows, self._bd_pts = np.array(bd_rows), self.grid[np.array(bd_verts)]
        tris = []
        for i in range(n - 1):
            for j in range(n - 1):
                a, b, c, d = idx[i, j], idx[i + 1, j], idx[i, j + 1], idx[i + 1, j + 1]
                tris += [(a, b, c), (b, d, c)]  # counter-clockwise
        self.triangles = np.array(tris)

    @property
    def m(self) -> int:
        """Interior vertices (simplices of the parameter manifold)."""
        return len(self.interior)

    def manifold(self, barrier: ConformalBarrier | None, **kwargs) -> Simplex:
        """The parameter manifold: ``m`` open 5-simplices (Euclidean, or with ``barrier``)."""
        return Simplex(6, m=self.m, barrier=barrier, **kwargs)

    def uniform_weights(self) -> np.ndarray:
        """Weights 1/6 everywhere: the regular grid."""
        return np.full(self.m * 6, 1.0 / 6.0)

    def positions(self, weights: np.ndarray) -> np.ndarray:
        """Vertex positions ``(n*n, 2)`` for flat weights ``(m*6,)`` (a sparse linear solve)."""
        w = np.asarray(weights, dtype=float).reshape(-1)
        rhs = np.zeros((self.m, 2))
        np.add.at(rhs, self._bd_rows, w[self._slot_bd][:, None] * self._bd_pts)
        A = sp.csc_matrix((np.concatenate([np.ones(self.m), -w[self._slot_in]]), (self._rows, self._cols)),
                          shape=(self.m, self.m))
        X = self.grid.copy()
        try:
            X[self.interior] = spla.splu(A).solve(rhs)
        except RuntimeError:  # a singular system (weights far outside the simplex)
            X[self.interior] = np.nan
        return X

    def signed_areas(self, X: np.ndarray) -> np.ndarray:
        a, b, c = X[self.triangles[:, 0]], X[self.triangles[:, 1]], X[self.triangles[:, 2]]
        return 0.5 * ((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0]))

    def is_valid(self, X: np.ndarray) -> bool:
        """Every triangle positively oriented (no fold, no degenerate triangle)."""
        return bool(np.all(np.isfinite(X)) and np.all(self.signed_areas(X) > 1e-12))


# A degree-5, 7-point rule on the reference triangle (Strang & Fix): barycentric points, weights.
_A1, _B1, _A2, _B2 = 0.0597158717, 0.4701420641, 0.7974269853, 0.1012865073
QUAD_POINTS = np.array([[1 / 3, 1 / 3, 1 / 3], [_A1, _B1, _B1], [_B1, _A1, _B1], [_B1, _B1, _A1],
                        [_A2, _B2, _B2], [_B2, _A2, _B2], [_B2, _B2, _A2]])
QUAD_WEIGHTS = np.array([0.225] + [0.1323941527] * 3 + [0.1259391805] * 3)


def interpolation_error(mesh: TutteMesh, X: np.ndarray, f) -> float:
    """``int (f - I_h f)^2`` over the mesh's triangles, by the 7-point rule on each.

    ``I_h f`` is the piecewise-linear interpolant of ``f`` at the vertices. Defined for folded
    meshes too (it sums over triangles with their absolute areas), where it no longer equals the
    error over the square.
    """
    if not np.all(np.isfinite(X)):
        return float("inf")
    P = X[mesh.triangles]  # (T, 3, 2)
    vals = f(X[:, 0], X[:, 1])[mesh.triangles]  # (T, 3)
    Q = np.einsum("qk,tkd->tqd", QUAD_POINTS, P)  # (T, 7, 2)
    err = f(Q[..., 0], Q[..., 1]) - vals @ QUAD_POINTS.T
    return float(np.sum(np.abs(mesh.signed_areas(X)) * (err**2 @ QUAD_WEIGHTS)))


def interpolate_on_grid(mesh: TutteMesh, X: np.ndarray, values: np.ndarray, G: int) -> tuple[np.ndarray, np.ndarray]:
    """The piecewise-linear interpolant of vertex ``values`` at the centres of a ``G`` x ``G`` grid.

    Works for folded meshes too (each grid point takes the first triangle containing it).

    Returns
    -------
    (interp, covered) : ndarray (G*G,), ndarray of bool (G*G,)
    """
    tri = mesh.triangles
    P = X[tri]  # (T, 3, 2)
    if not np.all(np.isfinite(P)):
        return np.zeros(G * G), np.zeros(G * G, dtype=bool)
    lo = np.clip(np.floor(P.min(axis=1) * G - 0.5).astype(int), 0, G - 1)
    hi = np.clip(np.ceil(P.max(axis=1) * G - 0.5).astype(int), 0, G - 1)
    wx, wy = hi[:, 0] - lo[:, 0] + 1, hi[:, 1] - lo[:, 1] + 1
    count = wx * wy
    t = np.repeat(np.arange(len(tri)), count)
    local = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    gi = lo[t, 0] + local % wx[t]
    gj = lo[t, 1] + local // wx[t]
    px, py = (gi + 0.5) / G, (gj + 0.5) / G
    a, b, c = P[t, 0], P[t, 1], P[t, 2]
    det = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    safe = np.where(np.abs(det) > 1e-300, det, 1.0)
    l1 = ((px - a[:, 0]) * (c[:, 1] - a[:, 1]) - (py - a[:, 1]) * (c[:, 0] - a[:, 0])) / safe
    l2 = ((b[:, 0] - a[:, 0]) * (py - a[:, 1]) - (b[:, 1] - a[:, 1]) * (px - a[:, 0])) / safe
    l0 = 1.0 - l1 - l2
    eps = -1e-12
    inside = (np.abs(det) > 1e-300) & (l0 >= eps) & (l1 >= eps) & (l2 >= eps)
    flat = (gi * G + gj)[inside]
    v = values[tri[t[inside]]]
    est = l0[inside] * v[:, 0] + l1[inside] * v[:, 1] + l2[inside] * v[:, 2]
    out = np.zeros(G * G)
    covered = np.zeros(G * G, dtype=bool)
    order = np.argsort(flat, kind="stable")  # the first containing triangle wins
    flat, est = flat[order], est[order]
    first = np.ones(len(flat), dtype=bool)
    first[1:] = flat[1:] != flat[:-1]
    out[flat[first]] = est[first]
    covered[flat[first]] = True
    return out, covered
