"""ALIAS: parameter-free sign-SGD (no learning rate to tune)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch.optim import Optimizer

from optiforge import validation as check

from ..kernels import BUF_COPY, BUF_EMA, sign_stats, sign_update_

VARIANTS = ("standard", "memory_efficient", "momentum")


def majority_vote(signs: Sequence[torch.Tensor]) -> torch.Tensor:
    """Coordinate-wise majority vote of workers' gradient signs (ties give 0).

    Parameters
    ----------
    signs : sequence of tensors
        One tensor of signs (or raw gradients) per worker, all the same shape.

    Returns
    -------
    torch.Tensor
        ``sign(sum_i sign(s_i))`` as ``int8``.
    """
    if not signs:
        raise ValueError("signs must contain at least one tensor")
    total = torch.zeros(signs[0].shape, dtype=torch.int32, device=signs[0].device)
    for s in signs:
        if s.shape != total.shape:
            raise ValueError(f"signs must share one shape, got {tuple(s.shape)} and {tuple(total.shape)}")
        total += torch.sign(s).to(torch.int32)
    return total.sign().to(torch.int8)


def all_reduce_majority_vote(local: torch.Tensor, group: Any = None) -> torch.Tensor:
    """Majority vote across the processes of a ``torch.distributed`` group.

    Each worker sends only its signs (as small integers); every worker receives the vote.

    Parameters
    ----------
    local : torch.Tensor
        This worker's signs (or gradient).
    group : ProcessGroup, optional
        Defaults to the world.

    Returns
    -------
    torch.Tensor
        ``int8`` vote, identical on every worker.
    """
    # int8 sums would overflow beyond 127 workers.
    votes = torch.sign(local).to(torch.int32)
    dist.all_reduce(votes, op=dist.ReduceOp.SUM, group=group)
    return votes.sign().to(torch.int8)


class ALIAS(Optimizer):
    """Parameter-free sign-SGD: ``x_{t+1} = x_t - gamma_t sign(g_t)`` with an estimated step.

    Per parameter group (all its tensors form one vector ``x``), with ``Delta x_i = x_{i+1} -
    x_i``:

    * smoothness: ``lambda_t = (sum_{i<t} ||g_{i+1} - g_i||_1 / ||Delta x_i||_inf)^(-1/2)``
      (an AdaGrad-style sum of local L_inf-smoothness estimates);
    * distance to the optimum in function value (Option I): ``d~_t = sum_{i<t} gamma_i <g_{i+1},
      sign(g_i)>`` (a lower bound of ``f(x_0) - f(x_t)`` under convexity), ``d_t = max(d_{t-1},
      d~_t)`` starting from ``d0``;
    * step: ``gamma_t = lambda_t sqrt(d_t)``; with ``lower_bound`` set (the paper's Option II),
      ``gamma_t = lambda_t sqrt(f(x_0) - lower_bound)`` instead, ``f(x_0)`` being the loss the
      closure returns on the first step.

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups.
    variant : {"standard", "memory_efficient", "momentum"}
        ``"standard"`` keeps the previous gradient (one dense buffer). ``"memory_efficient"``
        keeps only its signs (``int8``, a quarter of an fp32 buffer) plus the group scalars, and
        replaces ``||g_{i+1} - g_i||_1`` by the gradient mass on coordinates whose sign flipped
        (``sum_j max(0, -sign(g_{i,j}) g_{i+1,j})``, a lower bound of it). ``"momentum"`` steps along ``sign(m_t)`` with
        ``m_t = beta m_{t-1} + (1 - beta) g_t`` (one dense buffer) and estimates smoothness from
        momentum differences, which damps mini-batch noise.
    beta : float
        Momentum for ``variant="momentum"``.
    d0 : float
        Initial function-gap estimate (Option I).
    lower_bound : float, optional
        A known lower bound ``f~`` of the loss (0 for cross-entropy or squared error). When
        given, the step uses the known gap ``f(x_0) - f~`` (Option II) instead of the running
        estimate ``d_t``; the first ``step`` then needs a closure, to read ``f(x_0)``. With
        mini-batch gradients this is the robust choice: ``d_t`` is built from noisy inner
        products and stalls once they average to zero (see docs/benchmarks/optim.md).
    gamma0 : float
        First step (before any smoothness estimate exists); a tiny probe, like ``d0``.
    weight_decay : float
        Decoupled weight decay ``x <- x (1 - gamma_t wd)``; it is left out of the estimates.
    distributed : bool
        Multi-worker mode: every worker's signs are combined by majority vote and the step-size
        statistics are averaged over ``torch.distributed``, so all workers stay identical.
    process_group : ProcessGroup, optional
        Group for ``distributed``.
    backend : {"auto", "triton", "torch"}, optional
        Kernel backend for the fused statistics/update kernels.

    Notes
    -----
    The group's scalars (``L_sum``, ``d``, ``gamma``, ...) live in the param group under
    ``"alias"`` so they round-trip through ``state_dict``. Deviations: (1) the memory-efficient
    variant is described (secondary sources) as an upper bound of ``||Delta g||_inf / ||Delta
    x||_1`` from stored signs and the previous gradient's extrema; such a bound does not shrink
    with the step, so started from a tiny probe step it freezes the step size (we measured
    this). We use the sign-flip lower bound above instead: it grows with the step, so too large
    a step (many coordinates oscillating) is detected; while no flip has been seen the step
    doubles; (2) the momentum variant's
    formulas are not given in the sources we used and follow the construction above with
    ``m`` in place of ``g``; (3) in Option II ``f(x_0)`` is the first mini-batch loss, not the
    full objective.

    References
    ----------
    .. [1] D. Medyakov, S. Stanko, G. Molodtsov, P. Zmushko, G. Evseev, E. Petrov,
       A. Beznosikov, "Sign-SGD via Parameter-Free Optimization", ICLR 2026, arXiv:2506.03725.
    """

    def __init__(
        self,
        params: Iterable[Any],
        variant: str = "standard",
        beta: float = 0.9,
        d0: float = 1e-6,
        lower_bound: float | None = None,
        gamma0: float = 1e-6,
        weight_decay: float = 0.0,
        distributed: bool = False,
        process_group: Any = None,
        backend: str | None = None,
    ) -> None:
        check.choice(variant, "variant", VARIANTS)
        check.unit(beta, "beta")
        check.positive(d0, "d0")
        check.positive(gamma0, "gamma0")
        check.nonneg(weight_decay, "weight_decay")
        if lower_bound is not None:
            check.finite(lower_bound, "lower_bound")
        if distributed and not (dist.is_available() and dist.is_initialized()):
            raise ValueError("distributed=True needs an initialised torch.distributed process group")
        self._distributed = distributed
        self._process_group = process_group
        self._backend = backend
        defaults = dict(variant=variant, beta=beta, d0=d0, lower_bound=lower_bound, gamma0=gamma0,
                        weight_decay=weight_decay)
        super().__init__(params, defaults)
        for group in self.param_groups:
            check.choice(group["variant"], "variant", VARIANTS)
            group.setdefault("alias", self._fresh_scalars(group))

    @staticmethod
    def _fresh_scalars(group: dict[str, Any]) -> dict[str, float]:
        # gap: f(x_0) - lower_bound, set on the first step when Option II is on.
        return dict(L_sum=0.0, d=group["d0"], d_tilde=0.0, gamma=group["gamma0"], k=0, gap=None)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        group.setdefault("alias", self._fresh_scalars(group))

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        # Optimizer.load_state_dict casts state to the parameter dtype; signs stay int8.
        for st in self.state.values():
            if "prev_sign" in st:
                st["prev_sign"] = st["prev_sign"].to(torch.int8)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Perform one optimisation step.

        Parameters
        ----------
        closure : callable, optional
            Re-evaluates the model and returns the loss; required on the first step when
            ``lower_bound`` is set.

        Returns
        -------
        float or None
            The closure's loss, if given.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if group.get("lower_bound") is not None and group["alias"].get("gap") is None:
                self._set_gap(group, loss)
            self._step_group(group)
        return loss

    def _set_gap(self, group: dict[str, Any], loss: Any) -> None:
        if loss is None:
            raise ValueError("lower_bound (Option II) needs f(x_0): call step(closure) on the first step")
        f0 = float(loss)
        if self._distributed:
            (f0,) = self._average([f0])
        gap = f0 - group["lower_bound"]
        if not gap > 0:
            raise ValueError(f"lower_bound must be below the initial loss {f0:g}, got {group['lower_bound']!r}")
        group["alias"]["gap"] = gap

    def _buffer_name(self, variant: str) -> str:
        return {"standard": "prev_grad", "memory_efficient": "prev_sign", "momentum": "momentum"}[variant]

    def _step_group(self, group: dict[str, Any]) -> None:
        variant, sc = group["variant"], group["alias"]
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return
        for p in params:
            if p.grad.is_sparse:
                raise RuntimeError("ALIAS does not support sparse gradients")
        name = self._buffer_name(variant)
        first = sc["k"] == 0 or any(name not in self.state[p] for p in params)
        if not first:
            self._update_estimates(group, params, name)
        gamma = sc["gamma"]
        decay = 1.0 - gamma * group["weight_decay"]
        for p in params:
            g = p.grad
            state = self.state[p]
            if self._distributed:
                sign_update_(p, self._voted_direction(p, group), gamma, decay=decay,
                             backend=self._backend)
            elif variant == "memory_efficient":
                if "prev_sign" not in state:
                    state["prev_sign"] = torch.zeros(p.shape, dtype=torch.int8, device=p.device)
                sign_update_(p, g, gamma, decay=decay, sign_out=state["prev_sign"], backend=self._backend)
            elif variant == "standard":
                if "prev_grad" not in state:
                    state["prev_grad"] = torch.empty_like(p)
                sign_update_(p, g, gamma, decay=decay, buf=state["prev_grad"], buf_mode=BUF_COPY,
                             backend=self._backend)
            else:
                if "momentum" not in state:
                    state["momentum"] = g.detach().clone()
                sign_update_(p, g, gamma, decay=decay, buf=state["momentum"], buf_mode=BUF_EMA,
                             beta=group["beta"], backend=self._backend)
        sc["k"] += 1

    def _voted_direction(self, p: torch.Tensor, group: dict[str, Any]) -> torch.Tensor:
        # Workers agree on the direction by majority vote; each keeps its local statistics.
        g, state, variant = p.grad, self.state[p], group["variant"]
        if variant == "standard":
            state.setdefault("prev_grad", torch.empty_like(p)).copy_(g)
            local = g
        elif variant == "memory_efficient":
            local = g
            state["prev_sign"] = g.sign().to(torch.int8)
        else:
            if "momentum" not in state:
                state["momentum"] = g.detach().clone()
            else:
                state["momentum"].lerp_(g, 1 - group["beta"])
            local = state["momentum"]
        return all_reduce_majority_vote(local, self._process_group).to(p.dtype)

    def _average(self, values: list[float]) -> list[float]:
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.SUM, group=self._process_group)
        return (t / dist.get_world_size(self._process_group)).tolist()

    def _update_estimates(self, group: dict[str, Any], params: list[torch.Tensor], name: str) -> None:
        sc, variant = group["alias"], group["variant"]
        total = torch.zeros(2, dtype=torch.float64)
        for p in params:
            st = sign_stats(p.grad, self.state[p][name], backend=self._backend)
            st = st.double().cpu()
            total += st[:2]
        diff, inner = float(total[0]), float(total[1])
        if variant == "momentum":
            diff *= 1 - group["beta"]  # m_t - m_{t-1} = (1 - beta)(g_t - m_{t-1})
        if self._distributed:
            diff, inner = self._average([diff, inner])
        gamma_prev = sc["gamma"]
        sc["L_sum"] += diff / gamma_prev
        sc["d_tilde"] += gamma_prev * inner
        sc["d"] = max(sc["d"], sc["d_tilde"])
        if sc["L_sum"] > 0:
            gap = sc.get("gap")
            sc["gamma"] = math.sqrt((sc["d"] if gap is None else gap) / sc["L_sum"])
        else:
            # No curvature seen yet (possible with the sign-only estimate): grow geometrically.
            sc["gamma"] = 2 * gamma_prev

    @property
    def last_step_size(self) -> list[float]:
        """The step size ``gamma`` each group will use next."""
        return [g["alias"]["gamma"] for g in self.param_groups]
