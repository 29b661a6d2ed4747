"""A torch module as a function of one flat parameter vector, and the per-agent local work.

Everything an agent computes is written here once, as functions of a flat parameter vector
``theta`` (``P`` floats) and the agent's own batch, so that the in-process engine can apply
them to ``m`` stacked agents with ``torch.func.vmap`` and a Ray actor can apply them to one
agent: one description, two engines.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, grad_and_value

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-sample cross-entropy (classification)."""
    return nn.functional.cross_entropy(logits, target, reduction="none")


def squared_error(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-sample half squared error (regression; ``output`` of shape ``(n,)`` or ``(n, 1)``)."""
    return 0.5 * (output.reshape(target.shape) - target) ** 2


class FlatModel:
    """``module``'s parameters as one flat vector; forward and loss as functions of it.

    Parameters
    ----------
    module : nn.Module
        The architecture; its current parameters are the initial point (:meth:`initial`).
        Modules with floating buffers (BatchNorm running statistics) are refused: a buffer
        updated in place can't be vectorised over agents, nor averaged meaningfully.
    loss : callable
        Per-sample loss ``loss(output, target) -> (n,)``; a module-level function, so that it
        pickles by reference to a Ray actor.
    """

    def __init__(self, module: nn.Module, loss: LossFn = cross_entropy) -> None:
        if not isinstance(module, nn.Module):
            raise TypeError(f"model: expected a torch.nn.Module, got {type(module).__name__}")
        if any(b.is_floating_point() for b in module.buffers()):
            raise TypeError("model: modules with floating buffers (e.g. BatchNorm running "
                            "statistics) are not supported; use LayerNorm/GroupNorm")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("model: has no trainable parameters")
        self.module = module
        self.loss_fn = loss
        self.names = [n for n, _ in named]
        self.shapes = [tuple(p.shape) for _, p in named]
        self.numels = [p.numel() for _, p in named]
        self.size = sum(self.numels)
        self.dtype = named[0][1].dtype

    def initial(self) -> torch.Tensor:
        """The module's current parameters, flattened (a copy)."""
        params = dict(self.module.named_parameters())
        return torch.cat([params[n].detach().reshape(-1) for n in self.names]).clone()

    def unflatten(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views of ``theta`` shaped like the module's parameters (works under ``vmap``)."""
        return {n: t.view(s) for n, t, s in zip(self.names, theta.split(self.numels), self.shapes,
                                                strict=True)}

    def load_into(self, theta: torch.Tensor) -> nn.Module:
        """Write ``theta`` into the module's parameters and return the module."""
        with torch.no_grad():
            params = dict(self.module.named_parameters())
            for n, t in self.unflatten(theta).items():
                params[n].copy_(t)
        return self.module

    def forward(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return functional_call(self.module, self.unflatten(theta), (x,))

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
             w: torch.Tensor | None = None) -> torch.Tensor:
        """Mean per-sample loss, weighted by ``w`` when given (zero weights mark padding)."""
        per = self.loss_fn(self.forward(theta, x), y)
        if w is None:
            return per.mean()
        return (per * w).sum() / w.sum()

    def grad_and_loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                      w: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(grad, loss)`` of :meth:`loss` at ``theta``."""
        return grad_and_value(self.loss)(theta, x, y, w)


def sgd_steps(model: FlatModel, theta: torch.Tensor, buf: torch.Tensor, xs: torch.Tensor,
              ys: torch.Tensor, lr: float, momentum: float = 0.0,
              weight_decay: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """``len(xs)`` steps of (heavy-ball) SGD from ``theta`` on the batches ``xs[s], ys[s]``.

    ``buf`` is the momentum buffer (returned updated; it stays with its agent and is never
    mixed). Pure, so it vectorises over agents with ``vmap``.
    """
    g_of = grad(model.loss)
    for s in range(xs.shape[0]):
        g = g_of(theta, xs[s], ys[s])
        if weight_decay:
            g = g + weight_decay * theta
        if momentum:
            buf = momentum * buf + g
            g = buf
        theta = theta - lr * g
    return theta, buf


class ShardSampler:
    """Mini-batches of an agent's shard: reshuffled epochs, drawn as one stream.

    The positions it returns (into the agent's shard) depend only on the seed, so both engines
    draw the same batches for the same agent.
    """

    def __init__(self, n: int, seed: np.random.SeedSequence) -> None:
        self.n = n
        self.rng = np.random.default_rng(seed)
        self._perm = self.rng.permutation(n)
        self._pos = 0

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` positions (an epoch ends: a fresh permutation)."""
        out = np.empty(count, dtype=np.int64)
        filled = 0
        while filled < count:
            if self._pos == self.n:
                self._perm, self._pos = self.rng.permutation(self.n), 0
            n = min(count - filled, self.n - self._pos)
            out[filled:filled + n] = self._perm[self._pos:self._pos + n]
            filled += n
            self._pos += n
        return out

    def batches(self, steps: int, batch_size: int) -> np.ndarray:
        """``(steps, batch_size)`` positions."""
        return self.take(steps * batch_size).reshape(steps, batch_size)


def agent_seeds(seed: int, m: int) -> list[tuple[np.random.SeedSequence, int]]:
    """Per agent: the seed of its batch sampler and the seed of its compressor's generator.

    Derived from ``seed`` alone, so every engine gives agent ``i`` the same randomness.
    """
    out = []
    for child in np.random.SeedSequence([seed, 0x5EED]).spawn(m):
        batches, compress = child.spawn(2)
        out.append((batches, int(compress.generate_state(1, dtype=np.uint64)[0] % (2**63))))
    return out



def mlp(n_inputs: int, n_outputs: int, hidden: tuple[int, ...] = (128, 128),
        seed: int = 0) -> nn.Module:
    """A ReLU multilayer perceptron, initialised from ``seed`` (PyTorch's default init)."""
    gen_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        layers: list[nn.Module] = []
        width = n_inputs
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, n_outputs))
        return nn.Sequential(*layers)
    finally:
        torch.random.set_rng_state(gen_state)  # the caller's global RNG is left as it was
