"""Small score networks for variance-exploding denoising: an MLP and a 1-D UNet.

Both are denoisers with the preconditioning of Karras et al. (EDM, 2022) for unit-variance data:
``D(x) = c_skip x + c_out F(c_in x, log sigma)`` with ``c_skip = 1 / (1 + sigma^2)``,
``c_out = sigma / sqrt(1 + sigma^2)``, ``c_in = 1 / sqrt(1 + sigma^2)``, and return the score
``(D(x) - x) / sigma^2``; the network ``F`` then sees unit-scale inputs and targets at every
noise level, which small-noise scores need. Trained by
:func:`~optiforge.blackbox.manifold.training.fit_score`. Sizes are the small end of the
reference's (its trajectory model is a 64-channel ``UNet1DTimeSmall``); the architectures are
ours.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


class SigmaEmbedding(nn.Module):
    """``log sigma`` and its Fourier features (low frequencies: smooth in the noise level)."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.register_buffer("freqs", torch.exp(torch.linspace(math.log(0.25), math.log(8.0), (dim - 1) // 2)))
        self.dim = dim

    def forward(self, sigma: torch.Tensor) -> torch.Tensor:
        s = torch.log(sigma.clamp_min(1e-8)).reshape(-1, 1)
        a = s * self.freqs
        out = torch.cat([s, torch.sin(a), torch.cos(a)], dim=1)
        return nn.functional.pad(out, (0, self.dim - out.shape[1]))


def _score(F: torch.Tensor, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """The EDM-preconditioned denoiser's score ``(D(x) - x) / sigma^2`` (see the module docstring)."""
    s2 = sigma**2
    c_skip, c_out = 1.0 / (1.0 + s2), sigma / torch.sqrt(1.0 + s2)
    return (c_skip * x + c_out * F - x) / s2


def _c_in(sigma: torch.Tensor) -> torch.Tensor:
    return 1.0 / torch.sqrt(1.0 + sigma**2)


class ScoreMLP(nn.Module):
    """``s(x, sigma)`` for points of ``R^dim`` (synthetic manifolds: circle, sphere, torus, SO(3)).

    Parameters
    ----------
    dim : int
        Ambient dimension.
    hidden, layers : int
        Width and depth.
    """

    def __init__(self, dim: int, hidden: int = 128, layers: int = 3) -> None:
        super().__init__()
        self.config: dict[str, Any] = {"dim": dim, "hidden": hidden, "layers": layers}
        self.embed = SigmaEmbedding(32)
        mods: list[nn.Module] = [nn.Linear(dim + 32, hidden), nn.SiLU()]
        for _ in range(layers - 1):
            mods += [nn.Linear(hidden, hidden), nn.SiLU()]
        mods.append(nn.Linear(hidden, dim))
        self.net = nn.Sequential(*mods)

    def forward(self, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(x.shape[0], -1)
        sig = sigma.reshape(-1, 1).to(flat.dtype)
        F = self.net(torch.cat([_c_in(sig) * flat, self.embed(sigma)], dim=1))
        return _score(F, flat, sig).reshape(x.shape)


class _Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, emb: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(c_in, c_out, 3, padding=1)
        self.conv2 = nn.Conv1d(c_out, c_out, 3, padding=1)
        self.norm1 = nn.GroupNorm(min(8, c_out), c_out)
        self.norm2 = nn.GroupNorm(min(8, c_out), c_out)
        self.film = nn.Linear(emb, c_out)
        self.skip = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        h = nn.functional.silu(self.norm1(self.conv1(x)))
        h = h + self.film(e)[:, :, None]
        h = nn.functional.silu(self.norm2(self.conv2(h)))
        return h + self.skip(x)


class ScoreUNet1D(nn.Module):
    """``s(x, sigma)`` for trajectories ``x`` of shape ``(B, T, C)`` (inputs and outputs per step).

    Two resolutions (``T`` must be divisible by 4), residual blocks with FiLM conditioning on
    the noise level, skip connections.

    Parameters
    ----------
    channels : int
        ``C`` = inputs + outputs per time step.
    width : int
        Channels of the first level (doubled at each down-sampling).
    """

    def __init__(self, channels: int, width: int = 32) -> None:
        super().__init__()
        self.config: dict[str, Any] = {"channels": channels, "width": width}
        emb = 64
        self.embed = nn.Sequential(SigmaEmbedding(emb), nn.Linear(emb, emb), nn.SiLU())
        w1, w2, w3 = width, 2 * width, 4 * width
        self.inp = nn.Conv1d(channels, w1, 3, padding=1)
        self.d1, self.d2, self.mid = _Block(w1, w1, emb), _Block(w1, w2, emb), _Block(w2, w3, emb)
        self.u2, self.u1 = _Block(w3 + w2, w2, emb), _Block(w2 + w1, w1, emb)
        self.out = nn.Conv1d(w1, channels, 3, padding=1)

    def forward(self, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        if x.shape[1] % 4:
            raise ValueError(f"x: the trajectory length must be divisible by 4, got {x.shape[1]}")
        e = self.embed(sigma.reshape(-1))
        sig = sigma.reshape(-1, 1, 1).to(x.dtype)
        h0 = self.inp((_c_in(sig) * x).transpose(1, 2))
        h1 = self.d1(h0, e)
        h2 = self.d2(nn.functional.avg_pool1d(h1, 2), e)
        h3 = self.mid(nn.functional.avg_pool1d(h2, 2), e)
        u2 = self.u2(torch.cat([nn.functional.interpolate(h3, scale_factor=2), h2], dim=1), e)
        u1 = self.u1(torch.cat([nn.functional.interpolate(u2, scale_factor=2), h1], dim=1), e)
        return _score(self.out(u1).transpose(1, 2), x, sig)


NETS: dict[str, type[nn.Module]] = {"mlp": ScoreMLP, "unet1d": ScoreUNet1D}
