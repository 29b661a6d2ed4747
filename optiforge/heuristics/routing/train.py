"""Training LMask's policy: REINFORCE with a shared (POMO-style) baseline over penalised rewards.

For each batch of ``B`` fresh instances the policy samples ``G`` rollouts per instance through
the LazyMask decoder in training mode (budget ``R_train``, then the relaxation), and::

    R~  = -length - rho_c * sum_i max(0, T_i - l_i) - rho_n * #violated nodes
    A   = R~ - mean over the G rollouts of the instance
    loss = -mean(A * sum_t log p(pi_t)) - entropy_coef * mean(sum_t H_t)

(:func:`optiforge.optim.policy_gradient.reinforce_loss`, ``baseline="group"``). Adam, LMask's
defaults lr 1e-4 and weight decay 1e-6. A checkpoint is written after every epoch (weights,
optimiser, epoch, history) to a :class:`~optiforge.heuristics.checkpoints.Checkpointer` (the
CLI's keeps them as artifacts of a campaign in the store) or to the model file, and
:func:`train` resumes from the latest.

Deviation from [1]_: ``G`` defaults to ``min(n - 1, 16)`` samples (LMask: ``n``) and batches
are small, so that short CPU runs make progress; no learning-rate milestones.

References
----------
.. [1] T. Li, H. Zou, J. Wu, Z. Wen, "Learn to Solve Constrained Routing Problems with Lazy
   Masking", ICLR 2026, arXiv:2505.17938 (section 4.2; ``LMaskBacktrackingPenaltyModel``).
.. [2] Y.-D. Kwon et al., "POMO: Policy Optimization with Multiple Optima for Reinforcement
   Learning", NeurIPS 2020.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from optiforge.heuristics.checkpoints import Checkpointer
from optiforge.heuristics.routing import lazymask as lm
from optiforge.heuristics.routing.instances import HARDNESS, PROBLEMS, generate
from optiforge.heuristics.routing.policy import (
    PolicyChooser,
    PolicyConfig,
    RoutingPolicy,
    save_policy,
)
from optiforge.heuristics.routing.validate import check_tours
from optiforge.optim.policy_gradient import reinforce_loss


@dataclass(frozen=True)
class TrainConfig:
    """What to train on and how (see the module docstring)."""

    problem: str = "tsptw"
    hardness: str = "hard"
    n: int = 20
    epochs: int = 10
    steps_per_epoch: int = 20
    batch_size: int = 16
    samples: int | None = None
    lr: float = 1e-4
    weight_decay: float = 1e-6
    budget: int = 50
    rho_c: float = 1.0
    rho_n: float = 1.0
    entropy_coef: float = 0.01
    seed: int = 0
    policy: PolicyConfig = field(default_factory=PolicyConfig)

    def __post_init__(self) -> None:
        if self.problem not in PROBLEMS:
            raise ValueError(f"problem: expected one of {', '.join(PROBLEMS)}, got {self.problem!r}")
        if self.hardness not in HARDNESS[self.problem]:
            raise ValueError(f"hardness: {self.problem} has {', '.join(HARDNESS[self.problem])}, got {self.hardness!r}")
        for name in ("n", "epochs", "steps_per_epoch", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (3 if name == "n" else 1):
                raise ValueError(f"{name}: expected a positive int, got {value!r}")
        if self.samples is not None and (not isinstance(self.samples, int) or self.samples < 2):
            raise ValueError(f"samples: expected an int >= 2 (the shared baseline needs two), got {self.samples!r}")
        if self.policy.problem != self.problem:
            object.__setattr__(self, "policy", PolicyConfig(**{**asdict(self.policy), "problem": self.problem}))

    @property
    def group(self) -> int:
        """Rollouts per instance ``G``."""
        return self.samples or min(self.n - 1, 16)


def penalised_reward(length: np.ndarray, lateness: np.ndarray, violated: np.ndarray,
                     rho_c: float, rho_n: float) -> np.ndarray:
    """``-length - rho_c * lateness - rho_n * violated`` (LMask's ``combined_penalty``)."""
    return -length - rho_c * lateness - rho_n * violated


def train_step(policy: RoutingPolicy, optimizer: torch.optim.Optimizer, config: TrainConfig,
               rng: np.random.Generator, generator: torch.Generator) -> dict[str, float]:
    """One REINFORCE update on a fresh batch; returns its statistics."""
    ins = generate(config.problem, config.hardness, config.n, config.batch_size,
                   seed=int(rng.integers(2**62)))
    G = config.group
    rollouts = ins.subset(np.repeat(np.arange(ins.size), G))
    policy.train()
    chooser = PolicyChooser(policy, rollouts, sample=True, generator=generator)
    result = lm.decode(rollouts, chooser, lookahead=2, budget=config.budget, relax_on_budget=True)
    check = check_tours(rollouts, result.tours)
    done = result.status == lm.COMPLETE  # proven-infeasible instances carry no signal
    reward = np.where(done, penalised_reward(np.nan_to_num(check.length), check.lateness,
                                             check.violated, config.rho_c, config.rho_n), 0.0)
    mask = torch.as_tensor(done, dtype=torch.float32)[:, None].expand(-1, config.n).reshape(ins.size, G, -1)
    logp = chooser.logp.reshape(ins.size, G, -1)
    rewards = torch.as_tensor(reward, dtype=torch.float32).reshape(ins.size, G)
    loss = reinforce_loss(logp, rewards, mask, baseline="group")
    entropy = (chooser.entropy.sum(dim=1) * mask[:, :, 0].reshape(-1)).mean()
    total = loss - config.entropy_coef * entropy
    optimizer.zero_grad()
    total.backward()
    torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    optimizer.step()
    return {"loss": float(loss.detach()), "reward": float(reward[done].mean()) if done.any() else float("nan"),
            "feasible_pct": 100.0 * float(check.feasible.mean()),
            "backtracks": float(result.backtracks.mean())}


class _FileCheckpointer:
    """One file that is both the newest training state and the model (``train(config, out)``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def save(self, name: str, data: bytes) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(self.path)  # a crash mid-write leaves the previous epoch's state

    def latest(self) -> bytes | None:
        return self.path.read_bytes() if self.path.is_file() else None


def _to_bytes(blob: dict[str, object]) -> bytes:
    buf = io.BytesIO()
    torch.save(blob, buf)
    return buf.getvalue()


def read_state(data: bytes) -> dict[str, object]:
    """A training state as :func:`train` hands it to its checkpointer.

    Parameters
    ----------
    data : bytes
        The checkpoint's bytes.

    Returns
    -------
    dict
        ``config`` (the policy's), ``state_dict``, ``optimizer``, ``epoch`` (epochs done),
        ``history`` and ``train_config`` (the run's :class:`TrainConfig` fields but the policy;
        ``epochs`` is the count the run was aiming for).

    Raises
    ------
    ValueError
        If ``data`` is not such a state.
    """
    try:
        blob = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        missing = {"config", "state_dict", "optimizer", "epoch", "history", "train_config"} - set(blob)
        if missing:
            raise KeyError(f"missing {', '.join(sorted(missing))}")
        PolicyConfig(**blob["config"])
    except Exception as exc:  # noqa: BLE001 - any unreadable state is the same user error
        raise ValueError(f"checkpoint: not a routing training state ({exc})") from exc
    return blob


def _resumed_state(data: bytes, config: TrainConfig) -> dict[str, object]:
    """The training state in ``data``, checked against ``config`` (a ValueError if it differs)."""
    blob = read_state(data)
    saved = PolicyConfig(**blob["config"])
    if saved.problem != config.problem:
        raise ValueError(f"checkpoint: the run to resume was trained for {saved.problem}, not {config.problem}")
    if saved != config.policy:
        raise ValueError("checkpoint: the run to resume holds a policy of another architecture; "
                         "start a new run (a new path or campaign)")
    return blob


def train(config: TrainConfig, out: str | Path | None = None, *, checkpointer: Checkpointer | None = None,
          resume: bool = True,
          progress: Callable[[int, int, dict[str, float]], None] | None = None) -> list[dict[str, float]]:
    """Train (or resume training) a policy, checkpointing after every epoch.

    Parameters
    ----------
    config : TrainConfig
        Problem, sizes and hyper-parameters.
    out : str or Path, optional
        The model file (read back with :func:`~optiforge.heuristics.routing.policy.load_policy`).
        Without ``checkpointer`` it is also the checkpoint: rewritten after every epoch with the
        training state and resumed from; with one, it is written once, when training ends.
    checkpointer : Checkpointer, optional
        Where each epoch's state goes (``epoch-000001.ckpt``, ...; weights, optimiser, epoch,
        history); the CLI's keeps them in the store. Training resumes from its latest state.
    resume : bool
        Continue from the latest state if there is one (its policy must match ``config``'s
        problem and architecture).
    progress : callable, optional
        ``progress(step, total_steps, stats)`` after every update.

    Returns
    -------
    list of dict
        Per-epoch means of the step statistics (the whole history, resumed epochs included).

    Raises
    ------
    ValueError
        If neither ``out`` nor ``checkpointer`` is given, or the state to resume was trained for
        another problem or architecture.
    """
    if out is None and checkpointer is None:
        raise ValueError("out: give a model path or a checkpointer (or both)")
    store = checkpointer if checkpointer is not None else _FileCheckpointer(Path(out))  # type: ignore[arg-type]
    torch.manual_seed(config.seed)
    policy = RoutingPolicy(config.policy)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    history: list[dict[str, float]] = []
    start = 0
    data = store.latest() if resume else None
    if data is not None:
        blob = _resumed_state(data, config)
        policy.load_state_dict(blob["state_dict"])
        optimizer.load_state_dict(blob["optimizer"])
        history, start = list(blob["history"]), int(blob["epoch"])
    train_config = {k: v for k, v in asdict(config).items() if k != "policy"}
    total = config.epochs * config.steps_per_epoch
    for epoch in range(start, config.epochs):
        rng = np.random.default_rng([config.seed, epoch])
        generator = torch.Generator().manual_seed(config.seed * 100_003 + epoch)
        stats = []
        for step in range(config.steps_per_epoch):
            stats.append(train_step(policy, optimizer, config, rng, generator))
            if progress is not None:
                progress(epoch * config.steps_per_epoch + step + 1, total, stats[-1])
        history.append({k: float(np.nanmean([s[k] for s in stats])) for k in stats[0]})
        store.save(f"epoch-{epoch + 1:06d}.ckpt", _to_bytes(
            {"config": asdict(policy.config), "state_dict": policy.state_dict(),
             "optimizer": optimizer.state_dict(), "epoch": epoch + 1, "history": history,
             "train_config": train_config}))
    if checkpointer is not None and out is not None:
        # The model users evaluate: weights and config, no optimiser state.
        save_policy(policy, out, epoch=len(history), history=history, train_config=train_config)
    return history
