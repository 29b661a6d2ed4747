"""Measuring a run (done by the driver, outside the algorithm): accuracy, losses, curves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.func import vmap

from .model import FlatModel

Progress = Callable[[int, int], None]
"""progress(done, total), called as rounds complete."""


@dataclass
class RunResult:
    """Curves (one list per metric, aligned with ``curves["round"]``), final figures, and the
    final model (the merged model of a decentralized run, the server's of a federated one)."""

    kind: str
    curves: dict[str, list[float]]
    final: dict[str, float]
    theta: torch.Tensor
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: everything but the parameters."""
        return {"kind": self.kind, "config": self.config, "final": self.final, "curves": self.curves}


@torch.no_grad()
def accuracy_and_loss(model: FlatModel, thetas: torch.Tensor, x: torch.Tensor,
                      y: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy and mean loss of each of ``thetas`` (``(k, P)``) on ``(x, y)``."""

    def one(theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = model.forward(theta, x)
        loss = model.loss_fn(out, y).mean()
        if y.is_floating_point():  # regression: no accuracy
            acc = torch.zeros((), dtype=out.dtype)
        else:
            acc = (out.argmax(-1) == y).to(out.dtype).mean()
        return acc, loss

    acc, loss = vmap(one)(thetas)
    return acc.numpy().astype(float), loss.numpy().astype(float)


@torch.no_grad()
def per_shard(model: FlatModel, theta: torch.Tensor,
              shards: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy and loss of one model on each shard (each client's own objective ``f_i``)."""
    accs, losses = [], []
    for x, y in shards:
        a, ls = accuracy_and_loss(model, theta[None], x, y)
        accs.append(a[0])
        losses.append(ls[0])
    return np.array(accs), np.array(losses)
