"""Decentralized SGD with scheduled communication and a single global merge (Zhu et al. 2026).

``m`` agents each hold a model and a non-IID shard. Every round each agent takes
``local_steps`` SGD steps on its own mini-batches, then the round's topology (from the
:class:`~.schedule.Schedule`) mixes the models: ``theta_i <- sum_j W_ij theta_j``. After the
last round, optionally, one global merge gives every agent ``theta_bar = (1/m) sum_k theta_k``.

The *merged model* ``theta_bar`` is measured throughout, whatever the schedule: that is the
quantity whose convergence Zhu et al. prove matches parallel SGD's, and whose accuracy the
final merge hands to every agent. With no communication at all, ``theta_bar`` is an average of
models trained apart ("non-mergeable"); with gossip at ``R = 0.2`` it stays mergeable.

Parallel SGD is the schedule with an all-reduce every round (``Schedule(base=AllReduce())``).

References
----------
Zhu, Zhang, Wang, Zhou & Wang, "On the surprising effectiveness of a single global merging in
decentralized learning", ICLR 2026 (arXiv 2507.06542); the communication cost
``O(m R P T + 2 m P)`` of gossip plus one merge is what ``bits`` counts (see :mod:`.topology`).

Deviations: the local optimizer is SGD with optional heavy-ball momentum (the paper also uses
AdamW); momentum buffers stay with their agent and are never mixed (as in the paper's code).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from optiforge import validation as check

from .data import Dataset
from .engine import Engine
from .evaluate import Progress, RunResult, accuracy_and_loss
from .model import FlatModel
from .schedule import Schedule
from .topology import AllReduce

FLOAT_BITS = 32
INITS = ("shared", "independent")


@dataclass(frozen=True)
class DecentralizedConfig:
    """Hyper-parameters of a decentralized run (``rounds`` x ``local_steps`` SGD steps per agent)."""

    rounds: int = 100
    local_steps: int = 5
    batch_size: int = 32
    lr: float = 0.1
    momentum: float = 0.0
    weight_decay: float = 0.0
    schedule: Schedule = field(default_factory=Schedule)
    eval_every: int = 10
    seed: int = 0

    def __post_init__(self) -> None:
        check.integer(self.rounds, "rounds", minimum=1)
        check.integer(self.local_steps, "local_steps", minimum=1)
        check.integer(self.batch_size, "batch_size", minimum=1)
        check.positive(self.lr, "lr")
        check.real(self.momentum, "momentum", minimum=0.0, maximum=0.999)
        check.nonneg(self.weight_decay, "weight_decay")
        if not isinstance(self.schedule, Schedule):
            raise TypeError(f"schedule: expected a Schedule, got {type(self.schedule).__name__}")
        check.integer(self.eval_every, "eval_every", minimum=1)
        check.integer(self.seed, "seed")

    def describe(self) -> dict:
        d = asdict(self)
        s = self.schedule
        d["schedule"] = {"base": asdict(s.base), "windows": None if s.windows is None else asdict(s.windows),
                         "window": asdict(s.window), "final_merge": s.final_merge}
        return d


def initial_parameters(model: FlatModel, m: int, init: str, seed: int) -> torch.Tensor:
    """``(m, P)`` starting points: the module's own parameters for every agent (``shared``), or
    a fresh draw of the module's initialiser per agent (``independent``, seeded)."""
    check.choice(init, "init", INITS)
    theta0 = model.initial()
    if init == "shared":
        return theta0.expand(m, -1).clone()
    rows = []
    gen_state = torch.random.get_rng_state()
    try:
        for i in range(m):
            torch.manual_seed(seed * 1000 + i)
            for module in model.module.modules():
                if hasattr(module, "reset_parameters") and module is not model.module:
                    module.reset_parameters()
            rows.append(model.initial())
    finally:
        torch.random.set_rng_state(gen_state)
        model.load_into(theta0)
    return torch.stack(rows)


def train_decentralized(engine: Engine, model: FlatModel, data: Dataset,
                        shards: list[np.ndarray], config: DecentralizedConfig, *,
                        init: str = "shared", progress: Progress | None = None) -> RunResult:
    """Run decentralized SGD on ``engine``; return curves of the merged and local models.

    Parameters
    ----------
    engine : Engine
        Where the agents run (:class:`~.engine.LocalEngine` or the Ray engine).
    model : FlatModel
        The architecture and initial point.
    data : Dataset
        Train split (sharded) and test split (for measuring).
    shards : list of np.ndarray
        Indices of each agent's training samples (e.g. :func:`~.data.dirichlet_partition`).
    config : DecentralizedConfig
    init : {"shared", "independent"}
        One starting point for all agents (the usual decentralized-SGD setting) or one each.
    progress : callable, optional
        ``progress(done, total)`` after each round.

    Returns
    -------
    RunResult
        ``curves``: ``round``, ``bits``, ``merged_acc``, ``merged_loss``, ``local_acc_mean``,
        ``local_acc_min``, ``consensus`` (mean squared distance to the average), and
        ``comm`` (1 in rounds that communicated). ``final``: ``accuracy`` (what the agents end
        with: the merged model after a final merge, else their mean accuracy),
        ``merged_acc``, ``local_acc_mean`` (before any final merge), ``bits``.
        ``theta``: the merged model.
    """
    m = len(shards)
    x_test, y_test = torch.as_tensor(data.x_test), torch.as_tensor(data.y_test)
    engine.start(model, [(data.x_train[s], data.y_train[s]) for s in shards],
                 initial_parameters(model, m, init, config.seed), config.seed)
    rng = np.random.default_rng([config.seed, 0xD5])  # the topology's draws: the driver's alone
    plan = config.schedule.plan(config.rounds)
    curves: dict[str, list[float]] = {k: [] for k in ("round", "bits", "merged_acc", "merged_loss",
                                                      "local_acc_mean", "local_acc_min", "consensus")}
    curves["comm"] = []
    bits = 0

    def record(t: int) -> dict[str, float]:
        thetas = engine.parameters()
        merged = thetas.mean(0, keepdim=True)
        m_acc, m_loss = accuracy_and_loss(model, merged, x_test, y_test)
        l_acc, _ = accuracy_and_loss(model, thetas, x_test, y_test)
        row = {"round": t, "bits": bits, "merged_acc": float(m_acc[0]), "merged_loss": float(m_loss[0]),
               "local_acc_mean": float(l_acc.mean()), "local_acc_min": float(l_acc.min()),
               "consensus": float(((thetas - merged) ** 2).sum(1).mean())}
        for k, v in row.items():
            curves[k].append(v)
        return row

    record(0)
    for t, topology in enumerate(plan, start=1):
        engine.local_sgd(config.local_steps, config.batch_size, config.lr, config.momentum,
                         config.weight_decay)
        w = topology.matrix(m, rng)
        if w is not None:
            engine.mix(w)
        bits += FLOAT_BITS * topology.floats_sent(w, model.size)
        curves["comm"].append(int(w is not None))
        if t % config.eval_every == 0 or t == config.rounds:
            record(t)
        if progress is not None:
            progress(t, config.rounds)
    last = {k: curves[k][-1] for k in ("merged_acc", "merged_loss", "local_acc_mean", "local_acc_min")}
    final = {**last, "accuracy": last["local_acc_mean"]}
    if config.schedule.final_merge:
        merge = AllReduce()
        w = merge.matrix(m, rng)
        engine.mix(w)
        bits += FLOAT_BITS * merge.floats_sent(w, model.size)
        final["accuracy"] = last["merged_acc"]
    final["bits"] = bits
    final["rounds_communicating"] = int(sum(curves["comm"]))
    theta = engine.parameters().mean(0)
    return RunResult("decentralized", curves, final, theta, config.describe())
