"""Large-step gradient descent on scalar-vector factorization: critical step, fractal basins.

Liang & Montúfar, *Gradient descent with large step sizes: chaos and fractal convergence
region*, ICLR 2026 (arXiv:2509.25351).

Problem: min L(u, v) = 1/2 (u^T v - y)^2 + (lam/2)(|u|^2 + |v|^2), u, v in R^d, by GD with
step eta: u <- c u - r v, v <- c v - r u with c = 1 - eta lam and r = eta (u^T v - y).

* **Thm 1** (lam = 0): GD converges for eta < eta*(u0, v0) and diverges for eta > eta*, with
  eta* = min{1/|y|, 8 / (w + sqrt(w^2 - 16 y (z - y)))}, z = u0^T v0, w = |u0|^2 + |v0|^2
  (:func:`critical_step`). Checked here by simulation: :func:`critical_step_check` runs full
  GD just below and just above eta* from many random initialisations.
* **Prop 3** (planar reduction): T(u, v) = (u^T v, |u|^2 + |v|^2) conjugates GD to
  F(z, w) = ((c^2 + r^2) z - c r w, (c^2 + r^2) w - 4 c r z), r = eta (z - y), on w >= 2|z|
  (the research note marks this "derived, check"). Checked by hand: expanding
  (c u - r v)^T (c v - r u) and |c u - r v|^2 + |c v - r u|^2 gives exactly F; in the
  coordinates s = w + 2z = |u + v|^2, q = w - 2z = |u - v|^2 it decouples into
  s' = (c - r)^2 s, q' = (c + r)^2 q. The tests compare F^k with full GD in d = 7.
* **Thm 4** (lam > 0, 0 < lam <= min{1/eta - |y|, 1/(2 eta)}): the boundary of the
  convergence region is self-similar with box dimension ~1.249. :func:`basin_map` draws the
  authors' Fig. 3 setting (d = 1, y = 0.5, eta = 1, lam = 0.2, u, v in [-4, 4], 100 steps;
  converged when L is within 1e-6 of its minimum lam|y| - lam^2/2, coloured by the sign of
  u); :func:`box_counting` measures the boundary. Fig. 3's parameters come from a third-party
  reproduction (research note), not from the paper.
* **Thm 2**: the sharpness of the selected minimum takes any value in (2|y|, 2/eta)
  (:func:`sharpness_sweep`, lam = 0, where the Hessian at a minimum is grad z grad z^T with
  the single non-zero eigenvalue w).

Everything is batched over initialisations and runs on any torch device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from optiforge import validation as check

from ._progress import Progress

NOT_CONVERGED, CONVERGED_POS, CONVERGED_NEG = 0, 1, 2
DIVERGED_NORM = 1e12  # |u|^2 + |v|^2 beyond this (or inf/nan) counts as divergence


def critical_step(u: torch.Tensor, v: torch.Tensor, y: float) -> torch.Tensor:
    """eta*(u0, v0) of Thm 1 (lam = 0) for initialisations of shape (..., d)."""
    z = (u * v).sum(-1)
    w = (u * u + v * v).sum(-1)
    # w >= 2|z| makes the radicand >= (2|z| - 4|y|)^2 >= 0; clamp only rounding.
    second = 8.0 / (w + torch.sqrt((w * w - 16.0 * y * (z - y)).clamp_min(0.0)))
    return second if y == 0 else torch.minimum(second, torch.full_like(second, 1.0 / abs(y)))


def min_loss(y: float, lam: float) -> float:
    """min L: lam |y| - lam^2/2 when lam < |y| (balanced minimisers, u^T v = y - lam sign y),
    else y^2/2 (the origin)."""
    return lam * abs(y) - lam * lam / 2 if lam < abs(y) else y * y / 2


def gd(u: torch.Tensor, v: torch.Tensor, *, y: float, eta: float | torch.Tensor,
       lam: float = 0.0, steps: int = 100) -> tuple[torch.Tensor, torch.Tensor]:
    """``steps`` full GD steps from (u, v) of shape (..., d); ``eta`` a float or one per run
    (shape (...)). A divergent run overflows to inf/nan, which :func:`diverged` reports."""
    eta_t = torch.as_tensor(eta, dtype=u.dtype, device=u.device)
    eta_t = eta_t[..., None] if eta_t.ndim else eta_t
    c = 1.0 - eta_t * lam
    for _ in range(steps):
        r = eta_t * ((u * v).sum(-1, keepdim=True) - y)
        u, v = c * u - r * v, c * v - r * u
    return u, v


def diverged(w: torch.Tensor) -> torch.Tensor:
    """Divergence of runs with |u|^2 + |v|^2 = ``w``: beyond 1e12, or overflowed to inf/nan."""
    return ~(w < DIVERGED_NORM)


def planar_map(z: torch.Tensor, w: torch.Tensor, *, y: float, eta: float | torch.Tensor,
               lam: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """One step of F(z, w) = ((c^2 + r^2) z - c r w, (c^2 + r^2) w - 4 c r z)."""
    c = 1.0 - eta * lam
    r = eta * (z - y)
    k = c * c + r * r
    return k * z - c * r * w, k * w - 4.0 * c * r * z


def iterate_planar(z: torch.Tensor, w: torch.Tensor, *, y: float, eta: float | torch.Tensor,
                   lam: float = 0.0, steps: int = 100) -> tuple[torch.Tensor, torch.Tensor]:
    """``steps`` applications of :func:`planar_map` (divergent runs overflow, as in :func:`gd`)."""
    for _ in range(steps):
        z, w = planar_map(z, w, y=y, eta=eta, lam=lam)
    return z, w


def classify(u: torch.Tensor, v: torch.Tensor, *, y: float, lam: float,
             tol: float = 1e-6) -> torch.Tensor:
    """0: not converged (divergent or still moving), 1: converged with u_1 > 0, 2: with u_1 < 0.

    Converged means L within ``tol`` of min L, the criterion of the Fig. 3 reproduction.
    """
    z = (u * v).sum(-1)
    loss = 0.5 * (z - y) ** 2 + 0.5 * lam * (u * u + v * v).sum(-1)
    ok = torch.isfinite(loss) & (loss < min_loss(y, lam) + tol)
    out = torch.full(z.shape, NOT_CONVERGED, dtype=torch.int8, device=u.device)
    out[ok & (u[..., 0] > 0)] = CONVERGED_POS
    out[ok & (u[..., 0] <= 0)] = CONVERGED_NEG
    return out


# ----------------------------------------------------------------------------- Thm 1 check


@dataclass
class CriticalStepCheck:
    """Full GD from random initialisations at (1 - rel) eta* and at (1 + rel) eta*.

    Counts are split by the branch of the min in eta*: ``branch_y`` where 1/|y| binds (every
    minimum is unstable above it), ``branch_w`` where the initialisation-dependent term binds.
    """

    inits: int
    d: int
    y: float
    rel: float
    steps: int
    converged_below: dict[str, int]
    converged_above: dict[str, int]
    diverged_above: dict[str, int]
    count: dict[str, int]
    eta_star: list[float]

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in ("inits", "d", "y", "rel", "steps", "count",
                                             "converged_below", "converged_above", "diverged_above")}
        out["eta_star_quantiles"] = np.quantile(self.eta_star, [0, 0.25, 0.5, 0.75, 1]).tolist()
        return out


def critical_step_check(*, inits: int = 2000, d: int = 5, y: float = 1.0, rel: float = 0.02,
                        steps: int = 5000, seed: int = 0, dtype: torch.dtype = torch.float64,
                        device: str | torch.device = "cpu") -> CriticalStepCheck:
    """Thm 1 by simulation: run GD from random (u0, v0) at eta = (1 -+ rel) eta*(u0, v0).

    Initialisations are Gaussian with a per-run scale drawn log-uniformly in [0.2, 1.5], so
    that both branches of the min (1/|y| for small starts) are exercised. A run has converged
    when L < 1e-12, diverged when |u|^2 + |v|^2 > 1e12 (or overflowed).
    """
    inits = check.integer(inits, "inits", minimum=1)
    d = check.integer(d, "d", minimum=1)
    y = check.finite(y, "y")
    if y == 0:
        raise ValueError("y: must be non-zero for this check")
    rel = check.real(rel, "rel", minimum=1e-6, maximum=0.5)
    steps = check.integer(steps, "steps", minimum=1)
    gen = torch.Generator().manual_seed(check.integer(seed, "seed"))
    scale = torch.empty(inits, 1, dtype=dtype).uniform_(math.log(0.2), math.log(1.5), generator=gen)
    u = (torch.randn(inits, d, generator=gen, dtype=dtype) * scale.exp()).to(device)
    v = (torch.randn(inits, d, generator=gen, dtype=dtype) * scale.exp()).to(device)
    eta_star = critical_step(u, v, y)
    branch_y = eta_star >= 1 / abs(y) * (1 - 1e-12)
    masks = {"branch_y": branch_y, "branch_w": ~branch_y}

    def converged(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return 0.5 * ((a * b).sum(-1) - y) ** 2 < 1e-12

    ub, vb = gd(u, v, y=y, eta=(1 - rel) * eta_star, steps=steps)
    ua, va = gd(u, v, y=y, eta=(1 + rel) * eta_star, steps=steps)
    conv_b, conv_a = converged(ub, vb), converged(ua, va)
    div_a = diverged((ua * ua + va * va).sum(-1))

    def split(x: torch.Tensor) -> dict[str, int]:
        return {k: int((x & m).sum()) for k, m in masks.items()}

    return CriticalStepCheck(inits, d, y, rel, steps, split(conv_b), split(conv_a), split(div_a),
                             {k: int(m.sum()) for k, m in masks.items()}, eta_star.cpu().tolist())


# ----------------------------------------------------------------------------- basin maps


def basin_map(*, y: float = 0.5, eta: float = 1.0, lam: float = 0.2, extent: float = 4.0,
              resolution: int = 1024, steps: int = 100, tol: float = 1e-6,
              chunk_rows: int = 256, dtype: torch.dtype = torch.float64,
              device: str | torch.device = "cpu", progress: Progress | None = None
              ) -> torch.Tensor:
    """Classes (see :func:`classify`) of scalar GD (d = 1) on a ``resolution``^2 grid of
    (u0, v0) in [-extent, extent]^2; rows are v0 (bottom to top), columns u0.

    The grid runs in chunks of ``chunk_rows`` rows (bounded memory on any device).
    """
    resolution = check.integer(resolution, "resolution", minimum=8)
    steps = check.integer(steps, "steps", minimum=1)
    extent = check.positive(extent, "extent")
    eta = check.positive(eta, "eta")
    lam = check.nonneg(lam, "lam")
    y = check.finite(y, "y")
    axis = torch.linspace(-extent, extent, resolution, dtype=dtype, device=device)
    out = torch.empty(resolution, resolution, dtype=torch.int8, device=device)
    chunks = range(0, resolution, chunk_rows)
    for i, start in enumerate(chunks):
        rows = axis[start:start + chunk_rows]
        v0, u0 = torch.meshgrid(rows, axis, indexing="ij")
        u, v = gd(u0[..., None], v0[..., None], y=y, eta=eta, lam=lam, steps=steps)
        out[start:start + chunk_rows] = classify(u, v, y=y, lam=lam, tol=tol)
        if progress is not None:
            progress(i + 1, len(chunks))
    return out


def boundary(classes: torch.Tensor | np.ndarray, *, convergence_only: bool = True) -> np.ndarray:
    """Cells with a 4-neighbour of another class. With ``convergence_only`` the classes are
    merged into converged / not converged first: the boundary of the convergence region."""
    c = np.asarray(classes.cpu() if isinstance(classes, torch.Tensor) else classes)
    if convergence_only:
        c = c != NOT_CONVERGED
    edge = np.zeros(c.shape, dtype=bool)
    dv = c[1:, :] != c[:-1, :]
    dh = c[:, 1:] != c[:, :-1]
    edge[1:, :] |= dv
    edge[:-1, :] |= dv
    edge[:, 1:] |= dh
    edge[:, :-1] |= dh
    return edge


@dataclass
class BoxCounting:
    """Box-counting fit: log N(eps) = D log(1/eps) + b over the fitted box sizes (pixels)."""

    dimension: float
    intercept: float
    r2: float
    sizes: list[int]
    counts: list[float]  # mean over grid offsets
    fit_sizes: list[int]

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def box_counting(mask: np.ndarray | torch.Tensor, *, min_size: int = 2,
                 max_size: int | None = None) -> BoxCounting:
    """Box-counting dimension of the set of True cells of a square 2-D mask.

    Counts the occupied boxes at box sizes s = 1 .. resolution/2 pixels, a quarter octave
    apart (eps = s / resolution), each count averaged over the 16 grid offsets
    (0, s/4, s/2, 3s/4)^2, and fits the slope of log N against log(1/eps) on
    ``min_size <= s <= max_size`` (default: the resolution / 16, so that the coarsest fitted
    scale still has ~256 boxes). The smallest scales are left out by default: a boundary
    marked on both sides of an edge is two pixels thick.

    Why the averaging: a single grid aligned with a self-similar set over-counts at coarse
    scales with a log-periodic wiggle; on the Koch curve (4096 px, sizes 2..256) one grid
    gives 1.29, the offset average 1.261 (exact: log 4 / log 3 = 1.2619).
    """
    m = np.asarray(mask.cpu() if isinstance(mask, torch.Tensor) else mask, dtype=bool)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"mask: expected a square 2-D array, got shape {m.shape}")
    if not m.any():
        raise ValueError("mask: is empty (no boundary cells)")
    res = m.shape[0]
    min_size = check.integer(min_size, "min_size", minimum=1)
    max_size = res // 16 if max_size is None else check.integer(max_size, "max_size", minimum=1)
    # Summed-area table: the mass of any box is four look-ups, so every (size, offset) costs
    # only its number of boxes.
    table = np.zeros((res + 1, res + 1), dtype=np.int64)
    table[1:, 1:] = m.cumsum(0).cumsum(1)
    sizes = sorted({int(round(2 ** (k / 4))) for k in range(int(4 * math.log2(res / 2)) + 1)})
    counts = []
    for s in sizes:
        offsets = sorted({int(round(s * f)) for f in (0.0, 0.25, 0.5, 0.75)})
        total = 0
        for oy in offsets:
            ey = np.clip(np.arange(0, res + oy + s, s) - oy, 0, res)
            for ox in offsets:
                ex = np.clip(np.arange(0, res + ox + s, s) - ox, 0, res)
                q = table[np.ix_(ey, ex)]
                mass = q[1:, 1:] - q[:-1, 1:] - q[1:, :-1] + q[:-1, :-1]
                total += int((mass > 0).sum())
        counts.append(total / len(offsets) ** 2)
    fit = [i for i, s in enumerate(sizes) if min_size <= s <= max_size]
    if len(fit) < 2:
        raise ValueError(f"min_size/max_size: need at least two box sizes in [{min_size}, {max_size}]")
    x = np.log(res / np.asarray(sizes, dtype=float))[fit]
    yv = np.log(np.asarray(counts, dtype=float))[fit]
    slope, intercept = np.polyfit(x, yv, 1)
    pred = slope * x + intercept
    r2 = 1.0 - ((yv - pred) ** 2).sum() / max(((yv - yv.mean()) ** 2).sum(), 1e-300)
    return BoxCounting(float(slope), float(intercept), float(r2), sizes, counts,
                       [sizes[i] for i in fit])


def koch_curve(level: int) -> np.ndarray:
    """Vertices of the Koch curve on [0, 1] after ``level`` refinements, shape (4^level + 1, 2).

    Its box dimension is log 4 / log 3 = 1.2619: the calibration shape of :func:`box_counting`.
    """
    level = check.integer(level, "level", minimum=0, maximum=10)
    pts = np.array([[0.0, 0.0], [1.0, 0.0]])
    rot = np.array([[0.5, -math.sqrt(3) / 2], [math.sqrt(3) / 2, 0.5]])  # +60 degrees
    for _ in range(level):
        a, b = pts[:-1], pts[1:]
        d = (b - a) / 3
        p1, p3 = a + d, a + 2 * d
        p2 = p1 + d @ rot.T
        pts = np.concatenate([np.stack([a, p1, p2, p3], 1).reshape(-1, 2), pts[-1:]])
    return pts


def rasterize(points: np.ndarray, resolution: int) -> np.ndarray:
    """Mark the pixels of a ``resolution``^2 grid on [0, 1]^2 crossed by the polyline
    ``points`` (each segment sampled at a quarter-pixel spacing)."""
    a, b = points[:-1], points[1:]
    n = int(np.ceil(np.linalg.norm(b - a, axis=1).max() * resolution * 4)) + 1
    t = np.linspace(0.0, 1.0, n)[None, :, None]
    samples = (a[:, None] + t * (b - a)[:, None]).reshape(-1, 2)
    ij = np.clip((samples * resolution).astype(int), 0, resolution - 1)
    mask = np.zeros((resolution, resolution), dtype=bool)
    mask[ij[:, 1], ij[:, 0]] = True
    return mask


# ----------------------------------------------------------------------------- Thm 2


@dataclass
class SharpnessSweep:
    """Sharpness (w at the limit) of the minima GD selects, per step size (lam = 0)."""

    y: float
    etas: list[float]
    sharpness: list[list[float]]  # converged runs only
    converged: list[float]  # fraction per eta

    def to_dict(self) -> dict:
        return {"y": self.y, "etas": self.etas, "converged_fraction": self.converged,
                "sharpness_min": [min(s) if s else None for s in self.sharpness],
                "sharpness_max": [max(s) if s else None for s in self.sharpness],
                "sharpness_median": [float(np.median(s)) if s else None for s in self.sharpness],
                "bound_2_over_eta": [2 / e for e in self.etas], "gamma_min": 2 * abs(self.y)}


def sharpness_sweep(etas: list[float], *, y: float = 1.0, d: int = 5, inits: int = 2000,
                    scale: float = 1.0, steps: int = 3000, seed: int = 0,
                    dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu",
                    progress: Progress | None = None) -> SharpnessSweep:
    """For each eta, iterate the planar map from ``inits`` Gaussian (u0, v0) in R^d (scale
    ``scale``) and record w at the limit for the runs that converged (|z - y| < 1e-9)."""
    etas = [check.positive(e, "etas") for e in etas]
    gen = torch.Generator().manual_seed(check.integer(seed, "seed"))
    u = torch.randn(inits, d, generator=gen, dtype=dtype) * scale
    v = torch.randn(inits, d, generator=gen, dtype=dtype) * scale
    z0, w0 = (u * v).sum(-1).to(device), (u * u + v * v).sum(-1).to(device)
    out = SharpnessSweep(y, etas, [], [])
    for i, eta in enumerate(etas):
        z, w = iterate_planar(z0, w0, y=y, eta=eta, steps=steps)
        ok = torch.isfinite(z) & ((z - y).abs() < 1e-9)
        out.sharpness.append(w[ok].cpu().tolist())
        out.converged.append(float(ok.double().mean()))
        if progress is not None:
            progress(i + 1, len(etas))
    return out


def planar_agreement(*, d: int = 10, inits: int = 256, y: float = 1.0, eta: float = 0.3,
                     lam: float = 0.1, steps: int = 20, seed: int = 0) -> float:
    """Largest |T(GD^k(u, v)) - F^k(T(u, v))| (relative to 1 + |value|) over k <= ``steps``,
    in float64, from Gaussian initialisations of scale 0.5 in R^d."""
    gen = torch.Generator().manual_seed(seed)
    u = torch.randn(inits, d, generator=gen, dtype=torch.float64) * 0.5
    v = torch.randn(inits, d, generator=gen, dtype=torch.float64) * 0.5
    z, w = (u * v).sum(-1), (u * u + v * v).sum(-1)
    worst = 0.0
    for _ in range(steps):
        u, v = gd(u, v, y=y, eta=eta, lam=lam, steps=1)
        z, w = planar_map(z, w, y=y, eta=eta, lam=lam)
        for exact, reduced in (((u * v).sum(-1), z), ((u * u + v * v).sum(-1), w)):
            worst = max(worst, float(((exact - reduced).abs() / (1 + exact.abs())).max()))
    return worst


def figure(*, y: float = 0.5, eta: float = 1.0, lam: float = 0.2, extent: float = 4.0,
           resolution: int = 2048, steps: int = 100, check_inits: int = 2000, check_d: int = 5,
           check_rel: float = 0.02, check_steps: int = 5000,
           sharpness_etas: tuple[float, ...] = tuple(round(0.05 * k, 2) for k in range(1, 21)),
           seed: int = 0, device: str | torch.device = "cpu",
           progress: Progress | None = None) -> dict:
    """The probe's numbers: the Fig. 3 basin map and its box-counting dimension, the Thm 1
    check by simulation (y = 1), the planar map against full GD, and sharpness against eta
    (y = 1, d = 5, ``check_inits`` initialisations). The class map is returned under
    ``"classes"`` (a numpy array)."""
    chunks = math.ceil(resolution / 256)
    total = chunks + 3 + len(sharpness_etas)

    def sub(offset: int) -> Progress:
        return lambda done, _total: progress(offset + done, total) if progress else None

    classes = basin_map(y=y, eta=eta, lam=lam, extent=extent, resolution=resolution, steps=steps,
                        device=device, progress=sub(0))
    counts = {}
    for name, only in (("convergence_boundary", True), ("all_class_boundary", False)):
        counts[name] = box_counting(boundary(classes, convergence_only=only)).to_dict()
    sub(chunks)(1, total)
    crit = critical_step_check(inits=check_inits, d=check_d, y=1.0, rel=check_rel,
                               steps=check_steps, seed=seed, device=device)
    sub(chunks + 1)(1, total)
    planar = planar_agreement(seed=seed)
    sub(chunks + 2)(1, total)
    sharp = sharpness_sweep(list(sharpness_etas), y=1.0, d=5, inits=check_inits, seed=seed,
                            device=device, progress=sub(chunks + 3))
    koch = box_counting(rasterize(koch_curve(6), 1024))
    cl = classes.cpu().numpy()
    return {"config": {"y": y, "eta": eta, "lam": lam, "extent": extent, "resolution": resolution,
                       "steps": steps, "thm4_lam_max": min(1 / eta - abs(y), 1 / (2 * eta))},
            "class_fractions": {"not_converged": float((cl == NOT_CONVERGED).mean()),
                                "u_positive": float((cl == CONVERGED_POS).mean()),
                                "u_negative": float((cl == CONVERGED_NEG).mean())},
            "box_counting": counts, "paper_dimension": 1.249,
            "koch_calibration": {"dimension": koch.dimension, "exact": math.log(4) / math.log(3),
                                 "r2": koch.r2},
            "critical_step_check": crit.to_dict(), "planar_vs_gd_max_rel_error": planar,
            "sharpness": sharp.to_dict(),
            "sharpness_samples": [s[:400] for s in sharp.sharpness],
            "classes": cl}
