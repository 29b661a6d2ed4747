"""Descent on a data manifold with a score projector: DLF (landing) and DRGD (feasible).

With ``v`` the :class:`~optiforge.blackbox.manifold.ScoreProjector` and ``f`` differentiable:

* **DLF** (denoising landing flow), an Euler step of ``x' = -v'(x) grad f(v(x)) + eta (v(x) - x)``::

      p = v(x);   x <- x - gamma v'(x)^T grad f(p) + gamma * landing * (p - x)

  one forward and one backward pass through the score model (``torch.func.vjp``); iterates
  may sit off the manifold and land on it at rate ``landing`` (Thm 3: deviation
  ``O~(sigma) + eps``).
* **DRGD** (denoising Riemannian gradient descent), feasible: ``v`` acts as the retraction::

      x <- v(x - gamma v'(x) grad f(x))        (tangent by torch.func.jvp)

  which reduces to classical RGD when the score is exact and ``sigma -> 0`` (Thm 5).

References
----------
.. [1] A. Kharitenko, Z. Shen, R. de Santi, N. He, F. Dörfler, "Landing with the Score:
   Riemannian Optimization through Denoising", arXiv:2509.23357, ICLR 2026.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from optiforge.blackbox.manifold.projector import ScoreProjector

Objective = Callable[[torch.Tensor], torch.Tensor]
"""``f(x)``: a batch ``(B, ...)`` -> values ``(B,)``, differentiable."""


def _grad(f: Objective, x: torch.Tensor) -> torch.Tensor:
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(f(x).sum(), x)
    return g


def dlf_step(f: Objective, proj: ScoreProjector, x: torch.Tensor, gamma: float,
             landing: float) -> torch.Tensor:
    """One DLF step (see the module docstring)."""
    p, pullback = torch.func.vjp(proj, x)
    (jt_g,) = pullback(_grad(f, p.detach()))
    return (x - gamma * jt_g + gamma * landing * (p - x)).detach()


def drgd_step(f: Objective, proj: ScoreProjector, x: torch.Tensor, gamma: float) -> torch.Tensor:
    """One DRGD step (see the module docstring)."""
    return proj(x - gamma * proj.tangent(x, _grad(f, x))).detach()


@dataclass
class DescentResult:
    """What :func:`dlf` and :func:`drgd` return.

    Attributes
    ----------
    x : tensor
        The last iterate (DLF: report ``proj(x)`` for a point on the manifold).
    values : list of float
        Mean ``f`` at the projected iterates ``v(x_k)`` (DLF) or at the iterates (DRGD),
        before the first step and after each.
    distances : list of float
        Mean ``|v(x_k) - x_k|``, the estimated distance to the manifold, likewise.
    """

    x: torch.Tensor
    values: list[float]
    distances: list[float]


def _run(step: Callable[[torch.Tensor], torch.Tensor], f: Objective, proj: ScoreProjector,
         x0: torch.Tensor, steps: int, at_projection: bool,
         callback: Callable[[int, torch.Tensor], None] | None) -> DescentResult:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps: expected an integer >= 1, got {steps!r}")
    if not isinstance(x0, torch.Tensor) or x0.ndim < 2:
        raise TypeError("x0: expected a batch tensor of shape (B, ...)")
    x = x0.detach().clone()
    values, distances = [], []

    def record(x: torch.Tensor) -> None:
        with torch.no_grad():
            p = proj(x)
            values.append(float(f(p if at_projection else x).mean()))
            distances.append(float((p - x).flatten(1).norm(dim=1).mean()))

    record(x)
    for k in range(steps):
        x = step(x)
        if not torch.isfinite(x).all():
            raise FloatingPointError(f"step {k}: the iterate is not finite; lower gamma")
        record(x)
        if callback is not None:
            callback(k, x)
    return DescentResult(x, values, distances)


def dlf(f: Objective, proj: ScoreProjector, x0: torch.Tensor, steps: int = 100, *, gamma: float = 1e-2,
        landing: float = 1.0, callback: Callable[[int, torch.Tensor], None] | None = None) -> DescentResult:
    """Denoising landing flow from ``x0`` (a batch), ``steps`` Euler steps of size ``gamma``.

    ``landing`` (the paper's ``eta``, the code's ``landing_gain``) has no default in the
    reference code; 1.0 lands at the rate the objective moves at unit ``gamma``.
    """
    for name, v in (("gamma", gamma), ("landing", landing)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise ValueError(f"{name}: expected a finite number >= 0, got {v!r}")
    return _run(lambda x: dlf_step(f, proj, x, gamma, landing), f, proj, x0, steps, True, callback)


def drgd(f: Objective, proj: ScoreProjector, x0: torch.Tensor, steps: int = 100, *, gamma: float = 1e-2,
         callback: Callable[[int, torch.Tensor], None] | None = None) -> DescentResult:
    """Denoising Riemannian gradient descent from ``x0`` (projected first, so it starts feasible)."""
    if not (isinstance(gamma, (int, float)) and math.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma: expected a finite number > 0, got {gamma!r}")
    with torch.no_grad():
        x0 = proj(x0)
    return _run(lambda x: drgd_step(f, proj, x, gamma), f, proj, x0, steps, False, callback)
