"""Training DEFT by OpenAI evolution strategies, in two stages, with fitness on any executor.

OpenAI-ES (Salimans et al. [2]_), as in GATES / DEFT [1]_: for a population of ``n`` mirrored
perturbations ``eps_i ~ N(0, I)`` of the flat parameters ``theta``, evaluate the cost
``c_i`` of ``theta + sigma * eps_i`` on the generation's training instances (the same
instances for every member), shape the fitness ``-c_i`` by **centred ranks** (ranks scaled to
``[-0.5, 0.5]``), and step Adam along ``g = sum_i u_i eps_i / (n * sigma)``.

* **Stage 1**: one single-expert (GATES) policy per expert gamma, each trained on instances
  of its own gamma.
* **Stage 2**: DEFT starts from them (expert ``k`` = stage-1 policy ``k``'s scorer; the shared
  embedding from the first) and trains embedding, gate and experts jointly on mixed gammas.

The population's fitness evaluations go through an executor with ``map(fn, items)``
(:class:`FitnessMap`): the platform's local process pool or Ray (``optiforge.platform
.executors``), or :class:`SerialMap` in process. The perturbations are drawn in this process
from ``(seed, stage, generation)``, and each evaluation is deterministic (one torch thread),
so every executor gives the same parameters for a seed. After every generation the whole
state goes to a :class:`Checkpointer`; :func:`train_deft` resumes from its latest state.

Defaults follow the papers: population 40, sigma 0.05, lr 0.01 (DEFT; GATES 0.001). The
number of generations is the caller's budget (papers: 2000-3000); deviation: no weight decay.

References
----------
.. [1] Y. Shen, G. Chen, H. Ma, M. Zhang, "Deft Scheduling of Dynamic Cloud Workflows with Varying
   Deadlines via Mixture-of-Experts", ICLR 2026 (arXiv 2606.01162).
.. [2] T. Salimans, J. Ho, X. Chen, S. Sidor, I. Sutskever, "Evolution Strategies as a Scalable
   Alternative to Reinforcement Learning", arXiv:1703.03864, 2017.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np
import torch

from optiforge.heuristics.checkpoints import Checkpointer
from optiforge.heuristics.scheduling.instances import EXPERT_GAMMAS, TEST_GAMMAS, train_instances
from optiforge.heuristics.scheduling.policy import DeftConfig, DeftPolicy
from optiforge.heuristics.scheduling.simulator import PENALTIES, simulate


class FitnessMap(Protocol):
    """Where fitness evaluations run: ``map(fn, items)`` returns ``[fn(x) for x in items]``."""

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]: ...


class SerialMap:
    """Evaluate in this process, one after another."""

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        return [fn(x) for x in items]


@dataclass(frozen=True)
class ESConfig:
    """OpenAI-ES settings (defaults: DEFT's)."""

    population: int = 40
    sigma: float = 0.05
    lr: float = 0.01
    instances: int = 1
    """Training instances per generation (shared by the population)."""
    workflows: int = 10
    """Workflows per training instance."""
    seed: int = 0
    penalty: str = "gates"

    def __post_init__(self) -> None:
        if isinstance(self.population, bool) or not isinstance(self.population, int) or \
                self.population < 2 or self.population % 2:
            raise ValueError(f"population: must be an even integer >= 2 (mirrored pairs), got {self.population!r}")
        if not self.sigma > 0:
            raise ValueError(f"sigma: must be positive, got {self.sigma!r}")
        if not self.lr > 0:
            raise ValueError(f"lr: must be positive, got {self.lr!r}")
        if self.instances < 1 or self.workflows < 1:
            raise ValueError("instances, workflows: must be >= 1")
        if self.penalty not in PENALTIES:
            raise ValueError(f"penalty: one of {', '.join(PENALTIES)}, got {self.penalty!r}")


def centred_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks of ``x`` scaled to ``[-0.5, 0.5]`` (the largest gets 0.5)."""
    ranks = np.empty(len(x))
    ranks[np.argsort(x, kind="stable")] = np.arange(len(x))
    return ranks / (len(x) - 1) - 0.5


_POLICIES: dict[tuple[Any, ...], DeftPolicy] = {}


def fitness(job: tuple[dict[str, Any], str, np.ndarray, list[tuple[float, int, int, int]]]) -> float:
    """Mean cost of a parameter vector on instances (runs in an executor worker).

    ``job`` = (policy config, penalty name, flat parameters, [(gamma, count, workflows, offset)]).
    """
    config, penalty, flat, specs = job
    key = (tuple(sorted(config.items())), penalty)
    if key not in _POLICIES:
        _POLICIES[key] = DeftPolicy(DeftConfig(**config), penalty=PENALTIES[penalty])
    policy = _POLICIES[key]
    policy.set_flat(flat)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same arithmetic in every worker: a seed gives one result
    try:
        costs = [simulate(inst, policy, penalty=PENALTIES[penalty]).cost
                 for gamma, count, n_wf, offset in specs
                 for inst in train_instances(gamma, count, n_workflows=n_wf, offset=offset)]
    finally:
        torch.set_num_threads(threads)
    return float(np.mean(costs))


class _Adam:
    def __init__(self, n: int, lr: float, beta1: float = 0.9, beta2: float = 0.999) -> None:
        self.m, self.v, self.t = np.zeros(n), np.zeros(n), 0
        self.lr, self.b1, self.b2 = lr, beta1, beta2

    def step(self, grad: np.ndarray) -> np.ndarray:
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * grad**2
        a = self.lr * np.sqrt(1 - self.b2**self.t) / (1 - self.b1**self.t)
        return a * self.m / (np.sqrt(self.v) + 1e-8)


def es_generation(theta: np.ndarray, adam: _Adam, config: DeftConfig, es: ESConfig,
                  specs: list[tuple[float, int, int, int]], noise_seed: Sequence[int],
                  executor: FitnessMap) -> tuple[np.ndarray, dict[str, float]]:
    """One OpenAI-ES generation: returns the new parameters and statistics."""
    half = es.population // 2
    eps = np.random.default_rng(list(noise_seed)).standard_normal((half, len(theta))).astype(np.float32)
    eps = np.concatenate([eps, -eps])  # mirrored sampling
    jobs = [(config.to_dict(), es.penalty, (theta + es.sigma * e).astype(np.float32), specs) for e in eps]
    costs = np.asarray(executor.map(fitness, jobs), dtype=float)
    u = centred_ranks(-costs)  # fitness = -cost
    grad = (u @ eps) / (es.population * es.sigma)
    theta = (theta + adam.step(grad)).astype(np.float32)
    return theta, {"cost_mean": float(costs.mean()), "cost_best": float(costs.min())}


@dataclass
class TrainState:
    """Everything a run needs to continue: the stage, generation, parameters and Adam moments."""

    stage: int  # 0..len(gammas)-1: stage 1 experts; len(gammas): stage 2
    generation: int
    theta: np.ndarray
    adam: dict[str, Any]
    experts: list[np.ndarray]
    history: list[dict[str, float]]

    def to_bytes(self) -> bytes:
        buf = io.BytesIO()
        torch.save({"format": "optiforge-deft-es-1", **asdict(self)}, buf)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> TrainState:
        blob = torch.load(io.BytesIO(data), weights_only=False)
        if not isinstance(blob, dict) or blob.pop("format", None) != "optiforge-deft-es-1":
            raise ValueError("checkpoint: not a DEFT training checkpoint")
        return cls(**blob)


def _stage2_init(experts: list[np.ndarray], config: DeftConfig, seed: int) -> np.ndarray:
    deft = DeftPolicy(config, seed=seed)
    single = DeftPolicy(DeftConfig(1, None), seed=seed)
    single.set_flat(experts[0])
    shared = {k: v for k, v in single.state_dict().items() if not k.startswith("experts.")}
    deft.load_state_dict(shared, strict=False)
    for k, flat in enumerate(experts[: config.experts]):
        single.set_flat(flat)
        deft.experts[k].load_state_dict(single.experts[0].state_dict())
    return deft.get_flat()


def train_deft(config: DeftConfig, generations: tuple[int, int], es: ESConfig | None = None, *,
               expert_gammas: Sequence[float] = EXPERT_GAMMAS, mixed_gammas: Sequence[float] = TEST_GAMMAS,
               executor: FitnessMap | None = None, checkpointer: Checkpointer | None = None,
               progress: Callable[[int, int, dict[str, float]], None] | None = None,
               experts: Sequence[np.ndarray] | None = None) -> DeftPolicy:
    """Train a DEFT policy (or, with ``DeftConfig(1, None)``, a single GATES expert).

    Parameters
    ----------
    config : DeftConfig
        The policy's shape. One expert: stage 2 only, on mixed gammas (the single-expert
        baseline "trained on the same mixed-gamma data").
    generations : (int, int)
        ES generations per stage-1 expert and for stage 2.
    es : ESConfig
        Population, sigma, lr, training instances.
    expert_gammas, mixed_gammas : sequence of float
        Stage-1 gamma of each expert; the gammas stage 2 samples from.
    executor : FitnessMap, optional
        Where the population is evaluated (default: in process).
    checkpointer : Checkpointer, optional
        Receives the state after every generation; its latest state is resumed from.
    progress : callable, optional
        ``progress(done, total, stats)`` after every generation.
    experts : sequence of np.ndarray, optional
        Stage-1 results to start stage 2 from (flat single-expert parameters, one per expert;
        e.g. ``TrainState.experts`` of another run), skipping stage 1: the gate ablations
        share one stage 1.

    Returns
    -------
    DeftPolicy
        The trained policy.
    """
    es = es or ESConfig()
    executor = executor or SerialMap()
    g1, g2 = (int(g) for g in generations)
    if g1 < 0 or g2 < 0:
        raise ValueError(f"generations: must be >= 0, got {generations!r}")
    if config.experts > 1 and len(expert_gammas) != config.experts:
        raise ValueError(f"expert_gammas: need one gamma per expert ({config.experts}), got {len(expert_gammas)}")
    n_stage1 = config.experts if config.experts > 1 else 0
    total = (0 if experts is not None else n_stage1 * g1) + g2
    single = DeftConfig(1, None)

    saved = checkpointer.latest() if checkpointer is not None else None
    if saved is not None:
        st = TrainState.from_bytes(saved)
    elif experts is not None and n_stage1:
        if len(experts) != n_stage1:
            raise ValueError(f"experts: need {n_stage1} stage-1 parameter vectors, got {len(experts)}")
        st = TrainState(stage=n_stage1, generation=0, theta=_stage2_init(list(experts), config, es.seed),
                        adam={}, experts=list(experts), history=[])
    else:
        first_cfg = single if n_stage1 else config
        st = TrainState(stage=0 if n_stage1 else n_stage1, generation=0,
                        theta=DeftPolicy(first_cfg, seed=es.seed).get_flat(), adam={}, experts=[], history=[])
    adam = _Adam(len(st.theta), es.lr)
    if st.adam:
        adam.m, adam.v, adam.t = st.adam["m"], st.adam["v"], st.adam["t"]

    while st.stage <= n_stage1:
        in_stage1 = st.stage < n_stage1
        budget = g1 if in_stage1 else g2
        cfg = single if in_stage1 else config
        while st.generation < budget:
            rng = np.random.default_rng([es.seed, st.stage, st.generation, 1])
            if in_stage1:
                gammas = [float(expert_gammas[st.stage])] * es.instances
            else:
                gammas = [float(g) for g in rng.choice(list(mixed_gammas), size=es.instances)]
            specs = [(g, 1, es.workflows, st.generation * es.instances + j) for j, g in enumerate(gammas)]
            st.theta, stats = es_generation(st.theta, adam, cfg, es, specs,
                                            (es.seed, st.stage, st.generation), executor)
            st.generation += 1
            stats.update(stage=float(st.stage), generation=float(st.generation))
            st.history.append(stats)
            st.adam = {"m": adam.m, "v": adam.v, "t": adam.t}
            if checkpointer is not None:
                checkpointer.save(f"s{st.stage:02d}-g{st.generation:06d}.ckpt", st.to_bytes())
            if progress is not None:
                progress(len(st.history), total, stats)
        if in_stage1:
            st.experts.append(st.theta)
            st.stage += 1
            st.generation = 0
            if st.stage == n_stage1:
                st.theta = _stage2_init(st.experts, config, es.seed)
            else:
                st.theta = DeftPolicy(single, seed=es.seed + st.stage).get_flat()
            adam = _Adam(len(st.theta), es.lr)
            st.adam = {}
        else:
            break
    policy = DeftPolicy(config, penalty=PENALTIES[es.penalty])
    policy.set_flat(st.theta)
    return policy
