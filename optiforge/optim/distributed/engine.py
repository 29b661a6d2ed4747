"""Engines: where the agents' work runs. The in-process one vectorises ``m`` agents with ``vmap``.

An :class:`Engine` holds ``m`` agents (decentralized peers or federated clients), each with its
own data shard, batch stream, compressor randomness and method state, and offers the few
operations the algorithms in :mod:`.decentralized` and :mod:`.federated` are written in:

- :meth:`~Engine.local_sgd`: every agent takes SGD steps on its own mini-batches;
- :meth:`~Engine.mix`: ``theta_i <- sum_j W_ij theta_j`` for a mixing matrix ``W``;
- :meth:`~Engine.parameters`: the ``(m, P)`` stack of the agents' parameters;
- :meth:`~Engine.client_round`: the participating clients' local work at the server's
  ``theta`` and their compressed messages.

:class:`LocalEngine` runs them in this process: parameters stacked as one ``(m, P)`` tensor and
the per-agent functions of :mod:`.model` mapped over agents with ``torch.func.vmap``
(``vectorize=False``: a Python loop over the same functions, for models vmap can't take).
The Ray engine (``optiforge.platform.distributed``) runs each agent in an actor. Both draw every
random number from the same per-agent seeds (:func:`~.model.agent_seeds`), so the same seed
gives the same run on either.
"""

from __future__ import annotations

from functools import partial
from typing import Protocol, runtime_checkable

import numpy as np
import torch
from torch.func import vmap

from .federated import FederatedMethod, LocalWork
from .model import FlatModel, ShardSampler, agent_seeds, sgd_steps

Report = tuple[torch.Tensor, float, int]
"""A client's reply: (message, its loss at theta, uplink bits of the message)."""


@runtime_checkable
class Engine(Protocol):
    """Runs ``m`` agents' local work and communication (see the module docstring)."""

    def start(self, model: FlatModel, shards: list[tuple[np.ndarray, np.ndarray]],
              init: torch.Tensor, seed: int) -> None:
        """Create the agents: agent ``i`` owns ``shards[i]`` (features, labels) and starts at
        ``init[i]``; its randomness derives from ``seed``."""
        ...

    def local_sgd(self, steps: int, batch_size: int, lr: float, momentum: float,
                  weight_decay: float) -> None:
        ...

    def mix(self, w: np.ndarray) -> None:
        ...

    def parameters(self) -> torch.Tensor:
        ...

    def client_round(self, method: FederatedMethod, theta: torch.Tensor, weights: np.ndarray,
                     participants: list[int]) -> dict[int, Report]:
        ...

    def close(self) -> None:
        ...


def mix_stack(w: np.ndarray, thetas: torch.Tensor) -> torch.Tensor:
    """``W @ thetas``, summed as ``sum_j W[:, j] theta_j`` in ascending ``j``.

    A Ray actor adds its neighbours' models in the same order (:func:`mix_one`), so the two
    engines mix bit for bit alike: a matrix product rounds differently, and on a ReLU network
    one-ulp differences grow to ~1e-3 in the parameters within 150 SGD steps (measured).
    """
    wt = torch.as_tensor(w, dtype=thetas.dtype)
    out = torch.zeros_like(thetas)
    for j in range(len(thetas)):
        out = out + wt[:, j:j + 1] * thetas[j]
    return out


def mix_one(weights: list[float], thetas: list[torch.Tensor]) -> torch.Tensor:
    """One agent's ``sum_j w_j theta_j`` over its neighbours (ascending ``j``), as :func:`mix_stack`."""
    out = torch.zeros_like(thetas[0])
    for w, t in zip(weights, thetas, strict=True):
        out = out + torch.tensor(w, dtype=t.dtype) * t
    return out


def client_work(model: FlatModel, work: LocalWork, theta: torch.Tensor, xs: torch.Tensor,
                ys: torch.Tensor, w: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A client's local work at ``theta``: ``(gradient, loss)`` when ``work.steps == 0``, else
    ``(theta_after_steps - theta, loss at theta on the first batch)``. Pure (vmap-able)."""
    if work.steps == 0:
        return model.grad_and_loss(theta, xs, ys, w)
    after, _ = sgd_steps(model, theta, torch.zeros_like(theta), xs, ys, work.lr)
    return after - theta, model.loss(theta, xs[0], ys[0])


class Agent:
    """What one agent owns besides its parameters: data, batch stream, randomness, method state.

    The in-process engine keeps ``m`` of these next to its stacked parameters; a Ray actor
    keeps one next to its own parameters.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, sampler_seed: np.random.SeedSequence,
                 compress_seed: int) -> None:
        self.x = torch.as_tensor(x)
        self.y = torch.as_tensor(y)
        self.sampler = ShardSampler(len(self.x), sampler_seed)
        self.generator = torch.Generator().manual_seed(compress_seed)
        self.state: dict[str, torch.Tensor] | None = None

    def sgd_batches(self, steps: int, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        pos = torch.from_numpy(self.sampler.batches(steps, batch_size))
        return self.x[pos], self.y[pos]

    def work_batches(self, work: LocalWork) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The data of one round's client work (``None``: the whole shard)."""
        if work.steps:
            return self.sgd_batches(work.steps, work.batch_size)  # type: ignore[arg-type]
        if work.batch_size is None:
            return None
        pos = torch.from_numpy(self.sampler.take(work.batch_size))
        return self.x[pos], self.y[pos]

    def message(self, method: FederatedMethod, local: torch.Tensor, weight: float,
                n_clients: int) -> tuple[torch.Tensor, int]:
        if self.state is None:
            self.state = method.client_state(local.numel())
        return method.client(self.state, local, weight, n_clients, self.generator)


def make_agents(shards: list[tuple[np.ndarray, np.ndarray]], seed: int) -> list[Agent]:
    return [Agent(x, y, s_seed, c_seed)
            for (x, y), (s_seed, c_seed) in zip(shards, agent_seeds(seed, len(shards)), strict=True)]


class LocalEngine:
    """All agents in this process, stacked and vectorised with ``torch.func.vmap``.

    Parameters
    ----------
    vectorize : bool
        ``True``: one ``vmap`` call per operation over all agents; ``False``: a loop over
        agents calling the same per-agent functions (for models ``vmap`` can't map, e.g. with
        data-dependent control flow). Both give the same numbers to float tolerance.
    """

    name = "local"

    def __init__(self, vectorize: bool = True) -> None:
        self.vectorize = bool(vectorize)
        self.model: FlatModel | None = None
        self.agents: list[Agent] = []

    def start(self, model: FlatModel, shards: list[tuple[np.ndarray, np.ndarray]],
              init: torch.Tensor, seed: int) -> None:
        self.model = model
        self.agents = make_agents(shards, seed)
        self.theta = init.clone()
        self.buf = torch.zeros_like(self.theta)
        self._padded: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    @property
    def n_agents(self) -> int:
        return len(self.agents)

    def local_sgd(self, steps: int, batch_size: int, lr: float, momentum: float,
                  weight_decay: float) -> None:
        batches = [a.sgd_batches(steps, batch_size) for a in self.agents]
        step = partial(sgd_steps, self.model, lr=lr, momentum=momentum, weight_decay=weight_decay)
        if self.vectorize:
            xs = torch.stack([b[0] for b in batches])
            ys = torch.stack([b[1] for b in batches])
            self.theta, self.buf = vmap(step)(self.theta, self.buf, xs, ys)
            return
        for i, (xs, ys) in enumerate(batches):
            self.theta[i], self.buf[i] = step(self.theta[i], self.buf[i], xs, ys)

    def mix(self, w: np.ndarray) -> None:
        self.theta = mix_stack(w, self.theta)

    def parameters(self) -> torch.Tensor:
        return self.theta.clone()

    def _full_shards(self, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The shards of ``ids`` padded to one length, with 0/1 weights marking real samples."""
        if self._padded is None:
            n = max(len(a.x) for a in self.agents)
            x = torch.zeros((self.n_agents, n, *self.agents[0].x.shape[1:]), dtype=self.agents[0].x.dtype)
            y = torch.zeros((self.n_agents, n, *self.agents[0].y.shape[1:]), dtype=self.agents[0].y.dtype)
            w = torch.zeros((self.n_agents, n), dtype=x.dtype)
            for i, a in enumerate(self.agents):
                x[i, :len(a.x)], y[i, :len(a.x)], w[i, :len(a.x)] = a.x, a.y, 1.0
            self._padded = (x, y, w)
        x, y, w = self._padded
        return x[ids], y[ids], w[ids]

    def client_round(self, method: FederatedMethod, theta: torch.Tensor, weights: np.ndarray,
                     participants: list[int]) -> dict[int, Report]:
        if not participants:
            return {}
        work = method.local
        batches = [self.agents[i].work_batches(work) for i in participants]
        fn = partial(client_work, self.model, work)
        if self.vectorize:
            if batches[0] is None:
                xs, ys, ws = self._full_shards(participants)
                local, loss = vmap(fn, in_dims=(None, 0, 0, 0))(theta, xs, ys, ws)
            else:
                xs = torch.stack([b[0] for b in batches])  # type: ignore[index]
                ys = torch.stack([b[1] for b in batches])  # type: ignore[index]
                local, loss = vmap(fn, in_dims=(None, 0, 0))(theta, xs, ys)
            outs = list(zip(local, loss, strict=True))
        else:
            outs = [fn(theta, *((self.agents[i].x, self.agents[i].y) if b is None else b))
                    for i, b in zip(participants, batches, strict=True)]
        reports = {}
        for i, (local_i, loss_i) in zip(participants, outs, strict=True):
            msg, bits = self.agents[i].message(method, local_i, float(weights[i]), self.n_agents)
            reports[i] = (msg, float(loss_i), bits)
        return reports

    def close(self) -> None:
        self.agents = []
