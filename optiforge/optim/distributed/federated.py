"""Federated learning with compressed uploads: ADI (agnostic DIANA) and the FedAvg, DIANA and
EF21 baselines, as client and server rules that any engine runs.

A round: the server sends ``theta`` (and client ``i``'s weight ``pi_i``) to the clients that
participate (each independently with probability ``p``); each computes its local work at
``theta`` — a gradient (ADI, DIANA, EF21) or a few local SGD steps (FedAvg) — and uploads one
compressed vector (plus, for ADI, the scalar loss ``f_i(theta)``); the server updates
``theta`` (and ``pi``). :meth:`client` runs on the client (in process or in a Ray actor),
:meth:`server` on the driver.

ADI — "Unlocking the potential of weighting methods in federated learning through
communication compression" (ICLR 2026, OpenReview zOWljZMbCm; our notes: research/optimizers.md
§9). It solves the agnostic problem ``min_theta max_{pi in Lambda} sum_i pi_i f_i(theta)`` with
``Lambda = {pi in simplex : pi_i <= a/M}``, ``a in [1, M]``:

- client ``i``: ``Delta_i = M pi_i grad f_i(theta) - h_i``, uploads ``Q(Delta_i)`` (an unbiased
  compressor of variance ``omega``) and ``f_i(theta)``; then ``h_i <- h_i + beta Q(Delta_i)``;
- server: ``g^k = h + (1/(M p)) sum_{i in S} Q(Delta_i)``, ``h <- h + (beta/M) sum_{i in S} Q(Delta_i)``
  (``h`` stays the mean of the ``h_i``), the optimistic step
  ``theta <- theta - gamma [(1 + alpha) g^k - alpha g^{k-1}]``, and the KL mirror-ascent step
  ``pi <- argmin_{pi in Lambda} { -gamma_pi <p_hat, pi> + KL(pi, pi^k) }`` with
  ``p_hat = (1 + alpha) f(theta^k) - alpha f(theta^{k-1})``, the vector of reported losses.

``a = 1`` pins ``pi`` to the uniform weights (plain averaging) and ``alpha = 0`` removes the
optimism: ADI is then exactly DIANA (Mishchenko, Gorbunov, Takáč & Richtárik, arXiv 1901.09269).

Deviations and choices, stated:

- ``M pi_i`` (not ``pi_i``) scales the client's gradient, so that ``g`` estimates
  ``sum_i pi_i grad f_i`` through DIANA's *mean* of messages (derived, check).
- ``beta = 1 / (1 + omega)`` (DIANA's choice; the notes' ``1/omega`` is undefined without
  compression and about equal for large ``omega``).
- The optimism is applied to the loss vector as to the gradient (our reading of "p is built
  from the scalar losses"; optimistic gradient descent-ascent updates both players alike).
- Partial participation: the compressed differences are scaled by ``1/p`` (the notes'
  ``eta_i / p``); a client that did not take part this round keeps its last reported loss in
  ``p_hat`` (the server has nothing newer).

EF21 — Richtárik, Sokolov & Fatkhullin, "EF21: a new, simpler, theoretically better, and
practically faster error feedback", NeurIPS 2021: client ``c_i = C(grad f_i(theta) - g_i)``,
``g_i <- g_i + c_i``; server ``g <- g + (1/M) sum c_i``, ``theta <- theta - gamma g``; with a
contractive ``C`` (top-k; an unbiased ``Q`` is made contractive as ``Q / (1 + omega)``).
Started from ``g_i = 0``; partial participation as EF21-PP (absent clients keep ``g_i``).

FedAvg — McMahan et al., "Communication-efficient learning of deep networks from decentralized
data", AISTATS 2017: ``local_steps`` of SGD from ``theta``, upload ``Q(theta_i - theta)``,
server adds the sample-size-weighted mean of the participants' deltas (times ``server_lr``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import torch

from optiforge import validation as check

from .compressors import Compressor, Identity
from .data import Dataset
from .evaluate import Progress, RunResult, accuracy_and_loss, per_shard
from .model import FlatModel

if TYPE_CHECKING:  # the engines run these methods; only their type is needed here
    from .engine import Engine

FLOAT_BITS = 32
LOSS_BITS = FLOAT_BITS  # ADI's scalar loss, one float32


@dataclass(frozen=True)
class LocalWork:
    """What a client computes at ``theta``: a gradient (``steps = 0``) or ``steps`` SGD steps.

    ``batch_size = None`` uses the client's whole shard (exact local gradients).
    """

    steps: int = 0
    lr: float = 0.0
    batch_size: int | None = None

    def __post_init__(self) -> None:
        check.integer(self.steps, "local_steps", minimum=0)
        if self.batch_size is not None:
            check.integer(self.batch_size, "batch_size", minimum=1)
        if self.steps:
            check.positive(self.lr, "client_lr")
            if self.batch_size is None:
                raise ValueError("batch_size: local SGD steps need a batch size")


@runtime_checkable
class FederatedMethod(Protocol):
    """A federated method: its client rule (run by an engine) and its server rule."""

    name: str
    local: LocalWork
    compressor: Compressor

    def client_state(self, n_params: int) -> dict[str, torch.Tensor]:
        """The state one client keeps between rounds."""
        ...

    def client(self, state: dict[str, torch.Tensor], local: torch.Tensor, weight: float,
               n_clients: int, generator: torch.Generator) -> tuple[torch.Tensor, int]:
        """The message (and its uplink bits) for ``local`` (gradient or model delta); updates
        ``state`` in place."""
        ...

    def server_state(self, theta: torch.Tensor, n_clients: int,
                     sizes: np.ndarray) -> dict[str, Any]:
        ...

    def server(self, state: dict[str, Any], theta: torch.Tensor, messages: dict[int, torch.Tensor],
               losses: dict[int, float], participation: float) -> torch.Tensor:
        """The next ``theta`` from the participants' messages (client id -> message)."""
        ...

    def weights(self, state: dict[str, Any]) -> np.ndarray:
        """The clients' current weights ``pi`` (sent with ``theta``)."""
        ...

    def downlink_bits(self, n_params: int) -> int:
        """Bits the server sends one participant per round (``theta``, and ``pi_i`` for ADI)."""
        ...


# --------------------------------------------------------------------------- the pi step

def project_capped_simplex_kl(w: np.ndarray, cap: float) -> np.ndarray:
    """KL projection of positive ``w`` onto ``{pi in simplex : pi_i <= cap}``.

    Minimises ``KL(pi, w)`` over the capped simplex. The KKT conditions give
    ``pi_i = min(cap, lam w_i)`` with ``lam`` set by ``sum pi = 1``: cap the largest entries one
    by one until the rescaled rest fit under the cap. Needs ``cap * len(w) >= 1``.
    """
    w = np.asarray(w, dtype=np.float64)
    m = len(w)
    if cap * m < 1.0 - 1e-12:
        raise ValueError(f"cap: {cap} x {m} clients < 1, the capped simplex is empty")
    order = np.argsort(-w, kind="stable")
    sorted_w = w[order]
    tail = np.cumsum(sorted_w[::-1])[::-1]  # tail[j] = sum of sorted_w[j:]
    pi = np.empty(m)
    for j in range(m):  # j entries capped
        lam = (1.0 - j * cap) / tail[j]
        if lam * sorted_w[j] <= cap * (1 + 1e-12):
            pi[order[:j]] = cap
            pi[order[j:]] = lam * sorted_w[j:]
            return pi
    pi[:] = cap  # cap * m == 1: the only feasible point
    return pi


def mirror_ascent_step(pi: np.ndarray, p_hat: np.ndarray, lr: float, cap: float) -> np.ndarray:
    """``argmin_{pi' in Lambda} {-lr <p_hat, pi'> + KL(pi', pi)}``: an exponentiated step,
    then the KL projection onto the capped simplex (computed in the log domain for stability)."""
    logits = np.log(np.maximum(pi, 1e-300)) + lr * np.asarray(p_hat, dtype=np.float64)
    w = np.exp(logits - logits.max())
    return project_capped_simplex_kl(w / w.sum(), cap)


# --------------------------------------------------------------------------- methods

def _stack(messages: dict[int, torch.Tensor], like: torch.Tensor) -> torch.Tensor:
    """Sum of the messages in client order (a fixed order: both engines add alike)."""
    total = torch.zeros_like(like)
    for i in sorted(messages):
        total = total + messages[i]
    return total


@dataclass(frozen=True)
class ADI:
    """Agnostic DIANA (see the module docstring). ``a = 1, alpha = 0`` is DIANA.

    Parameters
    ----------
    lr : float
        Server step ``gamma_theta``.
    pi_lr : float
        Mirror-ascent step ``gamma_pi`` on the client weights.
    a : float
        Cap ``pi_i <= a / M``, ``1 <= a <= M`` (``a = 1``: plain averaging).
    alpha : float
        Optimism of the server step (1 in the paper's theory; 0: plain steps).
    compressor : Compressor
        An unbiased compressor (rand-k, natural, none).
    batch_size : int, optional
        Client mini-batch; ``None`` for exact local gradients.
    beta : float, optional
        Shift step; ``None`` means ``1 / (1 + omega)``.
    """

    lr: float = 0.1
    pi_lr: float = 0.2
    a: float = 2.0
    alpha: float = 1.0
    compressor: Compressor = field(default_factory=Identity)
    batch_size: int | None = None
    beta: float | None = None
    name: str = "adi"

    def __post_init__(self) -> None:
        check.positive(self.lr, "lr")
        check.nonneg(self.pi_lr, "pi_lr")
        check.real(self.a, "a", minimum=1.0)
        check.nonneg(self.alpha, "alpha")
        if not isinstance(self.compressor, Compressor):
            raise TypeError(f"compressor: expected a Compressor, got {type(self.compressor).__name__}")
        if not self.compressor.unbiased:
            raise ValueError(f"compressor: {self.name.upper()} needs an unbiased compressor "
                             f"(randk, natural, none); {self.compressor.name} is biased: use ef21")
        if self.beta is not None:
            check.real(self.beta, "beta", minimum=0.0, maximum=1.0)
        LocalWork(0, 0.0, self.batch_size)  # validates batch_size

    @property
    def local(self) -> LocalWork:
        return LocalWork(0, 0.0, self.batch_size)

    @property
    def sends_loss(self) -> bool:
        return self.a > 1.0  # with a = 1 the weights can't move: the loss is never needed

    def shift_step(self, n_params: int) -> float:
        return 1.0 / (1.0 + self.compressor.omega(n_params)) if self.beta is None else self.beta

    def client_state(self, n_params: int) -> dict[str, torch.Tensor]:
        return {"h": torch.zeros(n_params)}

    def client(self, state: dict[str, torch.Tensor], local: torch.Tensor, weight: float,
               n_clients: int, generator: torch.Generator) -> tuple[torch.Tensor, int]:
        delta = n_clients * weight * local - state["h"]
        q, bits = self.compressor(delta, generator)
        state["h"] = state["h"] + self.shift_step(local.numel()) * q
        return q, bits + (LOSS_BITS if self.sends_loss else 0)

    def server_state(self, theta: torch.Tensor, n_clients: int,
                     sizes: np.ndarray) -> dict[str, Any]:
        if self.a > n_clients:
            raise ValueError(f"a: must be <= the number of clients ({n_clients}), got {self.a}")
        return {"h": torch.zeros_like(theta), "g_prev": None, "pi": np.full(n_clients, 1.0 / n_clients),
                "losses": np.zeros(n_clients), "losses_prev": None}

    def server(self, state: dict[str, Any], theta: torch.Tensor, messages: dict[int, torch.Tensor],
               losses: dict[int, float], participation: float) -> torch.Tensor:
        m = len(state["pi"])
        total = _stack(messages, theta)
        g = state["h"] + total / (m * participation)
        state["h"] = state["h"] + self.shift_step(theta.numel()) / m * total
        g_prev = g if state["g_prev"] is None else state["g_prev"]
        theta = theta - self.lr * ((1.0 + self.alpha) * g - self.alpha * g_prev)
        state["g_prev"] = g
        if self.sends_loss:
            for i, loss in losses.items():
                state["losses"][i] = loss
            prev = state["losses"] if state["losses_prev"] is None else state["losses_prev"]
            p_hat = (1.0 + self.alpha) * state["losses"] - self.alpha * prev
            state["losses_prev"] = state["losses"].copy()
            state["pi"] = mirror_ascent_step(state["pi"], p_hat, self.pi_lr, self.a / m)
        return theta

    def weights(self, state: dict[str, Any]) -> np.ndarray:
        return state["pi"]

    def downlink_bits(self, n_params: int) -> int:
        return FLOAT_BITS * n_params + (FLOAT_BITS if self.sends_loss else 0)


def DIANA(lr: float = 0.1, compressor: Compressor | None = None, batch_size: int | None = None,
          beta: float | None = None) -> ADI:
    """DIANA (Mishchenko et al. 2019): ADI with ``a = 1`` (plain averaging) and no optimism."""
    return ADI(lr=lr, pi_lr=0.0, a=1.0, alpha=0.0,
               compressor=Identity() if compressor is None else compressor,
               batch_size=batch_size, beta=beta, name="diana")


@dataclass(frozen=True)
class EF21:
    """EF21 error feedback with a contractive compressor (see the module docstring)."""

    lr: float = 0.1
    compressor: Compressor = field(default_factory=Identity)
    batch_size: int | None = None
    name: str = "ef21"

    def __post_init__(self) -> None:
        check.positive(self.lr, "lr")
        if not isinstance(self.compressor, Compressor):
            raise TypeError(f"compressor: expected a Compressor, got {type(self.compressor).__name__}")
        LocalWork(0, 0.0, self.batch_size)  # validates batch_size

    @property
    def local(self) -> LocalWork:
        return LocalWork(0, 0.0, self.batch_size)

    def client_state(self, n_params: int) -> dict[str, torch.Tensor]:
        return {"g": torch.zeros(n_params)}

    def client(self, state: dict[str, torch.Tensor], local: torch.Tensor, weight: float,
               n_clients: int, generator: torch.Generator) -> tuple[torch.Tensor, int]:
        c, bits = self.compressor(local - state["g"], generator)
        if self.compressor.unbiased:  # Q / (1 + omega) is contractive with delta = 1 / (1 + omega)
            c = c / (1.0 + self.compressor.omega(local.numel()))
        state["g"] = state["g"] + c
        return c, bits

    def server_state(self, theta: torch.Tensor, n_clients: int,
                     sizes: np.ndarray) -> dict[str, Any]:
        return {"g": torch.zeros_like(theta), "m": n_clients}

    def server(self, state: dict[str, Any], theta: torch.Tensor, messages: dict[int, torch.Tensor],
               losses: dict[int, float], participation: float) -> torch.Tensor:
        state["g"] = state["g"] + _stack(messages, theta) / state["m"]
        return theta - self.lr * state["g"]

    def weights(self, state: dict[str, Any]) -> np.ndarray:
        return np.full(state["m"], 1.0 / state["m"])

    def downlink_bits(self, n_params: int) -> int:
        return FLOAT_BITS * n_params


@dataclass(frozen=True)
class FedAvg:
    """FedAvg: ``local_steps`` SGD steps per client, sample-size-weighted average of the deltas."""

    client_lr: float = 0.1
    local_steps: int = 5
    batch_size: int = 32
    server_lr: float = 1.0
    compressor: Compressor = field(default_factory=Identity)
    name: str = "fedavg"

    def __post_init__(self) -> None:
        check.positive(self.server_lr, "server_lr")
        check.integer(self.local_steps, "local_steps", minimum=1)
        if not isinstance(self.compressor, Compressor):
            raise TypeError(f"compressor: expected a Compressor, got {type(self.compressor).__name__}")
        LocalWork(self.local_steps, self.client_lr, self.batch_size)  # validates the client side

    @property
    def local(self) -> LocalWork:
        return LocalWork(self.local_steps, self.client_lr, self.batch_size)

    def client_state(self, n_params: int) -> dict[str, torch.Tensor]:
        return {}

    def client(self, state: dict[str, torch.Tensor], local: torch.Tensor, weight: float,
               n_clients: int, generator: torch.Generator) -> tuple[torch.Tensor, int]:
        return self.compressor(local, generator)

    def server_state(self, theta: torch.Tensor, n_clients: int,
                     sizes: np.ndarray) -> dict[str, Any]:
        return {"sizes": np.asarray(sizes, dtype=np.float64), "m": n_clients}

    def server(self, state: dict[str, Any], theta: torch.Tensor, messages: dict[int, torch.Tensor],
               losses: dict[int, float], participation: float) -> torch.Tensor:
        if not messages:
            return theta
        total = sum(state["sizes"][i] for i in messages)
        step = torch.zeros_like(theta)
        for i in sorted(messages):
            step = step + (state["sizes"][i] / total) * messages[i]
        return theta + self.server_lr * step

    def weights(self, state: dict[str, Any]) -> np.ndarray:
        return state["sizes"] / state["sizes"].sum()

    def downlink_bits(self, n_params: int) -> int:
        return FLOAT_BITS * n_params


# --------------------------------------------------------------------------- the run

@dataclass(frozen=True)
class FederatedConfig:
    """Rounds, participation probability ``p`` (each client independently), measuring, seed."""

    rounds: int = 200
    participation: float = 1.0
    eval_every: int = 10
    seed: int = 0

    def __post_init__(self) -> None:
        check.integer(self.rounds, "rounds", minimum=1)
        check.real(self.participation, "participation", minimum=0.0, maximum=1.0)
        if self.participation == 0.0:
            raise ValueError("participation: must be > 0, got 0.0")
        check.integer(self.eval_every, "eval_every", minimum=1)
        check.integer(self.seed, "seed")


def describe_method(method: FederatedMethod) -> dict[str, Any]:
    d = asdict(method)  # type: ignore[call-overload]
    d["compressor"] = asdict(method.compressor)  # type: ignore[call-overload]
    return d


def train_federated(engine: Engine, model: FlatModel, data: Dataset, shards: list[np.ndarray],
                    method: FederatedMethod, config: FederatedConfig, *,
                    progress: Progress | None = None) -> RunResult:
    """Run ``method`` on ``engine`` (clients = ``shards``); return curves and the server model.

    Returns
    -------
    RunResult
        ``curves``: ``round``, ``bits_up`` (every uploaded message, exactly), ``bits_down``,
        ``test_acc``, ``test_loss``, ``worst_client_loss`` / ``mean_client_loss`` (each client's
        own objective ``f_i`` on its whole shard), ``worst_client_acc``, ``pi_max``,
        ``participants``. ``final``: the last value of each, and ``accuracy`` (test accuracy of
        the server model). ``curves["pi"]``: the client weights at each measurement.
    """
    if not isinstance(method, FederatedMethod):
        raise TypeError(f"method: expected a FederatedMethod, got {type(method).__name__}")
    m = len(shards)
    theta = model.initial()
    engine.start(model, [(data.x_train[s], data.y_train[s]) for s in shards],
                 theta.expand(m, -1).clone(), config.seed)
    state = method.server_state(theta, m, np.array([len(s) for s in shards]))
    rng = np.random.default_rng([config.seed, 0xFED])  # participation: the driver's draws
    x_test, y_test = torch.as_tensor(data.x_test), torch.as_tensor(data.y_test)
    client_data = [(torch.as_tensor(data.x_train[s]), torch.as_tensor(data.y_train[s])) for s in shards]
    names = ("round", "bits_up", "bits_down", "test_acc", "test_loss", "worst_client_loss",
             "mean_client_loss", "worst_client_acc", "pi_max", "participants")
    curves: dict[str, list[float]] = {k: [] for k in names}
    bits_up = bits_down = 0
    seen = 0

    def record(k: int) -> None:
        acc, loss = accuracy_and_loss(model, theta[None], x_test, y_test)
        c_acc, c_loss = per_shard(model, theta, client_data)
        row = {"round": k, "bits_up": bits_up, "bits_down": bits_down, "test_acc": float(acc[0]),
               "test_loss": float(loss[0]), "worst_client_loss": float(c_loss.max()),
               "mean_client_loss": float(c_loss.mean()), "worst_client_acc": float(c_acc.min()),
               "pi_max": float(method.weights(state).max()), "participants": seen}
        for key, v in row.items():
            curves[key].append(v)
        curves["pi"].append([float(v) for v in method.weights(state)])

    curves["pi"] = []
    record(0)
    for k in range(1, config.rounds + 1):
        draws = rng.random(m)  # m draws every round, whoever takes part
        participants = [i for i in range(m) if draws[i] < config.participation]
        reports = engine.client_round(method, theta, method.weights(state), participants)
        bits_up += sum(r[2] for r in reports.values())
        bits_down += len(participants) * method.downlink_bits(model.size)
        seen += len(participants)
        theta = method.server(state, theta, {i: r[0] for i, r in reports.items()},
                              {i: r[1] for i, r in reports.items()}, config.participation)
        if k % config.eval_every == 0 or k == config.rounds:
            record(k)
        if progress is not None:
            progress(k, config.rounds)
    final: dict[str, Any] = {key: curves[key][-1] for key in names if key != "round"}
    final["accuracy"] = final["test_acc"]
    cfg = {**asdict(config), "method": describe_method(method), "clients": m}
    return RunResult("federated", curves, final, theta, cfg)
