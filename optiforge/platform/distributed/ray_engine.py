"""The Ray engine: every agent is a Ray actor; parameters travel through Ray's object store.

It runs the same algorithm description as the in-process engine
(:mod:`optiforge.optim.distributed`): each actor holds one
:class:`~optiforge.optim.distributed.Agent` (its shard, batch stream, compressor randomness,
method state) and its own parameters, and applies the same per-agent functions
(:func:`~optiforge.optim.distributed.sgd_steps`, :func:`~optiforge.optim.distributed.client_work`,
the method's client rule) to them. With the same seed both engines give the same run.

Communication:

- point-to-point mixing (gossip, ring, graph): actor ``j`` publishes ``theta_j`` as an object;
  actor ``i`` is handed the references of its neighbours and Ray brings those objects to it —
  the driver never holds the parameters;
- all-reduce (windows, the final merge): Ray's collective API (``ray.util.collective``,
  the torch-gloo backend) when it is available, else the object store as above;
- federated rounds: the server's ``theta`` is put once into the object store and read by every
  participating actor; each returns its compressed message.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import torch

from optiforge.optim.distributed import Agent, FederatedMethod, FlatModel, client_work, sgd_steps
from optiforge.optim.distributed.model import agent_seeds
from optiforge.platform.executors import start_ray


class _AgentActor:
    """Body of one agent's actor: an :class:`Agent` plus its parameters.

    :meth:`reset` gives it a new agent, so one set of actors serves run after run.
    """

    def __init__(self) -> None:
        torch.set_num_threads(1)  # many actors share few cores: one thread each
        self.group: str | None = None

    def reset(self, model: FlatModel, x: np.ndarray, y: np.ndarray, theta: torch.Tensor,
              sampler_seed: np.random.SeedSequence, compress_seed: int) -> None:
        self.model = model
        self.agent = Agent(x, y, sampler_seed, compress_seed)
        self.theta = theta.clone()
        self.buf = torch.zeros_like(self.theta)

    def local_sgd(self, steps: int, batch_size: int, lr: float, momentum: float,
                  weight_decay: float) -> None:
        xs, ys = self.agent.sgd_batches(steps, batch_size)
        self.theta, self.buf = sgd_steps(self.model, self.theta, self.buf, xs, ys, lr, momentum,
                                         weight_decay)

    def params(self) -> torch.Tensor:
        return self.theta

    def mix(self, weights: list[float], *thetas: torch.Tensor) -> None:
        out = torch.zeros_like(self.theta)
        for w, t in zip(weights, thetas, strict=True):
            out = out + w * t
        self.theta = out

    def join_group(self, world: int, rank: int, group: str) -> None:
        import ray.util.collective as col

        col.init_collective_group(world, rank, backend="gloo", group_name=group)
        self.group = group

    def allreduce_mean(self, world: int) -> None:
        import ray.util.collective as col

        col.allreduce(self.theta, group_name=self.group)
        self.theta = self.theta / world

    def leave_group(self) -> None:
        if self.group is not None:
            import ray.util.collective as col

            col.destroy_collective_group(self.group)
            self.group = None

    def client(self, method: FederatedMethod, theta: torch.Tensor, weight: float,
               n_clients: int) -> tuple[torch.Tensor, float, int]:
        batch = self.agent.work_batches(method.local)
        xs, ys = (self.agent.x, self.agent.y) if batch is None else batch
        local, loss = client_work(self.model, method.local, theta, xs, ys)
        msg, bits = self.agent.message(method, local, weight, n_clients)
        return msg, float(loss), bits


class RayEngine:
    """Each agent in a Ray actor (see the module docstring).

    Parameters
    ----------
    address : str, optional
        A running Ray cluster (``"auto"``, ``"ray://host:10001"``). ``None`` uses the Ray
        already initialised in this process, or starts a local one with ``num_cpus``.
    num_cpus : int, optional
        CPUs of a locally started Ray (default: this machine's). The actors share them:
        each reserves ``CPUs / agents`` (at most one), so a second engine on the same Ray
        waits until the first one's actors are stopped (:meth:`close`).
    collective : bool
        All-reduce with ``ray.util.collective`` (gloo) when available; ``False`` always goes
        through the object store.
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 collective: bool = True) -> None:
        self._ray, self._owns_ray = start_ray("the 'ray' engine", num_cpus=num_cpus, address=address)
        self.collective = bool(collective)
        self._actors: list[Any] = []
        self._group: str | None = None
        self._method_ref: tuple[int, Any] | None = None

    @property
    def n_agents(self) -> int:
        return len(self._actors)

    def start(self, model: FlatModel, shards: list[tuple[np.ndarray, np.ndarray]],
              init: torch.Tensor, seed: int) -> None:
        ray = self._ray
        m = len(shards)
        if len(self._actors) != m:  # same size: the actors (and their group) are reused
            self._stop_actors()
            self._spawn(m)
        self._method_ref = None
        model_ref = ray.put(model)
        ray.get([actor.reset.remote(model_ref, x, y, init[i], s_seed, c_seed)
                 for i, (actor, (x, y), (s_seed, c_seed))
                 in enumerate(zip(self._actors, shards, agent_seeds(seed, m), strict=True))])

    def _spawn(self, m: int) -> None:
        ray = self._ray
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        actor_cls = ray.remote(num_cpus=min(1.0, cpus / m))(_AgentActor)
        self._actors = [actor_cls.remote() for _ in range(m)]
        if self.collective and m > 1 and self._gloo_available():
            group = f"optiforge-{uuid.uuid4().hex[:12]}"
            ray.get([a.join_group.remote(m, rank, group) for rank, a in enumerate(self._actors)])
            self._group = group

    @staticmethod
    def _gloo_available() -> bool:
        try:
            import ray.util.collective as col

            return bool(col.gloo_available())
        except ImportError:
            return False

    def local_sgd(self, steps: int, batch_size: int, lr: float, momentum: float,
                  weight_decay: float) -> None:
        self._ray.get([a.local_sgd.remote(steps, batch_size, lr, momentum, weight_decay)
                       for a in self._actors])

    def mix(self, w: np.ndarray) -> None:
        m = self.n_agents
        # The average: one all-reduce, unless ``collective`` was turned off after the actors
        # joined their group (then the object store, in the in-process engine's order).
        if self.collective and self._group is not None and np.all(w == w.flat[0]):
            self._ray.get([a.allreduce_mean.remote(m) for a in self._actors])
            return
        refs = [a.params.remote() for a in self._actors]  # each theta_j, once, in the store
        calls = []
        for i, actor in enumerate(self._actors):
            cols = np.flatnonzero(w[i])
            if len(cols) == 1 and cols[0] == i and w[i, i] == 1.0:
                continue  # an agent that talks to nobody keeps its model
            calls.append(actor.mix.remote([float(w[i, j]) for j in cols], *[refs[j] for j in cols]))
        self._ray.get(calls)

    def parameters(self) -> torch.Tensor:
        return torch.stack(self._ray.get([a.params.remote() for a in self._actors]))

    def client_round(self, method: FederatedMethod, theta: torch.Tensor, weights: np.ndarray,
                     participants: list[int]) -> dict[int, tuple[torch.Tensor, float, int]]:
        if not participants:
            return {}
        ray = self._ray
        if self._method_ref is None or self._method_ref[0] != id(method):
            self._method_ref = (id(method), ray.put(method))
        theta_ref = ray.put(theta)  # one copy in the store, read by every participant
        outs = ray.get([self._actors[i].client.remote(self._method_ref[1], theta_ref,
                                                      float(weights[i]), self.n_agents)
                        for i in participants])
        return dict(zip(participants, outs, strict=True))

    def _stop_actors(self) -> None:
        ray, actors, self._actors = self._ray, self._actors, []
        if self._group is not None:
            try:
                ray.get([a.leave_group.remote() for a in actors], timeout=30)
            except Exception:  # noqa: BLE001 - a dead actor has no group left to leave
                pass
            self._group = None
        for actor in actors:
            ray.kill(actor)
        self._method_ref = None

    def close(self) -> None:
        self._stop_actors()
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
            self._owns_ray = False

    def __enter__(self) -> RayEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
