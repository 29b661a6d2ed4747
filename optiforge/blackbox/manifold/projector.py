"""The score projector: Tweedie's posterior mean as a projection onto a data manifold.

For data on a manifold ``M`` and its Gaussian smoothing ``p_sigma = N(0, sigma^2 I) * mu``, the
link function ``l_sigma(x) = |x|^2 / 2 + sigma^2 log p_sigma(x)`` has

* ``grad l_sigma(x) = x + sigma^2 grad log p_sigma(x) = E[y | x]`` (Tweedie) ``-> pi(x)``, the
  nearest point of ``M``;
* ``hess l_sigma(x) = Cov(y | x) / sigma^2 -> P_{T_x M}``, the tangent projection,

both with error ``O(sigma |log sigma|^3)`` on a tubular neighbourhood (Thm 1 of [1]). With a
score model ``s(x, t)`` the projector is ``v(x) = (x + std(t)^2 s(x, t)) / mean(t)``
(``mean = 1``, ``std = sigma`` for a variance-exploding model), optionally iterated
``n_proj`` times, and its Jacobian (symmetric, the Hessian of ``l_sigma``) acts on vectors
by ``torch.func.jvp``.

Any callable ``score(x, t) -> tensor like x`` plugs in: the networks of
:mod:`~optiforge.blackbox.manifold.nets`, :func:`empirical_score` (exact for a finite
sample), or a diffusers DDPM model through :meth:`ScoreProjector.from_ddpm`
(``score = -eps_hat / sqrt(1 - alpha_bar)``).

References
----------
.. [1] A. Kharitenko, Z. Shen, R. de Santi, N. He, F. Dörfler, "Landing with the Score:
   Riemannian Optimization through Denoising", arXiv:2509.23357, ICLR 2026.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

ScoreFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``score(x, t)``: ``x`` of shape ``(B, ...)``, ``t`` of shape ``(B,)``; returns ``(B, ...)``."""


class ScoreProjector:
    """``v(x) = (x + std^2 s(x, t)) / mean``, iterated; with tangent action by ``jvp``.

    Parameters
    ----------
    score : callable
        ``score(x, t)`` (see :data:`ScoreFn`).
    t : float
        The time (noise level) handed to ``score``; for a VE model it is ``sigma``.
    std, mean : float, optional
        ``x_t = mean * x_0 + std * noise`` at time ``t``; default ``std = t``, ``mean = 1``
        (variance exploding).
    n_proj : int
        Applications of the denoiser per projection (the paper's ``n_proj``).
    shift, scale : tensor or float, optional
        The score lives in standardised coordinates ``z = (x - shift) / scale``; the projector
        maps ``x`` there, denoises and maps back.
    """

    def __init__(self, score: ScoreFn, t: float, *, std: float | None = None, mean: float = 1.0,
                 n_proj: int = 1, shift: Any = 0.0, scale: Any = 1.0) -> None:
        if not callable(score):
            raise TypeError(f"score: expected a callable score(x, t), got {type(score).__name__}")
        if isinstance(t, bool) or not (isinstance(t, (int, float)) and math.isfinite(t) and t >= 0):
            raise ValueError(f"t: expected a finite time >= 0, got {t!r}")
        if isinstance(n_proj, bool) or not isinstance(n_proj, int) or n_proj < 1:
            raise ValueError(f"n_proj: expected an integer >= 1, got {n_proj!r}")
        self.score, self.t, self.n_proj = score, float(t), n_proj
        self.std = float(t) if std is None else float(std)
        self.mean = float(mean)
        if not (math.isfinite(self.std) and self.std > 0 and math.isfinite(self.mean) and self.mean > 0):
            raise ValueError(f"std, mean: expected finite numbers > 0, got std={self.std}, mean={self.mean}")
        self.shift, self.scale = shift, scale

    @classmethod
    def from_ddpm(cls, eps_model: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                  alphas_cumprod: torch.Tensor, timestep: int, n_proj: int = 1) -> ScoreProjector:
        """A projector from a DDPM noise predictor (e.g. a diffusers ``UNet``'s ``.sample``).

        ``x_t = sqrt(abar) x_0 + sqrt(1 - abar) eps``, so ``score = -eps_hat / sqrt(1 - abar)``
        and Tweedie's ``x_0`` estimate is ``(x + (1 - abar) score) / sqrt(abar)``.
        """
        abar = float(alphas_cumprod[timestep])
        std = math.sqrt(1.0 - abar)

        def score(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
            return -eps_model(x, t) / std

        return cls(score, float(timestep), std=std, mean=math.sqrt(abar), n_proj=n_proj)

    def _denoise(self, z: torch.Tensor) -> torch.Tensor:
        t = torch.full((z.shape[0],), self.t, dtype=z.dtype, device=z.device)
        return (z + self.std**2 * self.score(z, t)) / self.mean

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """``v(x)`` for a batch ``x`` of shape ``(B, ...)``."""
        z = (x - self.shift) / self.scale
        for _ in range(self.n_proj):
            z = self._denoise(z)
        return z * self.scale + self.shift

    def tangent(self, x: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """``v'(x) g``: the (approximate) projection of ``g`` onto the tangent space at ``x``."""
        return torch.func.jvp(self, (x,), (g,))[1]

    def distance(self, x: torch.Tensor) -> torch.Tensor:
        """``|v(x) - x|`` per batch row: the estimated distance to the manifold."""
        return (self(x) - x).flatten(1).norm(dim=1)


def empirical_score(points: torch.Tensor) -> ScoreFn:
    """The exact score of ``N(0, t^2 I) * (1/M) sum_j delta_{y_j}`` for sample points ``y_j``.

    ``grad log p_t(x) = sum_j w_j (y_j - x) / t^2`` with ``w = softmax(-|x - y_j|^2 / (2 t^2))``;
    with a dense sample of a known manifold it is the reference a learned score approximates.
    """
    Y = points.reshape(points.shape[0], -1)

    def score(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(x.shape[0], -1)
        s2 = (t.reshape(-1, 1) ** 2).to(flat.dtype)
        Yd = Y.to(flat.dtype)
        # |x - y|^2 written out: torch.cdist has no forward-mode derivative (jvp).
        sq = (flat * flat).sum(1, keepdim=True) - 2 * flat @ Yd.T + (Yd * Yd).sum(1)
        w = torch.softmax(-sq / (2 * s2), dim=1)
        return ((w @ Yd - flat) / s2).reshape(x.shape)

    return score
