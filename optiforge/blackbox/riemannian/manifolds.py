"""Manifolds for zeroth-order Riemannian optimization, on flat numpy arrays.

Every manifold here works on points stored as 1-D arrays of its ambient coordinates (an spd
matrix is its ``n*n`` entries, row by row) and offers the method names of geoopt's
``Manifold`` (``projx``, ``proju``, ``retr``, ``inner``, ``random``), so a geoopt manifold
plugs in through :class:`GeooptManifold`. What zeroth-order methods need beyond geoopt is a
:class:`Frame`: an orthonormal (Euclidean) basis of the tangent space and the metric's Gram
matrix ``A_ij = g_p(E_i, E_j)`` in it, which is where the sampler of Alg. 1 works.

The structure-preserving metrics of Ma & Huang (Def. 2.5) are conformal, ``g' = h g``, with a
barrier ``h >= 1`` that blows up at the boundary of an incomplete domain (the open simplex,
and so a mesh node's cell in barycentric coordinates, and an open interval). See
:class:`ConformalBarrier`.

References
----------
.. [1] S. Ma and H. Huang, "Riemannian Zeroth-Order Gradient Estimation with
   Structure-Preserving Metrics for Geodesically Incomplete Manifolds", arXiv:2601.08039,
   ICLR 2026.
.. [2] K. Nomizu and H. Ozeki, "The existence of complete Riemannian metrics", Proc. AMS 12
   (1961).
.. [3] P.-A. Absil, R. Mahony and R. Sepulchre, "Optimization Algorithms on Matrix
   Manifolds", Princeton, 2008 (retractions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


# ---------------------------------------------------------------------------- frames
@dataclass(frozen=True)
class Block:
    """``B`` identical factors of a tangent frame.

    Attributes
    ----------
    basis : ndarray, shape (B, k, n)
        For each factor, ``k`` tangent vectors in its ``n`` ambient coordinates, orthonormal
        for the Euclidean inner product.
    metric : ndarray, shape (B, k, k)
        The Gram matrix ``g(E_i, E_j)`` of each factor's basis (symmetric positive definite).
    start : int
        Where the factors' coordinates begin in the flat point (factor ``b`` occupies
        ``start + b*n .. start + (b+1)*n``).
    """

    basis: np.ndarray
    metric: np.ndarray
    start: int

    @property
    def n_factors(self) -> int:
        return self.basis.shape[0]

    @property
    def k(self) -> int:
        return self.basis.shape[1]

    @property
    def n(self) -> int:
        return self.basis.shape[2]


class Frame:
    """A tangent space in coordinates: an orthonormal basis and the metric's Gram matrix.

    Tangent coordinates are one flat vector of length :attr:`dim` (the blocks' ``(B, k)``
    coordinates, concatenated); :meth:`ambient` turns them into a tangent vector of the
    manifold's flat ambient coordinates.
    """

    def __init__(self, blocks: Sequence[Block], size: int) -> None:
        self.blocks = list(blocks)
        self.size = int(size)
        self._eig: list[tuple[np.ndarray, np.ndarray]] | None = None

    @property
    def dim(self) -> int:
        return sum(b.n_factors * b.k for b in self.blocks)

    def _split(self, c: np.ndarray) -> list[np.ndarray]:
        out, i = [], 0
        for b in self.blocks:
            m = b.n_factors * b.k
            out.append(c[..., i:i + m].reshape(*c.shape[:-1], b.n_factors, b.k))
            i += m
        return out

    def ambient(self, c: np.ndarray) -> np.ndarray:
        """Tangent coordinates ``(..., dim)`` -> ambient tangent vectors ``(..., size)``."""
        c = np.asarray(c, dtype=float)
        u = np.zeros((*c.shape[:-1], self.size))
        for b, cb in zip(self.blocks, self._split(c), strict=True):
            ub = np.einsum("...bk,bkn->...bn", cb, b.basis)
            u[..., b.start:b.start + b.n_factors * b.n] = ub.reshape(*c.shape[:-1], -1)
        return u

    def coords(self, u: np.ndarray) -> np.ndarray:
        """Ambient vectors ``(..., size)`` -> coordinates of their tangent parts ``(..., dim)``."""
        u = np.asarray(u, dtype=float)
        parts = []
        for b in self.blocks:
            ub = u[..., b.start:b.start + b.n_factors * b.n].reshape(*u.shape[:-1], b.n_factors, b.n)
            parts.append(np.einsum("...bn,bkn->...bk", ub, b.basis).reshape(*u.shape[:-1], -1))
        return np.concatenate(parts, axis=-1)

    def apply_metric(self, c: np.ndarray) -> np.ndarray:
        """``A c`` (block by block)."""
        return np.concatenate([np.einsum("bij,...bj->...bi", b.metric, cb).reshape(*c.shape[:-1], -1)
                               for b, cb in zip(self.blocks, self._split(c), strict=True)], axis=-1)

    def solve_metric(self, c: np.ndarray) -> np.ndarray:
        """``A^{-1} c`` (raises the Riemannian gradient from a differential)."""
        return np.concatenate([np.linalg.solve(b.metric, cb[..., None])[..., 0].reshape(*c.shape[:-1], -1)
                               for b, cb in zip(self.blocks, self._split(c), strict=True)], axis=-1)

    def eig(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per block ``(eigenvalues (B, k), eigenvectors (B, k, k))`` of the Gram matrices."""
        if self._eig is None:
            self._eig = [np.linalg.eigh(b.metric) for b in self.blocks]
        return self._eig

    def eigenvalues(self) -> np.ndarray:
        """All eigenvalues, flat, in the coordinate order of the eigenbasis."""
        return np.concatenate([lam.reshape(-1) for lam, _ in self.eig()])

    def from_eigen(self, s: np.ndarray, power: float) -> np.ndarray:
        """``Q diag(lambda^power) s`` block by block: ``power=-1/2`` is Alg. 1's ``L s``."""
        out = []
        for (lam, Q), sb in zip(self.eig(), self._split(s), strict=True):
            out.append(np.einsum("bij,...bj->...bi", Q, sb * lam ** power).reshape(*s.shape[:-1], -1))
        return np.concatenate(out, axis=-1)


# ---------------------------------------------------------------------------- base
class RiemannianManifold:
    """Common operations of the manifolds below (points and tangent vectors are flat arrays).

    Subclasses define ``size`` (ambient coordinates), ``dim`` (intrinsic dimension),
    :meth:`frame`, :meth:`retr`, :meth:`proju`, :meth:`projx`, :meth:`random` and
    :meth:`belongs`. ``radius`` is the structure-preserving radius ``rho`` of Def. 2.5 (a):
    every perturbation of metric length ``< rho`` is valid (``inf``: any is).
    """

    size: int
    dim: int
    radius: float = math.inf

    def frame(self, x: np.ndarray) -> Frame:
        raise NotImplementedError

    def retr(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def proju(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.frame(x).ambient(self.frame(x).coords(u))

    def projx(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def random(self, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def belongs(self, x: np.ndarray) -> bool:
        raise NotImplementedError

    def inner(self, x: np.ndarray, u: np.ndarray, v: np.ndarray) -> float:
        """``g_x(u, v)`` for tangent vectors ``u``, ``v``."""
        fr = self.frame(x)
        return float(fr.coords(u) @ fr.apply_metric(fr.coords(v)))

    def norm(self, x: np.ndarray, u: np.ndarray) -> float:
        return math.sqrt(max(self.inner(x, u, u), 0.0))

    def egrad2rgrad(self, x: np.ndarray, egrad: np.ndarray) -> np.ndarray:
        """The Riemannian gradient from the ambient Euclidean gradient: ``A^{-1} E egrad``."""
        fr = self.frame(x)
        return fr.ambient(fr.solve_metric(fr.coords(egrad)))


# ---------------------------------------------------------------------------- metrics
@dataclass(frozen=True)
class ConformalBarrier:
    """A structure-preserving conformal factor for open simplices: ``h(p) = (1 + c sum_i p_i^-2)^q``.

    ``h >= 1``, so every eps-stationary point of the inherited Euclidean metric stays
    eps-stationary for ``g' = h g`` (Def. 2.5 (c); ``grad_g' f = grad_g f / h``), and the
    conformal change keeps the stationary set (b). The ``g'``-length of a path to the boundary
    is at least ``int sqrt(c) dp / p``, which diverges: ``g'`` is complete (the Nomizu–Ozeki
    construction). The paper does not give its ``h``; this one is the standard choice (a
    suggestion in the research note), and ``q`` only serves the curvature ablation.

    The radius (a): a line step ``p + u`` stays inside when ``|u_i| < p_min``, and
    ``|u_i| <= ||u||_E <= ||u||_g' / (sqrt(h) )``; so any ``||u||_g' < rho`` with
    ``rho = min_{0<p<=1} p sqrt(h_1(p))`` is valid, where ``h_1`` keeps only the smallest
    coordinate's term (``rho = sqrt(c)`` for ``q = 1``).
    """

    c: float = 0.01
    q: float = 1.0

    def __post_init__(self) -> None:
        for key in ("c", "q"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"barrier.{key}: expected a finite number > 0, got {v!r}")
        if self.q < 1:
            raise ValueError(f"barrier.q: must be >= 1 (h >= 1 keeps eps-stationarity), got {self.q}")

    def h(self, P: np.ndarray) -> np.ndarray:
        """``h`` of each row of ``P`` (shape ``(..., k)`` -> ``(...)``)."""
        return (1.0 + self.c * np.sum(P ** -2.0, axis=-1)) ** self.q

    def grad_log_h(self, P: np.ndarray) -> np.ndarray:
        """Euclidean gradient of ``log h`` (for the geodesic equation)."""
        s = 1.0 + self.c * np.sum(P ** -2.0, axis=-1, keepdims=True)
        return self.q * (-2.0 * self.c * P ** -3.0) / s

    @property
    def radius(self) -> float:
        if self.q == 1.0:
            return math.sqrt(self.c)
        p = np.logspace(-12, 0, 4000)
        return float(np.min(p * (1.0 + self.c / p**2) ** (self.q / 2))) * 0.999


def _helmert(k: int) -> np.ndarray:
    """An orthonormal basis (rows) of ``{u in R^k : sum u = 0}``."""
    H = np.zeros((k - 1, k))
    for i in range(1, k):
        H[i - 1, :i] = 1.0
        H[i - 1, i] = -float(i)
        H[i - 1] /= math.sqrt(i * (i + 1))
    return H


# ---------------------------------------------------------------------------- manifolds
class Euclidean(RiemannianManifold):
    """``R^n`` with a constant metric ``g(u, v) = u^T A v`` (``A = I`` by default).

    The anisotropic case is the setting of the sampling-bias ablation (``g_A``).
    """

    def __init__(self, n: int, metric: np.ndarray | None = None) -> None:
        self.size = self.dim = int(n)
        A = np.eye(self.size) if metric is None else np.asarray(metric, dtype=float)
        if A.shape != (self.size, self.size) or not np.allclose(A, A.T):
            raise ValueError(f"metric: expected a symmetric {n}x{n} matrix")
        if np.linalg.eigvalsh(A)[0] <= 0:
            raise ValueError("metric: must be positive definite")
        self.A = A

    def frame(self, x: np.ndarray) -> Frame:
        return Frame([Block(np.eye(self.size)[None], self.A[None], 0)], self.size)

    def retr(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return x + u

    def proju(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.asarray(u, dtype=float)

    def projx(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=float)

    def random(self, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_normal(self.size)

    def belongs(self, x: np.ndarray) -> bool:
        return bool(np.all(np.isfinite(x)))


class Simplex(RiemannianManifold):
    """``m`` open simplices of ``k`` weights each (a power manifold; ``m = 1``: one simplex).

    With ``barrier=None`` the metric is the inherited Euclidean one, which is incomplete: a
    line step can leave the simplex (the unconstrained baseline). With a
    :class:`ConformalBarrier` it is the structure-preserving ``g' = h g``, factor by factor.

    Parameters
    ----------
    k : int
        Weights per simplex (intrinsic dimension ``k - 1`` each).
    m : int
        Number of simplices (a mesh's interior nodes, or box coordinates as 1-simplices).
    barrier : ConformalBarrier, optional
    retraction : {"line", "exp"}
        ``"line"``: ``p + u``, with each factor's step shortened to ``margin * rho`` in ``g'``
        when longer, so every step stays inside (a retraction only has to agree with
        ``p + u`` near 0; inside the ``rho``-ball it is exactly ``p + u``). ``"exp"``: the
        exponential map of ``g'``, by RK4 on the geodesic equation of a conformal metric.
    margin : float
        Fraction of ``rho`` a single retraction step may use.
    """

    def __init__(self, k: int, m: int = 1, barrier: ConformalBarrier | None = None,
                 retraction: str = "line", margin: float = 0.9, exp_steps: int = 32) -> None:
        if k < 2 or m < 1:
            raise ValueError(f"simplex: need k >= 2 and m >= 1, got k={k}, m={m}")
        if retraction not in ("line", "exp"):
            raise ValueError(f"retraction: must be 'line' or 'exp', got {retraction!r}")
        if retraction == "exp" and barrier is None:
            raise ValueError("retraction: 'exp' needs a barrier (the Euclidean exp is the line)")
        self.k, self.m, self.barrier = int(k), int(m), barrier
        self.size, self.dim = self.k * self.m, (self.k - 1) * self.m
        self.retraction, self.margin, self.exp_steps = retraction, float(margin), int(exp_steps)
        # Without a barrier no radius is safe everywhere; the unconstrained baseline takes any mu.
        self.radius = barrier.radius if barrier is not None else math.inf
        self._H = _helmert(self.k)

    def _P(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=float).reshape(*np.shape(x)[:-1], self.m, self.k)

    def h(self, x: np.ndarray) -> np.ndarray:
        """The conformal factor of each simplex (ones without a barrier)."""
        P = self._P(x)
        return np.ones(P.shape[:-1]) if self.barrier is None else self.barrier.h(P)

    def frame(self, x: np.ndarray) -> Frame:
        h = self.h(x)
        basis = np.broadcast_to(self._H, (self.m, self.k - 1, self.k))
        metric = h[:, None, None] * np.eye(self.k - 1)
        return Frame([Block(basis, metric, 0)], self.size)

    def proju(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        U = self._P(u)
        return (U - U.mean(axis=-1, keepdims=True)).reshape(np.shape(u))

    def inner(self, x: np.ndarray, u: np.ndarray, v: np.ndarray) -> float:
        return float(np.sum(self.h(x) * np.sum(self._P(u) * self._P(v), axis=-1)))

    def retr(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        if self.retraction == "exp":
            return self.exp(x, u)
        U = self._P(u)
        if self.barrier is not None:
            length = np.sqrt(self.h(x) * np.sum(U * U, axis=-1))
            cap = self.margin * self.radius
            U = U * np.minimum(1.0, cap / np.maximum(length, 1e-300))[..., None]
        return (self._P(x) + U).reshape(np.shape(x))

    def exp(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Exponential map of ``g' = h g``: RK4 on ``x'' = -2 (d phi . x') x' + |x'|^2 P grad phi``.

        ``phi = log(h) / 2`` and ``P`` projects onto the tangent plane (Christoffel symbols of
        a conformally flat metric). Works on batches: ``x`` and ``u`` of shape ``(..., size)``.
        The geodesic has constant ``g'``-speed ``||u||_g'``; the number of RK4 steps keeps each
        one within ``rho / 20`` of ``g'``-length, so a long geodesic is followed as finely as a
        short one near the boundary.
        """
        assert self.barrier is not None
        P0, V0 = self._P(x), self._P(u)
        P0 = np.broadcast_to(P0, np.broadcast_shapes(P0.shape, V0.shape))
        barrier = self.barrier
        length = float(np.max(np.sqrt(barrier.h(P0) * np.sum(V0 * V0, axis=-1))))
        n = int(min(max(self.exp_steps, math.ceil(20 * length / barrier.radius)), 100_000))

        def accel(P: np.ndarray, V: np.ndarray) -> np.ndarray:
            g = 0.5 * barrier.grad_log_h(P)
            g = g - g.mean(axis=-1, keepdims=True)
            return (-2.0 * np.sum(g * V, axis=-1, keepdims=True) * V
                    + np.sum(V * V, axis=-1, keepdims=True) * g)

        P, V, dt = P0.copy(), V0.copy(), 1.0 / n
        for _ in range(n):
            k1p, k1v = V, accel(P, V)
            k2p, k2v = V + 0.5 * dt * k1v, accel(P + 0.5 * dt * k1p, V + 0.5 * dt * k1v)
            k3p, k3v = V + 0.5 * dt * k2v, accel(P + 0.5 * dt * k2p, V + 0.5 * dt * k2v)
            k4p, k4v = V + dt * k3v, accel(P + dt * k3p, V + dt * k3v)
            P = P + dt / 6 * (k1p + 2 * k2p + 2 * k3p + k4p)
            V = V + dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        return P.reshape(*P.shape[:-2], self.size)

    def projx(self, x: np.ndarray) -> np.ndarray:
        """Euclidean projection of each factor onto the closed simplex (sort-based)."""
        P = self._P(x).reshape(-1, self.k)
        s = -np.sort(-P, axis=1)
        css = np.cumsum(s, axis=1) - 1.0
        idx = np.arange(1, self.k + 1)
        rho = np.sum(s - css / idx > 0, axis=1)
        theta = css[np.arange(len(P)), rho - 1] / rho
        return np.maximum(P - theta[:, None], 0.0).reshape(np.shape(x))

    def random(self, rng: np.random.Generator) -> np.ndarray:
        return rng.dirichlet(np.ones(self.k), size=self.m).reshape(-1)

    def belongs(self, x: np.ndarray) -> bool:
        """Inside the *open* simplices, sums within 1e-9."""
        P = self._P(x)
        return bool(np.all(P > 0) and np.all(np.abs(P.sum(axis=-1) - 1.0) < 1e-9))


class Sphere(RiemannianManifold):
    """The unit sphere ``S^(n-1)`` of ``R^n`` with the round metric (complete).

    Retraction: ``(x + u) / ||x + u||``; the exponential map is closed-form.
    """

    def __init__(self, n: int) -> None:
        if n < 2:
            raise ValueError(f"sphere: need n >= 2, got {n}")
        self.size, self.dim = int(n), int(n) - 1

    def frame(self, x: np.ndarray) -> Frame:
        x = np.asarray(x, dtype=float)
        # The Householder reflection mapping e_1 to x; its other columns span x's complement.
        w = x.copy()
        w[0] -= 1.0
        nw = np.linalg.norm(w)
        Hm = np.eye(self.size) if nw < 1e-12 else np.eye(self.size) - 2.0 * np.outer(w, w) / nw**2
        basis = Hm[:, 1:].T
        return Frame([Block(basis[None], np.eye(self.dim)[None], 0)], self.size)

    def proju(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return u - np.dot(x, u) * x

    def inner(self, x: np.ndarray, u: np.ndarray, v: np.ndarray) -> float:
        return float(np.dot(u, v))

    def retr(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        y = x + u
        return y / np.linalg.norm(y, axis=-1, keepdims=True)

    def exp(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        t = np.linalg.norm(u, axis=-1, keepdims=True)
        return np.cos(t) * x + np.sinc(t / np.pi) * u

    def projx(self, x: np.ndarray) -> np.ndarray:
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    def random(self, rng: np.random.Generator) -> np.ndarray:
        z = rng.standard_normal(self.size)
        return z / np.linalg.norm(z)

    def belongs(self, x: np.ndarray) -> bool:
        return bool(abs(np.linalg.norm(x) - 1.0) < 1e-9)


class SPD(RiemannianManifold):
    """Symmetric positive-definite ``n`` x ``n`` matrices with the affine-invariant metric.

    ``g_S(U, V) = tr(S^-1 U S^-1 V)`` is complete, so no barrier is needed. Retraction:
    ``S + U + U S^-1 U / 2``, which equals ``(S + U) S^-1 (S + U) / 2 + S / 2`` and so is positive
    definite for every symmetric ``U`` (a second-order retraction, [3]).
    """

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"spd: need n >= 1, got {n}")
        self.n = int(n)
        self.size, self.dim = self.n * self.n, self.n * (self.n + 1) // 2
        E = []
        for i in range(self.n):
            for j in range(i, self.n):
                M = np.zeros((self.n, self.n))
                if i == j:
                    M[i, i] = 1.0
                else:
                    M[i, j] = M[j, i] = 1.0 / math.sqrt(2.0)
                E.append(M)
        self._E = np.stack(E)

    def _S(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, dtype=float).reshape(self.n, self.n)

    def frame(self, x: np.ndarray) -> Frame:
        Sinv = np.linalg.inv(self._S(x))
        M = Sinv @ self._E  # (k, n, n)
        A = np.einsum("aij,bji->ab", M, M)
        return Frame([Block(self._E.reshape(1, self.dim, -1), ((A + A.T) / 2)[None], 0)], self.size)

    def proju(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        U = np.asarray(u, dtype=float).reshape(self.n, self.n)
        return ((U + U.T) / 2).reshape(-1)

    def inner(self, x: np.ndarray, u: np.ndarray, v: np.ndarray) -> float:
        Sinv = np.linalg.inv(self._S(x))
        U, V = np.reshape(u, (self.n, self.n)), np.reshape(v, (self.n, self.n))
        return float(np.trace(Sinv @ U @ Sinv @ V))

    def retr(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        S, U = self._S(x), np.reshape(u, (self.n, self.n))
        Y = S + U + 0.5 * U @ np.linalg.solve(S, U)
        return ((Y + Y.T) / 2).reshape(-1)

    def projx(self, x: np.ndarray) -> np.ndarray:
        S = self._S(x)
        lam, Q = np.linalg.eigh((S + S.T) / 2)
        return ((Q * np.maximum(lam, 1e-12)) @ Q.T).reshape(-1)

    def random(self, rng: np.random.Generator) -> np.ndarray:
        q, r = np.linalg.qr(rng.standard_normal((self.n, self.n)))
        q = q * np.sign(np.diag(r))
        S = (q * np.exp(rng.uniform(-1.0, 1.0, self.n))) @ q.T
        return ((S + S.T) / 2).reshape(-1)

    def belongs(self, x: np.ndarray) -> bool:
        S = self._S(x)
        return bool(np.allclose(S, S.T, atol=1e-9) and np.linalg.eigvalsh(S)[0] > 0)


class Product(RiemannianManifold):
    """The product of manifolds; a point is the concatenation of the factors' flat points."""

    def __init__(self, factors: Sequence[RiemannianManifold]) -> None:
        if not factors:
            raise ValueError("product: needs at least one factor")
        self.factors = list(factors)
        self.offsets = np.cumsum([0] + [f.size for f in self.factors]).tolist()
        self.size = int(self.offsets[-1])
        self.dim = sum(f.dim for f in self.factors)
        self.radius = min(f.radius for f in self.factors)

    def split(self, x: np.ndarray) -> list[np.ndarray]:
        return [x[..., a:b] for a, b in zip(self.offsets[:-1], self.offsets[1:], strict=True)]

    def frame(self, x: np.ndarray) -> Frame:
        blocks = []
        for f, xf, start in zip(self.factors, self.split(x), self.offsets, strict=False):
            blocks.extend(Block(b.basis, b.metric, b.start + start) for b in f.frame(xf).blocks)
        return Frame(blocks, self.size)

    def retr(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.concatenate([f.retr(a, b) for f, a, b in zip(self.factors, self.split(x), self.split(u), strict=True)], axis=-1)

    def proju(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.concatenate([f.proju(a, b) for f, a, b in zip(self.factors, self.split(x), self.split(u), strict=True)])

    def inner(self, x: np.ndarray, u: np.ndarray, v: np.ndarray) -> float:
        return sum(f.inner(a, b, c) for f, a, b, c in
                   zip(self.factors, self.split(x), self.split(u), self.split(v), strict=True))

    def projx(self, x: np.ndarray) -> np.ndarray:
        return np.concatenate([f.projx(a) for f, a in zip(self.factors, self.split(x), strict=True)])

    def random(self, rng: np.random.Generator) -> np.ndarray:
        return np.concatenate([f.random(rng) for f in self.factors])

    def belongs(self, x: np.ndarray) -> bool:
        return all(f.belongs(a) for f, a in zip(self.factors, self.split(x), strict=True))


class GeooptManifold(RiemannianManifold):
    """A geoopt ``Manifold`` of points of ``shape``, seen through the flat numpy interface.

    The tangent frame is built from geoopt's own ``proju`` (projecting the ambient unit vectors
    and keeping an orthonormal basis of their span) and its ``inner`` (the Gram matrix), so
    the sampler and the estimator respect the geoopt manifold's metric. ``random`` projects a
    Gaussian with ``projx`` (deterministic in the numpy generator; not geoopt's own law).
    Needs the ``manifold`` extra.

    Parameters
    ----------
    manifold : geoopt.Manifold
    shape : tuple of int
        The shape of one point (e.g. ``(3,)`` for ``geoopt.Sphere()`` in R^3).
    """

    def __init__(self, manifold: Any, shape: Sequence[int]) -> None:
        from optiforge.extras import require

        require("manifold", "geoopt manifolds")
        import torch

        self._torch = torch
        self.manifold = manifold
        self.shape = tuple(int(s) for s in shape)
        self.size = int(np.prod(self.shape))
        x = self._t(self.projx(np.random.default_rng(0).standard_normal(self.size)))
        self.dim = len(self._basis(x))

    def _t(self, a: np.ndarray) -> Any:
        return self._torch.as_tensor(np.asarray(a, dtype=np.float64).reshape(self.shape))

    @staticmethod
    def _n(t: Any) -> np.ndarray:
        return t.detach().cpu().numpy().astype(float).reshape(-1)

    def _basis(self, xt: Any) -> np.ndarray:
        P = np.stack([self._n(self.manifold.proju(xt, self._t(e))) for e in np.eye(self.size)])
        U, s, _ = np.linalg.svd(P.T, full_matrices=False)
        return U[:, s > 1e-8 * max(1.0, s.max())].T

    def frame(self, x: np.ndarray) -> Frame:
        xt = self._t(x)
        E = self._basis(xt)
        Et = [self._t(e) for e in E]
        A = np.array([[float(self.manifold.inner(xt, a, b)) for b in Et] for a in Et])
        return Frame([Block(E[None], ((A + A.T) / 2)[None], 0)], self.size)

    def retr(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self._n(self.manifold.retr(self._t(x), self._t(u)))

    def proju(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self._n(self.manifold.proju(self._t(x), self._t(u)))

    def inner(self, x: np.ndarray, u: np.ndarray, v: np.ndarray) -> float:
        return float(self.manifold.inner(self._t(x), self._t(u), self._t(v)))

    def projx(self, x: np.ndarray) -> np.ndarray:
        return self._n(self.manifold.projx(self._t(x)))

    def random(self, rng: np.random.Generator) -> np.ndarray:
        return self.projx(rng.standard_normal(self.size))

    def belongs(self, x: np.ndarray) -> bool:
        ok, _ = self.manifold.check_point_on_manifold(self._t(x), explain=True)
        return bool(ok)


def simplex_curvature(barrier: ConformalBarrier, p: np.ndarray, eps: float = 1e-4) -> float:
    """Gaussian curvature of ``g' = h g_E`` on the open 2-simplex (``k = 3``) at ``p``.

    For a conformally flat surface ``g' = e^{2 phi} g_E``, ``K = -e^{-2 phi} Delta phi`` with
    ``phi = log(h) / 2``; the Laplacian is taken by central differences in an orthonormal
    basis of the simplex's plane.
    """
    p = np.asarray(p, dtype=float)
    if p.shape != (3,):
        raise ValueError("p: the curvature helper covers the 2-simplex (3 weights)")
    H = _helmert(3)

    def phi(q: np.ndarray) -> float:
        return 0.5 * math.log(float(barrier.h(q)))

    lap = sum((phi(p + eps * e) - 2 * phi(p) + phi(p - eps * e)) / eps**2 for e in H)
    return float(-lap / barrier.h(p))
