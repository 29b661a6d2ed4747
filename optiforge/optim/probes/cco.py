"""Correlation crowding-out (CCO): GD on a two-key attention model learns to attend to the cause.

*Strong Correlations Induce Cause Only Predictions in Transformer Training*, ICLR 2026
(OpenReview z8xjWmyQSZ).

Data (a causal chain x -> y -> z)::

    x ~ N(0, diag(a, 1, ..., 1)),   y = x^T (w*)^2 + eps,   z = c y 1_d + xi,   eps, xi ~ N(0, sigma^2)

with w* in {0, 1}^d, w*_1 = 1 (default w* = 1_d, the paper's simulation). The paper writes
z = C y + xi; we take C = c 1_d, and ``a`` (the variance of the dominant cause x_1) is the
correlation strength that the sweep varies.

Model (two keys, identity W_Q, W_K, W_V): tokens x~ = [s1; x], z~ = [s2; z] with fixed position
codes s1 != s2 in R^M; a learnable query v~ gives p_i = sigmoid(v~^T (x~_i - z~_i)) and
h_i = p_i x~_i + (1 - p_i) z~_i; the head is yhat_i = h_i^T (w~)^2 (squared parameters), and
L = (1/2n) sum_i (yhat_i - y_i)^2.

Algorithm 1 (GD), with r_i = yhat_i - y_i::

    w~ <- w~ - (eta/n) sum_i r_i h_i * w~
    v~ <- v~ - (beta/n) sum_i r_i p_i (1 - p_i) ((x~_i - z~_i)^T (w~)^2) (x~_i - z~_i)

from w~0 = [0; alpha 1], v~0 = 0, in three phases: (i) eta only until w_1 >= 1/4, (ii) beta
only for T2 steps, (iii) eta only for T3 steps. The v~ update is exactly the gradient of L;
the w~ update is half of it (d yhat / d w~ = 2 h * w~): Algorithm 1's eta is a GD step of
eta/2. The tests check both directions against autograd. ``schedule="joint"`` updates both
every step instead (an ablation, not the paper's algorithm).

Measured along the run: the mean attention on the cause p_x = mean_i p_i, |w~_x - w*| (the
feature part, |w~| since only (w~)^2 matters), the training loss, and the test loss on fresh
data whose y -> z mechanism is shifted (z = c_test y 1 + xi). Thm 2 / Cor 1 predict that a
cause-only predictor keeps the test loss near sigma^2/2 under such a shift.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from optiforge import validation as check

from ._progress import Progress

SCHEDULES = ("three_phase", "joint")


@dataclass(frozen=True)
class CausalChain:
    """A batch of data sets: x (B, n, d), y (B, n), z (B, n, d)."""

    x: torch.Tensor
    y: torch.Tensor
    z: torch.Tensor


def causal_chain(n: int, d: int, *, a: float | Sequence[float] = 5.0,
                 c: float | Sequence[float] = 1.0,
                 sigma: float = 1.0, w_star: torch.Tensor | None = None, batch: int = 1,
                 seed: int = 0, dtype: torch.dtype = torch.float64,
                 device: str | torch.device = "cpu") -> CausalChain:
    """Draw ``batch`` data sets of the chain x -> y -> z.

    ``a`` may be one value per data set; ``c`` is the vector C of z = C y + xi (a number c
    means c e_1: only the first descendant coordinate carries y).
    """
    n = check.integer(n, "n", minimum=1)
    d = check.integer(d, "d", minimum=1)
    batch = check.integer(batch, "batch", minimum=1)
    c_vec = _descendant(c, d, dtype)
    sigma = check.nonneg(sigma, "sigma")
    a_t = torch.as_tensor(a, dtype=dtype).reshape(-1)
    if a_t.numel() not in (1, batch) or not bool((a_t > 0).all()):
        raise ValueError(f"a: expected a positive number or {batch} of them")
    w_star = torch.ones(d, dtype=dtype) if w_star is None else w_star.to(dtype)
    if w_star.shape != (d,):
        raise ValueError(f"w_star: expected shape ({d},), got {tuple(w_star.shape)}")
    gen = torch.Generator().manual_seed(check.integer(seed, "seed"))
    x = torch.randn(batch, n, d, generator=gen, dtype=dtype)
    x[..., 0] *= a_t.sqrt()[:, None] if a_t.numel() == batch else a_t.sqrt()
    y = x @ w_star**2 + sigma * torch.randn(batch, n, generator=gen, dtype=dtype)
    z = y[..., None] * c_vec + sigma * torch.randn(batch, n, d, generator=gen, dtype=dtype)
    return CausalChain(x.to(device), y.to(device), z.to(device))


def _descendant(c: float | Sequence[float], d: int, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(c, (int, float)) and not isinstance(c, bool):
        out = torch.zeros(d, dtype=dtype)
        out[0] = check.finite(c, "c")
        return out
    out = torch.as_tensor([check.finite(ci, "c") for ci in c], dtype=dtype)
    if out.shape != (d,):
        raise ValueError(f"c: expected a number or {d} numbers, got {len(out)}")
    return out


def positions(m: int = 2, *, dtype: torch.dtype = torch.float64,
              device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Position codes s1 = e_1, s2 = e_2 in R^m (any fixed s1 != s2 works)."""
    eye = torch.eye(check.integer(m, "m", minimum=2), dtype=dtype, device=device)
    return eye[0], eye[1]


def tokens(data: CausalChain, s1: torch.Tensor, s2: torch.Tensor
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """x~ = [s1; x] and z~ = [s2; z], each (B, n, M + d)."""
    b, n, _ = data.x.shape
    return (torch.cat([s1.expand(b, n, -1), data.x], -1),
            torch.cat([s2.expand(b, n, -1), data.z], -1))


def forward(v: torch.Tensor, w: torch.Tensor, xt: torch.Tensor, zt: torch.Tensor
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(p, h, yhat) for parameters v, w of shape (B, M + d)."""
    delta = xt - zt
    p = torch.sigmoid(torch.einsum("bnk,bk->bn", delta, v))
    h = zt + p[..., None] * delta
    return p, h, torch.einsum("bnk,bk->bn", h, w * w)


def loss(v: torch.Tensor, w: torch.Tensor, xt: torch.Tensor, zt: torch.Tensor,
         y: torch.Tensor) -> torch.Tensor:
    """L = (1/2n) sum_i (yhat_i - y_i)^2 per data set, (B,)."""
    return 0.5 * ((forward(v, w, xt, zt)[2] - y) ** 2).mean(-1)


def updates(v: torch.Tensor, w: torch.Tensor, xt: torch.Tensor, zt: torch.Tensor,
            y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Algorithm 1's directions (g_w, g_v): w <- w - eta g_w, v <- v - beta g_v.

    g_w = (1/n) sum r h * w = (1/2) dL/dw;  g_v = (1/n) sum r p (1 - p) (delta^T w^2) delta = dL/dv.
    """
    n = y.shape[-1]
    delta = xt - zt
    p, h, yhat = forward(v, w, xt, zt)
    r = yhat - y
    g_w = torch.einsum("bn,bnk->bk", r, h) * w / n
    coef = r * p * (1 - p) * torch.einsum("bnk,bk->bn", delta, w * w)
    return g_w, torch.einsum("bn,bnk->bk", coef, delta) / n


def init_scale(n: int, d: int, sigma: float = 1.0) -> float:
    """Thm 1's initialization scale alpha = sqrt(sigma^2 log d / n) / d^3."""
    return math.sqrt(sigma**2 * math.log(max(d, 2)) / n) / d**3


@dataclass
class CCORun:
    """Curves of one batch of runs (every ``record_every`` steps) and the phase boundaries."""

    steps: list[int]
    p_x: list[list[float]]  # [record][run]
    w_error: list[list[float]]
    train_loss: list[list[float]]
    test_loss_shifted: list[list[float]]
    phase1_end: list[int]  # per run: the step at which w_1 reached 1/4 (-1: never)
    phase2_end: list[int]
    final_w: list[list[float]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def train(data: CausalChain, test: CausalChain, *, eta: float = 0.01, beta: float = 0.05,
          alpha: float | None = None, schedule: str = "three_phase", phase1_max: int = 2000,
          t2: int = 300, t3: int = 3000, joint_steps: int = 5000, w_star: torch.Tensor | None = None,
          m: int = 2, record_every: int = 10, progress: Progress | None = None) -> CCORun:
    """Run Algorithm 1 on every data set of the batch.

    Parameters
    ----------
    data, test : CausalChain
        Training sets and (shifted-mechanism) test sets with the same batch size.
    eta, beta : float
        Step sizes of w~ and v~.
    alpha : float, optional
        Initial scale of w~ (default :func:`init_scale`).
    schedule : {"three_phase", "joint"}
        Algorithm 1's phases (each run moves to phase (ii) when its w_1 >= 1/4, or after
        ``phase1_max`` steps), or both updates every step for ``joint_steps`` steps.
    t2, t3 : int
        Lengths of phases (ii) and (iii).
    record_every : int
        Curves are recorded every this many steps.
    """
    check.choice(schedule, "schedule", SCHEDULES)
    phase1_max = check.integer(phase1_max, "phase1_max", minimum=1)
    t2 = check.integer(t2, "t2", minimum=0)
    t3 = check.integer(t3, "t3", minimum=0)
    joint_steps = check.integer(joint_steps, "joint_steps", minimum=1)
    record_every = check.integer(record_every, "record_every", minimum=1)
    eta = check.positive(eta, "eta")
    beta = check.positive(beta, "beta")
    b, n, d = data.x.shape
    if test.x.shape[0] != b or test.x.shape[2] != d:
        raise ValueError(f"test: expected batch {b} and d {d}, got shape {tuple(test.x.shape)}")
    dtype, device = data.x.dtype, data.x.device
    alpha = init_scale(n, d) if alpha is None else check.positive(alpha, "alpha")
    w_star = torch.ones(d, dtype=dtype, device=device) if w_star is None else w_star.to(device)
    s1, s2 = positions(m, dtype=dtype, device=device)
    xt, zt = tokens(data, s1, s2)
    xt_test, zt_test = tokens(test, s1, s2)
    w = torch.cat([torch.zeros(b, m, dtype=dtype, device=device),
                   torch.full((b, d), alpha, dtype=dtype, device=device)], -1)
    v = torch.zeros(b, m + d, dtype=dtype, device=device)
    # Per-run phase bookkeeping: 1, 2, 3, then 4 = done (frozen).
    phase = torch.ones(b, dtype=torch.long, device=device)
    left = torch.full((b,), phase1_max, dtype=torch.long, device=device)
    ends = {1: torch.full((b,), -1, dtype=torch.long), 2: torch.full((b,), -1, dtype=torch.long)}
    total = joint_steps if schedule == "joint" else phase1_max + t2 + t3
    run = CCORun([], [], [], [], [], [-1] * b, [-1] * b)

    def record(step: int) -> None:
        p, _, _ = forward(v, w, xt, zt)
        run.steps.append(step)
        run.p_x.append(p.mean(-1).cpu().tolist())
        run.w_error.append((w[:, m:].abs() - w_star).norm(dim=-1).cpu().tolist())
        run.train_loss.append(loss(v, w, xt, zt, data.y).cpu().tolist())
        run.test_loss_shifted.append(loss(v, w, xt_test, zt_test, test.y).cpu().tolist())

    record(0)
    for step in range(1, total + 1):
        g_w, g_v = updates(v, w, xt, zt, data.y)
        if schedule == "joint":
            w, v = w - eta * g_w, v - beta * g_v
        else:
            move_w = ((phase == 1) | (phase == 3))[:, None]
            w = torch.where(move_w, w - eta * g_w, w)
            v = torch.where((phase == 2)[:, None], v - beta * g_v, v)
            left = left - (phase < 4).long()
            reached = (phase == 1) & ((w[:, m] >= 0.25) | (left <= 0))
            done2 = (phase == 2) & (left <= 0)
            done3 = (phase == 3) & (left <= 0)
            ends[1][reached.cpu()] = step
            ends[2][done2.cpu()] = step
            phase = phase + reached.long() + done2.long() + done3.long()
            left = torch.where(reached, torch.full_like(left, t2), left)
            left = torch.where(done2, torch.full_like(left, t3), left)
        if step % record_every == 0 or step == total:
            record(step)
        if progress is not None and (step % 50 == 0 or step == total):
            progress(step, total)
        if schedule != "joint" and bool((phase == 4).all()):
            break
    run.phase1_end, run.phase2_end = ends[1].tolist(), ends[2].tolist()
    run.final_w = w[:, m:].cpu().tolist()
    return run


def dominant_coordinate_margin(d: int, *, a: float, c: float | Sequence[float] = 1.0,
                               sigma: float = 1.0,
                               samples: int = 200_000, seed: int = 0) -> float:
    """Cond 1 (occupation) of the paper, estimated by Monte Carlo on the population:
    s_1^eff - [2 m_1 / 15 + max_{j>1} (4 |s_j^eff| + m_1j / 8)]; positive means it holds.

    s_j^eff = E[(x^T w*^2 + eps)(x_j + z_j)], m_j = E[(x_j + z_j)^2], m_1j = E[(x_1 + z_1)(x_j + z_j)]
    (w* = 1). Sufficient, not necessary: CCO can occur where the margin is negative.
    """
    data = causal_chain(samples, d, a=a, c=c, sigma=sigma, seed=seed)
    x, y, z = data.x[0], data.y[0], data.z[0]
    sz = x + z
    s_eff = (y[:, None] * sz).mean(0)
    m1 = (sz[:, 0] ** 2).mean()
    m1j = (sz[:, :1] * sz[:, 1:]).mean(0)
    rival = (4 * s_eff[1:].abs() + m1j / 8).max() if d > 1 else torch.tensor(0.0)
    return float(s_eff[0] - (2 * m1 / 15 + rival))


def sign_condition_fraction(data: CausalChain) -> list[float]:
    """Share of samples with sgn(x_1 - z_1) = sgn(x_1), the sign part of Cond 2 (crowding
    out), per data set. The paper assumes it for every sample (bounded data); with Gaussian
    data it holds for a share that grows with ``a``."""
    x1, z1 = data.x[..., 0], data.z[..., 0]
    return (torch.sign(x1 - z1) == torch.sign(x1)).double().mean(-1).cpu().tolist()


def figure(*, n: int = 64, d: int = 5, a: float = 50.0, c: float = 0.5, sigma: float = 1.0,
           c_test: float | None = None, sweep: Sequence[float] = (1, 2, 5, 10, 20, 50, 100),
           trials: int = 8, eta: float = 0.01, beta: float = 0.5, phase1_max: int = 2000,
           t2: int = 300, t3: int = 3000, test_n: int = 2000, seed: int = 0,
           device: str | torch.device = "cpu", progress: Progress | None = None) -> dict:
    """The probe's numbers: curves of Algorithm 1 at correlation strength ``a`` (with the joint
    schedule as an ablation) and a sweep of ``a``; ``trials`` data sets each.

    The test sets use the shifted mechanism z = c_test y e_1 + xi (default c_test = -c).
    """
    sweep = [check.positive(s, "sweep") for s in sweep]
    trials = check.integer(trials, "trials", minimum=1)
    c_test = -c if c_test is None else check.finite(c_test, "c_test")
    kw = dict(eta=eta, beta=beta, phase1_max=phase1_max, t2=t2, t3=t3)
    total_steps = phase1_max + t2 + t3
    jobs = 2 + len(sweep)
    done = [0]

    def sub(step: int, total: int) -> None:
        if progress is not None:
            progress(done[0] * total_steps + min(step, total) * total_steps // total,
                     jobs * total_steps)

    def data_for(a_val: float, k: int) -> tuple[CausalChain, CausalChain]:
        tr = causal_chain(n, d, a=a_val, c=c, sigma=sigma, batch=trials, seed=seed * 100 + k,
                          device=device)
        te = causal_chain(test_n, d, a=a_val, c=c_test, sigma=sigma, batch=trials,
                          seed=seed * 100 + 50 + k, device=device)
        return tr, te

    train_set, test_set = data_for(check.positive(a, "a"), 0)
    curves = train(train_set, test_set, progress=sub, **kw)
    done[0] += 1
    joint = train(train_set, test_set, schedule="joint", joint_steps=total_steps, eta=eta,
                  beta=beta, progress=sub)
    done[0] += 1
    rows = []
    for k, a_val in enumerate(sweep):
        tr, te = data_for(float(a_val), k + 1)
        r = train(tr, te, progress=sub, **kw)
        done[0] += 1
        rows.append({"a": a_val, "p_x": r.p_x[-1], "w_error": r.w_error[-1],
                     "test_loss_shifted": r.test_loss_shifted[-1],
                     "cond1_margin": dominant_coordinate_margin(d, a=a_val, c=c, sigma=sigma,
                                                                samples=100_000, seed=seed),
                     "sign_condition_fraction": sign_condition_fraction(tr)})
    return {"config": {"n": n, "d": d, "a": a, "c": c, "c_test": c_test, "sigma": sigma,
                       "trials": trials, **kw, "alpha_init": init_scale(n, d, sigma)},
            "noise_floor": sigma**2 / 2, "three_phase": curves.to_dict(),
            "joint": joint.to_dict(), "sweep": rows}
