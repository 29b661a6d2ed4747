"""Zeroth-order Riemannian SGD with the symmetric two-point estimator (Ma & Huang).

One step at ``p_t`` with directions ``v_1..v_b`` (``g``-unit, from
:func:`~optiforge.blackbox.riemannian.sampling.sample_direction`)::

    g_hat = 1/b sum_j [f(R_p(mu v_j)) - f(R_p(-mu v_j))] / (2 mu) * v_j     (E g_hat ~ grad f / d)
    p_{t+1} = R_p(-eta g_hat)

with a retraction ``R`` in place of ``Exp`` (as the paper does in practice). On an incomplete
domain the metric is a structure-preserving ``g' = h g``
(:class:`~optiforge.blackbox.riemannian.manifolds.ConformalBarrier`), so every perturbation of
length ``mu < rho`` is valid (Def. 2.5 (a)) and the steps stay inside.

Schedules (Thm 2.9): for a horizon of ``T`` steps in dimension ``d``, constant
``eta = eta0 * sqrt(d / T)`` and ``mu = mu0 * sqrt(d / T) / d**2`` give
``min_t ||grad f(p_t)||^2 = O(sqrt(d / T))``; ``"constant"`` uses ``eta0`` and ``mu0`` as given.
Either way ``mu`` is capped at ``rho / 2`` so a perturbation never reaches the radius where
validity is no longer guaranteed (the paper takes ``mu < rho``).

Deviations: ``g_hat`` is not multiplied by ``d`` (the step size absorbs it, as in the paper's
theorem); several directions per step are averaged when ``directions > 1`` (parallel askers);
a failed evaluation drops its direction from the average.

References
----------
.. [1] S. Ma and H. Huang, "Riemannian Zeroth-Order Gradient Estimation with
   Structure-Preserving Metrics for Geodesically Incomplete Manifolds", arXiv:2601.08039,
   ICLR 2026 (Thm 2.7, Thm 2.9, Alg. 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from optiforge.blackbox.riemannian.manifolds import RiemannianManifold
from optiforge.blackbox.riemannian.sampling import SAMPLERS, sample_direction

SCHEDULES = ("theorem", "constant")


@dataclass(frozen=True)
class Schedule:
    """Step size ``eta`` and smoothing radius ``mu`` (Thm 2.9 or constant).

    Parameters
    ----------
    eta, mu : float
        The multipliers ``eta0``, ``mu0`` (``"theorem"``) or the values (``"constant"``).
    kind : {"theorem", "constant"}
    horizon : int
        ``T``, the number of steps.
    dim : int
        ``d``, the manifold's intrinsic dimension.
    radius : float
        The metric's safe radius ``rho``; ``mu`` is capped at ``rho / 2``.
    """

    eta: float
    mu: float
    kind: str = "theorem"
    horizon: int = 100
    dim: int = 1
    radius: float = math.inf

    def __post_init__(self) -> None:
        if self.kind not in SCHEDULES:
            raise ValueError(f"schedule: must be one of {', '.join(SCHEDULES)}; got {self.kind!r}")
        for key in ("eta", "mu"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{key}: expected a finite number > 0, got {v!r}")
        if self.horizon < 1:
            raise ValueError(f"horizon: must be >= 1, got {self.horizon}")

    def at(self, t: int) -> tuple[float, float]:
        """``(eta_t, mu_t)`` at step ``t`` (constant over the horizon, as in Thm 2.9)."""
        if self.kind == "theorem":
            r = math.sqrt(self.dim / self.horizon)
            eta, mu = self.eta * r, self.mu * r / self.dim**2
        else:
            eta, mu = self.eta, self.mu
        return eta, min(mu, 0.5 * self.radius)


@dataclass
class Probe:
    """One direction of a step: the two points to evaluate and, once known, their values."""

    v: np.ndarray
    plus: np.ndarray
    minus: np.ndarray
    f_plus: float | None = None
    f_minus: float | None = None
    failed: bool = False

    @property
    def done(self) -> bool:
        return self.failed or (self.f_plus is not None and self.f_minus is not None)


@dataclass
class ZORiemannianSGD:
    """The optimizer as a state machine: :meth:`probe` the current point, then :meth:`step`.

    Every direction is a function of ``(seed, t, j)`` only, so a replay of the same values
    reproduces the run exactly (what a resumed study relies on).

    Parameters
    ----------
    manifold : RiemannianManifold
    x0 : ndarray
        The starting point (flat).
    schedule : Schedule
    sampler : {"alg1", "alg1-rejection", "naive"}
    seed : int
    """

    manifold: RiemannianManifold
    x0: np.ndarray
    schedule: Schedule
    sampler: str = "alg1"
    seed: int = 0
    t: int = 0
    x: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler: must be one of {', '.join(SAMPLERS)}; got {self.sampler!r}")
        self.x = np.asarray(self.x0, dtype=float).copy()

    def probe(self, j: int) -> Probe:
        """Direction ``j`` of the current step and its two points ``R_x(+-mu v)``."""
        rng = np.random.default_rng([self.seed % 2**32, self.t, j])
        frame = self.manifold.frame(self.x)
        v = frame.ambient(sample_direction(frame, rng, self.sampler))
        _, mu = self.schedule.at(self.t)
        return Probe(v, self.manifold.retr(self.x, mu * v), self.manifold.retr(self.x, -mu * v))

    def estimate(self, probes: list[Probe]) -> np.ndarray | None:
        """The averaged two-point estimate over the probes that did not fail (``None``: none)."""
        ok = [p for p in probes if not p.failed]
        if not ok:
            return None
        _, mu = self.schedule.at(self.t)
        return sum(((p.f_plus - p.f_minus) / (2.0 * mu)) * p.v for p in ok) / len(ok)  # type: ignore[operator]

    def step(self, probes: list[Probe]) -> np.ndarray:
        """Move to ``R_x(-eta g_hat)`` (stays put if every probe failed) and advance ``t``."""
        g = self.estimate(probes)
        if g is not None:
            eta, _ = self.schedule.at(self.t)
            self.x = self.manifold.retr(self.x, -eta * g)
        self.t += 1
        return self.x


@dataclass
class ZOResult:
    """What :func:`zo_sgd` returns.

    Attributes
    ----------
    x : ndarray
        The last iterate.
    best_x, best_value : ndarray, float
        The best evaluated point (a probe point) and its value.
    values : ndarray
        ``f`` at the iterates ``p_0..p_T`` when ``track=True`` (not counted as evaluations).
    valid : ndarray of bool
        Whether each iterate ``p_0..p_T`` was on the manifold.
    evaluations : int
    """

    x: np.ndarray
    best_x: np.ndarray
    best_value: float
    values: np.ndarray
    valid: np.ndarray
    evaluations: int


def zo_sgd(
    f: Callable[[np.ndarray], float],
    manifold: RiemannianManifold,
    x0: np.ndarray | None = None,
    steps: int = 100,
    *,
    eta: float = 1.0,
    mu: float = 1.0,
    schedule: str = "theorem",
    sampler: str = "alg1",
    directions: int = 1,
    seed: int = 0,
    track: bool = False,
    callback: Callable[[int, np.ndarray], None] | None = None,
) -> ZOResult:
    """Minimise ``f`` over ``manifold`` from function values only (zeroth-order Riemannian SGD).

    Parameters
    ----------
    f : callable
        ``f(x) -> float`` on flat points of the manifold.
    manifold : RiemannianManifold
        E.g. ``Simplex(6, barrier=ConformalBarrier(0.01))``, ``Sphere(3)``, ``SPD(3)``,
        ``Product([...])`` or ``GeooptManifold(geoopt.Sphere(), (3,))``.
    x0 : ndarray, optional
        Start (default: ``manifold.random`` from ``seed``).
    steps : int
        ``T``; each step costs ``2 * directions`` evaluations.
    eta, mu, schedule
        See :class:`Schedule`.
    sampler : {"alg1", "alg1-rejection", "naive"}
        See :mod:`optiforge.blackbox.riemannian.sampling`.
    directions : int
        Directions averaged per step.
    seed : int
    track : bool
        Also evaluate ``f`` at every iterate (for plots; not counted).
    callback : callable, optional
        ``callback(t, x)`` after each step.

    Returns
    -------
    ZOResult

    Raises
    ------
    ValueError, TypeError
        Naming the bad argument.

    Examples
    --------
    >>> from optiforge.blackbox.riemannian import Sphere, zo_sgd
    >>> A = np.diag([3.0, 2.0, 1.0])
    >>> res = zo_sgd(lambda x: x @ A @ x, Sphere(3), steps=300, eta=2.0, mu=0.05, schedule="constant")
    >>> round(res.best_value, 2)                                             # doctest: +SKIP
    1.0
    """
    from optiforge import validation as check

    if not callable(f):
        raise TypeError(f"f: expected a callable, got {type(f).__name__}")
    if not isinstance(manifold, RiemannianManifold):
        raise TypeError(f"manifold: expected a RiemannianManifold, got {type(manifold).__name__}")
    steps = check.integer(steps, "steps", minimum=1)
    directions = check.integer(directions, "directions", minimum=1)
    seed = check.integer(seed, "seed", minimum=0)
    if x0 is None:
        x0 = manifold.random(np.random.default_rng([seed % 2**32, 2**31]))
    x0 = np.asarray(x0, dtype=float).reshape(-1)
    if x0.shape[0] != manifold.size:
        raise ValueError(f"x0: expected {manifold.size} coordinates, got {x0.shape[0]}")
    if not manifold.belongs(x0):
        raise ValueError("x0: not a point of the manifold")
    sched = Schedule(eta, mu, schedule, steps, manifold.dim, manifold.radius)
    opt = ZORiemannianSGD(manifold, x0, sched, sampler, seed)
    best_x, best_v, n_eval = x0.copy(), math.inf, 0
    values, valid = [f(opt.x) if track else math.nan], [manifold.belongs(opt.x)]
    for t in range(steps):
        probes = [opt.probe(j) for j in range(directions)]
        for p in probes:
            p.f_plus, p.f_minus = float(f(p.plus)), float(f(p.minus))
            n_eval += 2
            p.failed = not (math.isfinite(p.f_plus) and math.isfinite(p.f_minus))
            for point, val in ((p.plus, p.f_plus), (p.minus, p.f_minus)):
                if math.isfinite(val) and val < best_v:
                    best_x, best_v = point.copy(), val
        opt.step(probes)
        values.append(f(opt.x) if track else math.nan)
        valid.append(manifold.belongs(opt.x))
        if callback is not None:
            callback(t, opt.x)
    return ZOResult(opt.x, best_x, best_v, np.array(values), np.array(valid), n_eval)
