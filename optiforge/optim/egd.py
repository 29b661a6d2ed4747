"""Egalitarian Gradient Descent: per-layer gradients with all singular values set to one."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.optim import Optimizer

from optiforge import validation as check

from .polar import polar_express

METHODS = ("polar_express", "svd")


def egalitarian(
    grad: torch.Tensor,
    method: str = "polar_express",
    *,
    steps: int = 8,
    dtype: torch.dtype = torch.float32,
    eps: float = 1e-6,
) -> torch.Tensor:
    """Return ``(G G^T)^{-1/2} G`` (``= U V^T`` for ``G = U S V^T``) of a matrix gradient.

    Parameters
    ----------
    grad : torch.Tensor
        Gradient of a weight matrix (``>= 3``-D tensors are viewed as ``(shape[0], -1)``).
    method : {"polar_express", "svd"}
        ``"svd"`` follows the paper's code: ``U diag(1 / max(s, eps)) U^T G``. ``"polar_express"``
        reuses the Polar Express iteration (and its GPU kernel).
    steps : int
        Polar Express iterations.
    dtype : torch.dtype
        Polar Express working dtype.
    eps : float
        Floor on singular values for ``"svd"``.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``grad``.
    """
    mat = grad.reshape(grad.shape[0], -1)
    if method == "svd":
        work = mat.float() if mat.dtype not in (torch.float32, torch.float64) else mat
        u, s, _ = torch.linalg.svd(work, full_matrices=False)
        out = (u * (1.0 / s.clamp_min(eps))) @ (u.mT @ work)
    else:
        out = polar_express(mat, steps, dtype)
    return out.reshape(grad.shape).to(grad.dtype)


class EGD(Optimizer):
    """Egalitarian Gradient Descent: ``W <- W - lr (G G^T)^{-1/2} G`` on chosen layers, SGD elsewhere.

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups.
    lr : float
        Learning rate (the paper uses 0.7 on modular addition).
    layers : iterable of tensors, optional
        The weights whose gradients are equalised. ``None`` means every parameter with ``>= 2``
        dimensions. The paper's code equalises only the first layer's weight; everything else
        (biases, other layers) gets plain SGD.
    switch_off_at : float, optional
        When :meth:`observe` receives a metric ``>= switch_off_at`` (the paper: test accuracy
        above 0.95), equalisation stops for good and every parameter continues with plain SGD.
    momentum : float
        Heavy-ball momentum applied after equalisation (0 in the paper).
    weight_decay : float
        Coupled L2 term added to the gradient before equalisation, as the paper's loss
        ``+ wd/2 ||W||^2`` does.
    method : {"polar_express", "svd"}
        How the polar factor is computed (see :func:`egalitarian`).
    steps : int
        Polar Express iterations (``method="polar_express"``).
    eps : float
        Singular-value floor for ``method="svd"``.

    Notes
    -----
    Deviation: the default computes ``U V^T`` with 8 fp32 Polar Express iterations instead of the
    paper's exact SVD; singular values far below ``1e-3`` of the largest are then mapped to less
    than 1 (the exact SVD route, ``method="svd"``, is kept for fidelity and comparison).

    References
    ----------
    .. [1] A. Saheb Pasand, E. Dohmatob, "Egalitarian Gradient Descent: A Simple Approach to
       Accelerated Grokking", ICLR 2026, arXiv:2510.04930.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float,
        layers: Iterable[torch.Tensor] | None = None,
        switch_off_at: float | None = None,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        method: str = "polar_express",
        steps: int = 8,
        eps: float = 1e-6,
    ) -> None:
        check.positive(lr, "lr")
        check.unit(momentum, "momentum")
        check.nonneg(weight_decay, "weight_decay")
        check.choice(method, "method", METHODS)
        check.integer(steps, "steps", minimum=1)
        check.positive(eps, "eps")
        if switch_off_at is not None:
            check.unit(switch_off_at, "switch_off_at", closed=True)
        chosen = None if layers is None else {id(p) for p in layers}
        if chosen is not None:
            for p in layers or ():
                if p.ndim < 2:
                    raise ValueError("layers must contain only weights with >= 2 dimensions")
        raw = list(params)
        if not raw:
            raise ValueError("params must not be empty")
        groups = raw if isinstance(raw[0], dict) else [{"params": raw}]
        split: list[dict[str, Any]] = []
        for g in groups:
            g = dict(g)
            ps = list(g.pop("params"))
            def pick(p: torch.Tensor) -> bool:
                return (chosen is None and p.ndim >= 2) or (chosen is not None and id(p) in chosen)
            for flag in (True, False):
                part = [p for p in ps if pick(p) == flag]
                if part:
                    split.append({**g, "params": part, "equalize": flag})
        defaults = dict(lr=lr, momentum=momentum, weight_decay=weight_decay, method=method, steps=steps, eps=eps)
        super().__init__(split, defaults)
        self.switch_off_at = switch_off_at
        self.egd_active = True

    def observe(self, metric: float) -> bool:
        """Report a progress metric (e.g. validation accuracy); returns whether EGD is still on."""
        if self.switch_off_at is not None and metric >= self.switch_off_at:
            self.egd_active = False
        return self.egd_active

    def state_dict(self) -> dict[str, Any]:
        sd = super().state_dict()
        sd["egd_active"] = self.egd_active
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        self.egd_active = bool(state_dict.pop("egd_active", True))
        super().load_state_dict(state_dict)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Perform one optimisation step.

        Parameters
        ----------
        closure : callable, optional
            Re-evaluates the model and returns the loss.

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
            equalize = group["equalize"] and self.egd_active
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad
                if group["weight_decay"]:
                    d = d.add(p, alpha=group["weight_decay"])
                if equalize:
                    d = egalitarian(d, group["method"], steps=group["steps"], eps=group["eps"])
                if group["momentum"]:
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = d.clone()
                    else:
                        state["momentum_buffer"].mul_(group["momentum"]).add_(d)
                    d = state["momentum_buffer"]
                p.add_(d, alpha=-group["lr"])
        return loss
