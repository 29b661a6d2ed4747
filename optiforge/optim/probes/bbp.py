"""The BBP transition of the loss Hessian at a random initialization.

Annesi, Bocchi & Cammarota, *Overparametrization bends the landscape: BBP transitions at
initialization in simple neural networks*, ICLR 2026 (arXiv:2510.18435).

Model (teacher-student soft committee with quadratic activation)::

    teacher  y(x)  = (1/p*) sum_l (w*_l . x)^2        student  yhat(x) = (1/p) sum_k (w_k . x)^2
    loss     L(W)  = 1/2 sum_mu (y_mu - yhat_mu)^2 / (a + y_mu),   mu = 1..M,  M = alpha N

Weights lie on the sphere |w| = sqrt(N) and the inputs are x ~ N(0, I_N / N), so every
pre-activation w . x is a standard Gaussian and the Hessian spectrum is O(1). The student is
drawn independently of the data: this is the Hessian *at initialization*. The probe takes the
eigenvector v = (v_1..v_p) of its lowest eigenvalue and measures the overlap matrix with the
signal, m_kl = v_k . w*_l / sqrt(N), through its Frobenius norm |m| in [0, 1] (O(p)-invariant;
|m|^2 is the share of v inside span{w*} in every block). Below alpha_BBP the lowest eigenvalue
sits at the bulk edge and |m| -> 0 as N -> inf; above it an outlier carries the signal.

Hessian (the research note marks this "derived, check"). With d yhat / d w_k = (2/p)(w_k . x) x,

    H_kl = sum_mu [ (4/p^2) h_k h_l - delta_kl (2/p)(y - yhat) ] x x^T / (a + y),  h_k = w_k . x.

Checked here: :func:`hessian` is compared with ``torch.func.hessian`` of :func:`loss` in the
tests (tiny N, float64, to 1e-10). The paper's normalisation is not in our sources; a global
scale changes no eigenvector. On the sphere the probe uses the Riemannian Hessian
P (H - diag(mu_k)) P with P the tangent projector of every block and mu_k = w_k . grad_k L / N
(the Lagrange multiplier); the tests check it against the second derivative of L along
geodesics (autograd). For p = 1 the multiplier is a uniform shift, so both Hessians have the
same eigenvectors; for p > 1 the mu_k differ by O(N^-1/2).

Theory (ours, not the paper's: its self-energy equations are not in our sources). For p = 1
and p -> inf the lowest eigenvector is the top eigenvector of a *spectral-method* matrix
sum_mu T_mu x_mu x_mu^T, whose N = inf overlap is given by Lu & Li (2017) / Mondelli &
Montanari (2018); see :func:`spectral_overlap`:

* p = 1: T = -C = (2y - 6h^2)/(a + y), with h = w . x independent of the signal;
* p -> inf: yhat -> 1 and the off-diagonal blocks are O(1/p) in the signal directions, so
  T = (y - 1)/(a + y). At lambda = sup T = 1 the outlier condition reads
  alpha E[(y-1)^2]/(a+1) = 1 with E[(y-1)^2] = 2/p*, i.e. alpha_BBP = p*(a+1)/2, and psi' > 0
  there: the transition is discontinuous. This reproduces the paper's large-p claim; the
  tests also check it numerically from the quadrature.

The lowest eigenpair comes from a dense ``eigh`` (small pN) or a batched Lanczos iteration with
full re-orthogonalisation on a matrix-free Hessian-vector product (cost O(M N p) per product,
so N in the thousands stays cheap); both run on any torch device.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.optimize import brentq

from optiforge import validation as check

from ._progress import Progress

METHODS = ("auto", "dense", "lanczos")
DENSE_MAX = 256  # pN up to which "auto" builds the Hessian and calls eigh (Lanczos wins above)


@dataclass(frozen=True)
class SoftCommittee:
    """One batch of independent problem instances (teacher, data, student at initialization).

    Attributes
    ----------
    teacher : Tensor, shape (B, p*, N)
        Teacher weights, each row on the sphere of radius sqrt(N).
    student : Tensor, shape (B, p, N)
        Student weights at initialization, same sphere, independent of everything else.
    x : Tensor, shape (B, M, N)
        Inputs, x ~ N(0, I/N).
    y : Tensor, shape (B, M)
        Teacher labels.
    a : float
        The loss constant of 1/(a + y).
    """

    teacher: torch.Tensor
    student: torch.Tensor
    x: torch.Tensor
    y: torch.Tensor
    a: float

    @property
    def p(self) -> int:
        return self.student.shape[1]

    @property
    def n(self) -> int:
        return self.student.shape[2]


def _sphere(shape: tuple[int, ...], gen: torch.Generator, dtype, device) -> torch.Tensor:
    w = torch.randn(shape, generator=gen, dtype=dtype).to(device)
    return w * math.sqrt(shape[-1]) / w.norm(dim=-1, keepdim=True)


def sample_problem(n: int, alpha: float, p: int = 2, p_star: int = 1, a: float = 0.7, *,
                   batch: int = 1, seed: int = 0, dtype: torch.dtype = torch.float64,
                   device: str | torch.device = "cpu") -> SoftCommittee:
    """Draw ``batch`` independent instances with M = round(alpha N) samples.

    Parameters
    ----------
    n : int
        Input dimension N.
    alpha : float
        Samples per dimension (the SNR of the paper), M = round(alpha N) >= 1.
    p, p_star : int
        Student and teacher widths (p >= 1, p* >= 1; the paper studies p >= p*).
    a : float
        Loss constant, > 0.
    batch, seed, dtype, device
        Number of instances, seed of the CPU generator, precision and device.
    """
    n = check.integer(n, "n", minimum=2)
    alpha = check.positive(alpha, "alpha")
    p = check.integer(p, "p", minimum=1)
    p_star = check.integer(p_star, "p_star", minimum=1)
    a = check.positive(a, "a")
    batch = check.integer(batch, "batch", minimum=1)
    m = max(1, round(alpha * n))
    gen = torch.Generator().manual_seed(check.integer(seed, "seed"))
    teacher = _sphere((batch, p_star, n), gen, dtype, device)
    x = (torch.randn((batch, m, n), generator=gen, dtype=dtype) / math.sqrt(n)).to(device)
    student = _sphere((batch, p, n), gen, dtype, device)  # drawn after the data: independent
    y = (torch.einsum("bmn,bln->bml", x, teacher) ** 2).mean(-1)
    return SoftCommittee(teacher, student, x, y, a)


def loss(problem: SoftCommittee, student: torch.Tensor | None = None) -> torch.Tensor:
    """L(W) = 1/2 sum_mu (y - yhat)^2 / (a + y) for every instance, shape (B,)."""
    w = problem.student if student is None else student
    yhat = (torch.einsum("bmn,bkn->bmk", problem.x, w) ** 2).mean(-1)
    return 0.5 * ((problem.y - yhat) ** 2 / (problem.a + problem.y)).sum(-1)


def _weights(problem: SoftCommittee) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The per-sample p x p weights C_mu (B, M, p, p), pre-activations h and residual y - yhat."""
    p = problem.p
    h = torch.einsum("bmn,bkn->bmk", problem.x, problem.student)
    resid = problem.y - (h**2).mean(-1)
    scale = 1.0 / (problem.a + problem.y)
    eye = torch.eye(p, dtype=h.dtype, device=h.device)
    c = (4.0 / p**2) * h[..., :, None] * h[..., None, :] - (2.0 / p) * resid[..., None, None] * eye
    return c * scale[..., None, None], h, resid * scale


def multipliers(problem: SoftCommittee) -> torch.Tensor:
    """Lagrange multipliers mu_k = w_k . grad_{w_k} L / N of the sphere constraints, (B, p)."""
    _, h, r = _weights(problem)
    # grad_k L = -(2/p) sum_mu r_mu h_k x_mu, so w_k . grad_k L = -(2/p) sum_mu r_mu h_k^2.
    return -(2.0 / problem.p) * (r[..., None] * h**2).sum(1) / problem.n


def hessian(problem: SoftCommittee, riemannian: bool = True) -> torch.Tensor:
    """The exact Hessian, shape (B, pN, pN), block (k, l) at rows k*N..(k+1)*N.

    With ``riemannian`` the Riemannian Hessian P (H - diag(mu)) P on the product of spheres,
    as a pN x pN matrix (zero on the p normal directions).
    """
    c, _, _ = _weights(problem)
    b, _, p, _ = c.shape
    n = problem.n
    x = problem.x
    h = torch.einsum("bmkl,bmi,bmj->bkilj", c, x, x).reshape(b, p * n, p * n)
    if not riemannian:
        return h
    mu = multipliers(problem)
    h = h - torch.diag_embed(mu.repeat_interleave(n, dim=1))
    proj = _projector(problem)
    return proj @ h @ proj


def _projector(problem: SoftCommittee) -> torch.Tensor:
    u = problem.student / math.sqrt(problem.n)  # unit rows
    b, p, n = u.shape
    blocks = torch.eye(n, dtype=u.dtype, device=u.device) - u[..., :, None] * u[..., None, :]
    out = torch.zeros(b, p * n, p * n, dtype=u.dtype, device=u.device)
    for k in range(p):
        out[:, k * n:(k + 1) * n, k * n:(k + 1) * n] = blocks[:, k]
    return out


def hessian_matvec(problem: SoftCommittee, riemannian: bool = True,
                   normal_shift: float | torch.Tensor = 0.0) -> Callable[[torch.Tensor], torch.Tensor]:
    """A matrix-free product v -> H v for v of shape (B, pN).

    With ``riemannian`` it applies P (H - diag(mu)) P + normal_shift (I - P): a positive
    ``normal_shift`` moves the p normal directions to the top of the spectrum, so that the
    lowest eigenvector is a tangent one.
    """
    c, _, _ = _weights(problem)
    x, p, n = problem.x, problem.p, problem.n
    mu = multipliers(problem) if riemannian else None
    unit = problem.student / math.sqrt(n)

    def tangent(v: torch.Tensor) -> torch.Tensor:  # v: (B, p, N)
        return v - (v * unit).sum(-1, keepdim=True) * unit

    def matvec(v: torch.Tensor) -> torch.Tensor:
        v = v.reshape(v.shape[0], p, n)
        t = tangent(v) if riemannian else v
        r = torch.einsum("bmn,bkn->bmk", x, t)
        s = torch.einsum("bmkl,bml->bmk", c, r)
        out = torch.einsum("bmn,bmk->bkn", x, s)
        if riemannian:
            out = tangent(out - mu[..., None] * t) + normal_shift * (v - t)
        return out.reshape(v.shape[0], p * n)

    return matvec


def lanczos_lowest(matvec: Callable[[torch.Tensor], torch.Tensor], v0: torch.Tensor, *,
                   iters: int = 300, tol: float = 1e-6, check_every: int = 10
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Lowest eigenpair of a batch of symmetric operators by Lanczos with full
    re-orthogonalisation (two Gram-Schmidt passes per step).

    Parameters
    ----------
    matvec : callable
        (B, n) -> (B, n), symmetric.
    v0 : Tensor, shape (B, n)
        Start vectors (random).
    iters : int
        Maximum Krylov dimension.
    tol : float
        Stop when every residual |A v - theta v| is below ``tol`` times the largest Ritz value
        in absolute value.

    Returns
    -------
    (theta, v, residual): the lowest Ritz values (B,), unit Ritz vectors (B, n) and residual
    norms (B,).
    """
    b, n = v0.shape
    iters = min(iters, n)
    basis = torch.zeros(b, iters + 1, n, dtype=v0.dtype, device=v0.device)
    diag = torch.zeros(b, iters, dtype=v0.dtype, device=v0.device)
    off = torch.zeros(b, iters, dtype=v0.dtype, device=v0.device)
    basis[:, 0] = v0 / v0.norm(dim=-1, keepdim=True)
    k = 0
    for j in range(iters):
        q = basis[:, j]
        w = matvec(q)
        diag[:, j] = (w * q).sum(-1)
        for _ in range(2):  # "twice is enough" (Kahan, Parlett): keeps the basis orthonormal
            coef = torch.einsum("bkn,bn->bk", basis[:, : j + 1], w)
            w = w - torch.einsum("bk,bkn->bn", coef, basis[:, : j + 1])
        beta = w.norm(dim=-1)
        off[:, j] = beta
        # A breakdown (beta = 0) means an invariant subspace was found: keep a zero direction.
        basis[:, j + 1] = torch.where(beta[:, None] > 0, w / beta.clamp_min(1e-300)[:, None], 0.0)
        k = j + 1
        if k % check_every == 0 or k == iters:
            theta, s = _ritz(diag[:, :k], off[:, : k - 1])
            resid = (off[:, k - 1] * s[:, -1, 0]).abs()
            scale = theta.abs().amax(-1).clamp_min(1e-30)
            if bool((resid <= tol * scale).all()):
                break
    theta, s = _ritz(diag[:, :k], off[:, : k - 1])
    vec = torch.einsum("bk,bkn->bn", s[:, :, 0], basis[:, :k])
    resid = (matvec(vec) - theta[:, :1] * vec).norm(dim=-1) / vec.norm(dim=-1)
    return theta[:, 0], vec / vec.norm(dim=-1, keepdim=True), resid


def _ritz(diag: torch.Tensor, off: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.diag_embed(diag) + torch.diag_embed(off, 1) + torch.diag_embed(off, -1)
    return torch.linalg.eigh(t)


def lowest_eigenpair(problem: SoftCommittee, *, method: str = "auto", riemannian: bool = True,
                     iters: int = 300, tol: float = 1e-6, seed: int = 0
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Lowest eigenvalue (B,) and unit eigenvector (B, pN) of the Hessian at initialization.

    ``method``: ``"dense"`` (exact Hessian + eigh), ``"lanczos"`` (matrix-free), or ``"auto"``
    (dense up to pN = 256).
    """
    check.choice(method, "method", METHODS)
    iters = check.integer(iters, "iters", minimum=1)
    tol = check.positive(tol, "tol")
    dim = problem.p * problem.n
    if method == "dense" or (method == "auto" and dim <= DENSE_MAX):
        h = hessian(problem, riemannian)
        if riemannian:  # lift the p normal directions (eigenvalue 0) above the spectrum
            eye = torch.eye(dim, dtype=h.dtype, device=h.device)
            h = h + _normal_shift(problem)[:, None, None] * (eye - _projector(problem))
        vals, vecs = torch.linalg.eigh(h)
        return vals[:, 0], vecs[:, :, 0]
    gen = torch.Generator().manual_seed(seed)
    v0 = torch.randn(problem.x.shape[0], dim, generator=gen, dtype=problem.x.dtype)
    shift = _normal_shift(problem)[:, None, None] if riemannian else 0.0
    matvec = hessian_matvec(problem, riemannian, shift)
    theta, vec, _ = lanczos_lowest(matvec, v0.to(problem.x.device), iters=iters, tol=tol)
    return theta, vec


def _normal_shift(problem: SoftCommittee) -> torch.Tensor:
    """An upper bound of |H| per instance (sum_mu |C_mu|_2 |x_mu|^2 + max |mu| + 1), shape (B,)."""
    c, _, _ = _weights(problem)
    bound = (torch.linalg.matrix_norm(c, ord=2) * (problem.x**2).sum(-1)).sum(-1)
    bound = bound + multipliers(problem).abs().amax(-1) + 1.0
    return bound


def overlap(problem: SoftCommittee, vec: torch.Tensor) -> torch.Tensor:
    """|m|_F with m_kl = v_k . w*_l / sqrt(N) for unit eigenvectors ``vec`` (B, pN); (B,)."""
    v = vec.reshape(vec.shape[0], problem.p, problem.n)
    m = torch.einsum("bkn,bln->bkl", v, problem.teacher) / math.sqrt(problem.n)
    return torch.linalg.matrix_norm(m)


# ----------------------------------------------------------------------------- sweeps


@dataclass
class OverlapSweep:
    """Overlap |m| of the lowest Hessian eigenvector for every alpha and trial."""

    n: int
    p: int
    p_star: int
    a: float
    alphas: list[float]
    overlaps: list[list[float]]  # [alpha][trial]
    lowest: list[list[float]] = field(default_factory=list)  # lowest eigenvalue, same layout

    @property
    def mean(self) -> np.ndarray:
        return np.asarray(self.overlaps).mean(1)

    def crossing(self, level: float = 0.5) -> float | None:
        """The alpha where the mean overlap first crosses ``level`` (linear interpolation)."""
        m = self.mean
        for i in range(1, len(m)):
            if m[i - 1] < level <= m[i]:
                t = (level - m[i - 1]) / (m[i] - m[i - 1])
                return float(self.alphas[i - 1] + t * (self.alphas[i] - self.alphas[i - 1]))
        return None

    def to_dict(self) -> dict:
        return {"n": self.n, "p": self.p, "p_star": self.p_star, "a": self.a,
                "alphas": self.alphas, "overlap_mean": self.mean.tolist(),
                "overlap_std": np.asarray(self.overlaps).std(1).tolist(),
                "overlaps": self.overlaps, "lowest_eigenvalue": self.lowest,
                "alpha_at_overlap_0.5": self.crossing(0.5)}


def overlap_sweep(alphas: Sequence[float], n: int, *, p: int = 2, p_star: int = 1,
                  a: float = 0.7, trials: int = 8, seed: int = 0, method: str = "auto",
                  riemannian: bool = True, iters: int = 300, tol: float = 1e-6,
                  dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu",
                  progress: Progress | None = None) -> OverlapSweep:
    """Overlap of the lowest eigenvector with the teacher over a grid of alpha.

    ``trials`` independent instances per alpha run as one batch. ``progress(done, total)`` is
    called after every alpha. Seeds differ per alpha (seed * 1000 + index).
    """
    alphas = [check.positive(x, "alphas") for x in alphas]
    if not alphas:
        raise ValueError("alphas: must not be empty")
    trials = check.integer(trials, "trials", minimum=1)
    out = OverlapSweep(n, p, p_star, a, alphas, [], [])
    for i, alpha in enumerate(alphas):
        prob = sample_problem(n, alpha, p, p_star, a, batch=trials, seed=seed * 1000 + i,
                              dtype=dtype, device=device)
        val, vec = lowest_eigenpair(prob, method=method, riemannian=riemannian, iters=iters,
                                    tol=tol, seed=seed * 1000 + i)
        out.overlaps.append(overlap(prob, vec).cpu().tolist())
        out.lowest.append(val.cpu().tolist())
        if progress is not None:
            progress(i + 1, len(alphas))
    return out


def finite_size_fit(ns: Sequence[int], alpha_c: Sequence[float], law: str) -> dict:
    """Least-squares fit alpha_c(N) = alpha_inf + b f(N), f = N^(-2/3) ("power") or 1/log N
    ("log"): the finite-N laws of the continuous and the discontinuous transition.

    Returns alpha_inf, b and the RMS residual.
    """
    check.choice(law, "law", ("power", "log"))
    ns_arr = np.asarray(ns, dtype=float)
    f = ns_arr ** (-2.0 / 3.0) if law == "power" else 1.0 / np.log(ns_arr)
    design = np.stack([np.ones_like(f), f], 1)
    coef, *_ = np.linalg.lstsq(design, np.asarray(alpha_c, dtype=float), rcond=None)
    resid = design @ coef - np.asarray(alpha_c, dtype=float)
    return {"law": law, "alpha_inf": float(coef[0]), "b": float(coef[1]),
            "rms": float(np.sqrt((resid**2).mean()))}


# ----------------------------------------------------------------------------- N = inf theory


def large_p_threshold(p_star: int, a: float) -> float:
    """alpha_BBP in the p -> inf limit, p*(a + 1)/2 (the paper's claim; re-derived above)."""
    return check.integer(p_star, "p_star", minimum=1) * (check.positive(a, "a") + 1.0) / 2.0


@dataclass(frozen=True)
class SpectralModel:
    """A spectral-method weight T(g, h) on a Gauss-Hermite grid: T, g^2, weights and sup T."""

    t: np.ndarray
    g2: np.ndarray
    weights: np.ndarray
    tau: float


def _gauss_hermite(k: int, dims: int) -> tuple[list[np.ndarray], np.ndarray]:
    nodes, w = np.polynomial.hermite_e.hermegauss(k)
    w = w / math.sqrt(2 * math.pi)
    grids = np.meshgrid(*([nodes] * dims), indexing="ij")
    weights = np.ones_like(grids[0])
    for wd in np.meshgrid(*([w] * dims), indexing="ij"):
        weights = weights * wd
    return [g.ravel() for g in grids], weights.ravel()


def spectral_model(p: int | None, a: float, nodes: int = 160) -> SpectralModel:
    """The N = inf reduction for p* = 1: ``p=1`` (phase retrieval) or ``p=None`` (p -> inf).

    The lowest Hessian eigenvector is the top eigenvector of sum_mu T_mu x_mu x_mu^T with
    T = (2y - 6h^2)/(a + y) (p = 1) or T = (y - 1)/(a + y) (p -> inf), y = g^2.
    """
    a = check.positive(a, "a")
    if p is None:
        (g,), w = _gauss_hermite(nodes, 1)
        y = g**2
        return SpectralModel((y - 1) / (a + y), y, w, 1.0)
    if p != 1:
        raise ValueError(f"p: the N = inf theory here covers p = 1 and p -> inf (None), got {p}")
    (g, h), w = _gauss_hermite(nodes, 2)
    y = g**2
    return SpectralModel((2 * y - 6 * h**2) / (a + y), y, w, 2.0)


def spectral_overlap(alpha: float, model: SpectralModel) -> tuple[float, bool]:
    """N = inf squared overlap rho^2 of the top eigenvector of sum_mu T x x^T with the signal.

    Lu & Li (2017, arXiv:1702.06435, Thm 1) and Mondelli & Montanari (2018): for lambda > tau =
    sup T let psi(l) = l (1/alpha + E[T/(l - T)]), phi(l) = l E[T g^2/(l - T)] and
    lbar = argmin psi. An outlier exists iff phi(lbar) > psi(lbar); then rho^2 =
    psi'(l*) / (psi'(l*) - phi'(l*)) at the root l* > lbar of phi = psi. Written out:
    psi'(l) = 1/alpha - E[T^2/(l-T)^2], phi'(l) = -E[T^2 g^2/(l-T)^2], and phi > psi iff
    E[T (g^2 - 1)/(l - T)] > 1/alpha. (Our recollection of the theorem: the tests compare it
    with direct diagonalisation at N = 2000.)

    Returns (rho^2, edge_pinned): ``edge_pinned`` is True when lbar = tau, the smooth-edge case
    whose transition is discontinuous.
    """
    t, g2, w, tau = model.t, model.g2, model.weights, model.tau

    def ex(f: np.ndarray) -> float:
        return float((w * f).sum())

    def dpsi(lam: float) -> float:
        return 1.0 / alpha - ex(t**2 / (lam - t) ** 2)

    def excess(lam: float) -> float:  # (phi - psi)/lam
        return ex(t * (g2 - 1) / (lam - t)) - 1.0 / alpha

    lo = tau + 1e-9 * max(1.0, abs(tau))
    pinned = dpsi(lo) >= 0
    if pinned:
        lbar = lo
    else:
        hi = tau + 1.0
        while dpsi(hi) < 0:
            hi = tau + 2 * (hi - tau)
        lbar = brentq(dpsi, lo, hi, xtol=1e-13)
    if excess(lbar) <= 0:
        return 0.0, pinned
    hi = lbar + 1.0
    while excess(hi) > 0:
        hi = lbar + 2 * (hi - lbar)
    lam = brentq(excess, lbar, hi, xtol=1e-13)
    d = dpsi(lam)
    return d / (d + ex(t**2 * g2 / (lam - t) ** 2)), pinned


def spectral_threshold(model: SpectralModel, lo: float = 0.05, hi: float = 20.0) -> tuple[float, bool]:
    """alpha_BBP of a spectral model (bisection on the existence of the outlier) and whether
    the edge is pinned at sup T there (a discontinuous transition)."""
    if spectral_overlap(hi, model)[0] <= 0:
        raise ValueError(f"hi: no outlier up to alpha = {hi}")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if spectral_overlap(mid, model)[0] > 0 else (mid, hi)
    return hi, spectral_overlap(hi, model)[1]


DEFAULT_ALPHAS = tuple(round(0.2 * k, 2) for k in range(1, 16))  # 0.2 .. 3.0


def n_slopes(runs: Sequence[OverlapSweep]) -> list[float]:
    """Per alpha, the least-squares slope of log(mean |m|) against log N over ``runs`` (same
    alphas, several N): about -1/2 .. -1/3 where the eigenvector is uninformative (|m| -> 0),
    about 0 where the overlap has an N = inf limit."""
    log_n = np.log([r.n for r in runs])
    means = np.log(np.stack([r.mean for r in runs]))
    return [float(np.polyfit(log_n, means[:, i], 1)[0]) for i in range(means.shape[1])]


def figure(*, ns: Sequence[int] = (100, 200, 400, 800), a_values: Sequence[float] = (0.7, 1.5),
           alphas: Sequence[float] = DEFAULT_ALPHAS, p: int = 2, p_star: int = 1,
           trials: int = 8, validation_ns: Sequence[int] = (200, 800),
           large_ps: Sequence[int] = (1, 2, 4, 8), large_p_n: int = 200, large_p_a: float = 1.5,
           level: float = 0.5, seed: int = 0, device: str | torch.device = "cpu",
           progress: Progress | None = None) -> dict:
    """The probe's numbers.

    1. Fig. 1 of the paper: |m| against alpha for p, p* at every a in ``a_values`` and N in
       ``ns``; per alpha the N-slope of log |m| (:func:`n_slopes`) and the alpha where the
       mean |m| crosses ``level`` per N.
    2. The N = inf theory against simulation at p = 1, for every a and N in
       ``validation_ns``, with the mean |m| below alpha_BBP per N and its decay exponent in N
       (the finite-N effect: fast for a continuous transition, slow for a discontinuous one).
    3. The large-p check: |m| against alpha for every p in ``large_ps`` at N = ``large_p_n``
       and a = ``large_p_a``, with the p -> inf theory curve and alpha_BBP = p*(a + 1)/2.
    """
    alphas = [float(x) for x in alphas]
    jobs = len(a_values) * (len(ns) + len(validation_ns)) + len(large_ps)
    done = [0]

    def step(i: int, _n: int) -> None:
        if progress is not None:
            progress(done[0] * len(alphas) + i, jobs * len(alphas))

    def sweep(n: int, p_: int, a: float) -> OverlapSweep:
        s = overlap_sweep(alphas, n, p=p_, p_star=p_star, a=a, trials=trials, seed=seed,
                          device=device, progress=step)
        done[0] += 1
        return s

    out: dict = {"config": {"ns": list(ns), "a_values": list(a_values), "alphas": alphas, "p": p,
                            "p_star": p_star, "trials": trials, "level": level,
                            "hessian": "riemannian (sphere)"}, "fig1": [], "theory": [],
                 "large_p": {}}
    for a in a_values:
        runs = [sweep(n, p, a) for n in ns]
        out["fig1"].append({"a": a, "runs": [r.to_dict() for r in runs],
                            "n_slope": n_slopes(runs) if len(runs) > 1 else None,
                            "alpha_at_level": {str(r.n): r.crossing(level) for r in runs}})
    for a in a_values:
        entry: dict = {"a": a}
        for label, p_theory in (("p1", 1), ("p_inf", None)):
            model = spectral_model(p_theory, a)
            thr, pinned = spectral_threshold(model)
            entry[label] = {"alpha_bbp": thr, "discontinuous": pinned,
                            "overlap": [math.sqrt(spectral_overlap(x, model)[0]) for x in alphas]}
        entry["p_inf"]["paper_alpha_bbp"] = large_p_threshold(p_star, a)
        sims = [sweep(n, 1, a) for n in validation_ns]
        below = [i for i, x in enumerate(alphas) if x < entry["p1"]["alpha_bbp"]]
        entry["simulated"] = [r.to_dict() for r in sims]
        if below:
            means = {r.n: float(r.mean[below].mean()) for r in sims}
            entry["mean_overlap_below_threshold"] = {str(k): v for k, v in means.items()}
            if len(sims) > 1:
                entry["below_threshold_decay_exponent"] = float(np.polyfit(
                    np.log(list(means)), np.log(list(means.values())), 1)[0])
        out["theory"].append(entry)
    runs = [sweep(large_p_n, p_, large_p_a) for p_ in large_ps]
    model = spectral_model(None, large_p_a)
    out["large_p"] = {"n": large_p_n, "a": large_p_a, "ps": list(large_ps),
                      "runs": [r.to_dict() for r in runs],
                      "alpha_at_level": [r.crossing(level) for r in runs],
                      "p_inf_theory_overlap": [math.sqrt(spectral_overlap(x, model)[0])
                                               for x in alphas],
                      "alpha_bbp_p_inf": large_p_threshold(p_star, large_p_a)}
    return out
