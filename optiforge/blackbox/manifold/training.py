"""Training score networks by denoising score matching, and the saved model format.

Variance-exploding noise ``x_sigma = x + sigma eps`` with ``log sigma`` uniform on
``[log sigma_min, log sigma_max]`` (the reference's unicycle model uses ``[0.005, 5]``); the loss is
``E |sigma s(x_sigma, sigma) + eps|^2`` (eps-prediction, Vincent 2011). Data are standardised
first: one scalar scale for points of a synthetic manifold (so the geometry, and with it the
nearest-point projection, is unchanged) and one per channel for trajectories (inputs and
outputs have different units).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from optiforge.blackbox.manifold.nets import NETS, ScoreMLP, ScoreUNet1D
from optiforge.blackbox.manifold.projector import ScoreProjector

Progress = Callable[[int, int, float], None]
"""``progress(step, total, loss)`` after each training step."""
FORMAT = "optiforge-score/1"


@dataclass
class ScoreModel:
    """A trained score network with its standardisation and noise range.

    Attributes
    ----------
    net : nn.Module
        ``net(z, sigma)`` returns the score in standardised coordinates ``z``.
    kind : {"mlp", "unet1d"}
    shift, scale : tensor
        ``z = (x - shift) / scale``.
    sigma_min, sigma_max : float
        The noise levels it was trained on (in standardised units).
    losses : list of float
        The training losses.
    """

    net: nn.Module
    kind: str
    shift: torch.Tensor
    scale: torch.Tensor
    sigma_min: float
    sigma_max: float
    losses: list[float]

    def projector(self, t: float, n_proj: int = 1) -> ScoreProjector:
        """The Tweedie projector at noise level ``t`` (standardised units)."""
        if not self.sigma_min <= t <= self.sigma_max:
            raise ValueError(f"t: {t} is outside the trained noise range "
                             f"[{self.sigma_min}, {self.sigma_max}]")
        return ScoreProjector(self.net, t, n_proj=n_proj, shift=self.shift, scale=self.scale)

    def save(self, path: str | os.PathLike[str]) -> None:
        torch.save({"format": FORMAT, "kind": self.kind, "config": self.net.config,
                    "state": self.net.state_dict(), "shift": self.shift, "scale": self.scale,
                    "sigma_min": self.sigma_min, "sigma_max": self.sigma_max,
                    "losses": self.losses}, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ScoreModel:
        """Load a model saved by :meth:`save` (ValueError if the file is not one)."""
        try:
            blob = torch.load(path, map_location="cpu", weights_only=True)
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's bad input
            raise ValueError(f"score: {os.fspath(path)!r} is not a saved score model ({exc})") from None
        if not isinstance(blob, dict) or blob.get("format") != FORMAT or blob.get("kind") not in NETS:
            raise ValueError(f"score: {os.fspath(path)!r} is not a saved score model")
        net = NETS[blob["kind"]](**blob["config"])
        net.load_state_dict(blob["state"])
        net.eval()
        return cls(net, blob["kind"], blob["shift"], blob["scale"], float(blob["sigma_min"]),
                   float(blob["sigma_max"]), list(blob["losses"]))


def fit_score(
    data: torch.Tensor,
    *,
    kind: str = "auto",
    steps: int = 2000,
    batch: int = 256,
    lr: float = 2e-3,
    sigma_min: float = 0.005,
    sigma_max: float = 5.0,
    width: int = 128,
    seed: int = 0,
    progress: Progress | None = None,
) -> ScoreModel:
    """Train a score network on ``data`` by denoising score matching.

    Parameters
    ----------
    data : tensor
        ``(N, D)`` points (an MLP) or ``(N, T, C)`` trajectories (a 1-D UNet).
    kind : {"auto", "mlp", "unet1d"}
        ``"auto"`` picks by the data's shape.
    steps, batch, lr : int, int, float
        Adam steps, batch size, learning rate (cosine-decayed to 10%).
    sigma_min, sigma_max : float
        Noise range, in standardised units.
    width : int
        Hidden width (MLP) or first-level channels (UNet, a quarter of it).
    seed : int
    progress : callable, optional
        ``progress(step, steps, loss)``; the CLI draws a progress bar with it.

    Raises
    ------
    ValueError, TypeError
        Naming the bad argument.
    """
    if not isinstance(data, torch.Tensor) or data.ndim not in (2, 3) or data.shape[0] < 2:
        raise ValueError("data: expected an (N, D) or (N, T, C) array with N >= 2")
    if not torch.isfinite(data).all():
        raise ValueError("data: contains NaN or infinite values")
    if kind == "auto":
        kind = "mlp" if data.ndim == 2 else "unet1d"
    if kind not in NETS:
        raise ValueError(f"kind: must be one of auto, {', '.join(NETS)}; got {kind!r}")
    if (kind == "mlp") != (data.ndim == 2):
        raise ValueError(f"kind: {kind} needs {'(N, D)' if kind == 'mlp' else '(N, T, C)'} data, "
                         f"got shape {tuple(data.shape)}")
    if kind == "unet1d" and data.shape[1] % 4:
        raise ValueError(f"data: the trajectory length must be divisible by 4, got {data.shape[1]}")
    for name, v, lo in (("steps", steps, 1), ("batch", batch, 1), ("width", width, 4)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name}: expected an integer >= {lo}, got {v!r}")
    if not (0 < sigma_min < sigma_max and math.isfinite(sigma_max)):
        raise ValueError(f"sigma_min, sigma_max: need 0 < sigma_min < sigma_max, got {sigma_min}, {sigma_max}")
    if not (isinstance(lr, (int, float)) and 0 < lr < 1):
        raise ValueError(f"lr: expected a number in (0, 1), got {lr!r}")

    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)  # the network's initial weights
    data = data.to(torch.float32)
    if kind == "mlp":
        shift, scale = data.mean(dim=0), data.std().clamp_min(1e-8)
        net: nn.Module = ScoreMLP(data.shape[1], hidden=width)
    else:
        shift, scale = data.mean(dim=(0, 1)), data.std(dim=(0, 1)).clamp_min(1e-8)
        net = ScoreUNet1D(data.shape[2], width=max(8, width // 4))
    z = (data - shift) / scale
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps, eta_min=0.1 * lr)
    lo, hi = math.log(sigma_min), math.log(sigma_max)
    losses: list[float] = []
    net.train()
    for step in range(steps):
        idx = torch.randint(0, z.shape[0], (min(batch, z.shape[0]),), generator=gen)
        x0 = z[idx]
        sigma = torch.exp(lo + (hi - lo) * torch.rand(x0.shape[0], generator=gen))
        eps = torch.randn(x0.shape, generator=gen)
        shape = (-1,) + (1,) * (x0.ndim - 1)
        s = net(x0 + sigma.reshape(shape) * eps, sigma)
        loss = ((sigma.reshape(shape) * s + eps) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if progress is not None:
            progress(step + 1, steps, losses[-1])
    net.eval()
    for p in net.parameters():
        p.requires_grad_(False)
    return ScoreModel(net, kind, shift, scale, float(sigma_min), float(sigma_max), losses)


def model_summary(model: ScoreModel) -> dict[str, Any]:
    """JSON-able facts about a model (for the CLI)."""
    n = sum(p.numel() for p in model.net.parameters())
    return {"kind": model.kind, "parameters": n, "config": model.net.config,
            "sigma_min": model.sigma_min, "sigma_max": model.sigma_max,
            "final_loss": float(sum(model.losses[-50:]) / max(1, len(model.losses[-50:])))}
