"""Full Gauss--Newton: the linearised model's quadratic subproblem, solved by inner Muon steps."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, grad_and_value, jvp, vjp
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.optim import Optimizer

from optiforge import validation as check

from .muon import Muon, muon_param_groups

VARIANTS = ("full", "layerwise", "prox_linear")
Batch = tuple[Any, Any]


def cross_entropy(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every position (classes on the last axis): the default loss."""
    return F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1))


def default_layers(names: Sequence[str]) -> list[list[str]]:
    """Group parameter names into layers: ``blocks.3.attn.w`` -> ``blocks.3``, ``head.weight`` -> ``head``."""
    groups: dict[str, list[str]] = {}
    for n in names:
        parts = n.split(".")
        key = ".".join(parts[:2]) if len(parts) > 2 and parts[1].isdigit() else parts[0]
        groups.setdefault(key, []).append(n)
    return list(groups.values())


class GaussNewton:
    """Gauss--Newton outer steps whose convex subproblem is minimised by an inner optimizer (Muon).

    At the outer point ``theta_t`` the model is linearised, ``f(theta) ~= f(theta_t) + J delta``
    with ``delta = theta - theta_t`` (``J delta`` by ``torch.func.jvp``), and the loss is
    expanded to second order in the outputs ``z = f(theta_t)``::

        Q(delta) = l(z) + g^T J delta + 1/2 (J delta)^T H (J delta),  g = dl/dz,  H = d2l/dz2

    whose minimiser is the Gauss--Newton step ``-(J^T H J)^-1 J^T g``. No matrix is formed and no
    CG is run: ``Q`` is minimised by one inner-optimizer step per mini-batch of :meth:`step`
    (``N`` fresh batches), with ``grad Q = J^T (g + H J delta)`` from one ``jvp``, an
    output-space Hessian-vector product and one ``vjp``. The inner solution ``theta_hat`` is
    warm-started from the previous outer step's, and the outer step is line-searched:
    ``theta_{t+1} = theta_t + alpha (theta_hat - theta_t)`` with the ``alpha`` in
    ``{2^(-i/2) : i < line_search}`` of lowest true loss on the line-search batches.

    Variants: ``"full"`` as above; ``"layerwise"`` solves one subproblem per layer,
    ``Q_l(delta_l) = g^T J_l delta_l + 1/2 (J_l delta_l)^T H (J_l delta_l)`` (block-diagonal
    curvature: cross-layer terms ignored; one ``jvp`` and one pull-back per layer and batch) and
    moves every layer by its own solution; ``"prox_linear"`` minimises the full loss of the
    linearised model, ``l(z + J delta)``, instead of its quadratic.

    Parameters
    ----------
    model : nn.Module
        The model; its trainable parameters are the optimisation variables (buffers are
        constants). It must be differentiable by ``torch.func`` in forward mode
        (scaled-dot-product attention runs its math kernel inside the linearisation) and
        deterministic (no dropout: the ``jvp`` and the ``vjp`` evaluate it separately).
    loss_fn : callable, optional
        ``loss_fn(outputs, targets) -> scalar`` (twice differentiable in ``outputs``); default
        :func:`cross_entropy`.
    variant : {"full", "layerwise", "prox_linear"}
    inner_optimizer : callable, optional
        ``factory(named_params) -> torch.optim.Optimizer`` over the inner variables (a list of
        ``(name, tensor)``). Default: :class:`~optiforge.optim.Muon` (lr ``inner_lr``) on hidden
        matrices, its internal AdamW (lr ``inner_adamw_lr``) on embeddings, heads and 1-D
        parameters, routed by :func:`~optiforge.optim.muon_param_groups`.
    inner_lr, inner_adamw_lr : float
        Learning rates of the default inner optimizer.
    line_search : int
        Number of step sizes tried, ``2^(-i/2)`` for ``i < line_search`` (as in the authors'
        code); ``1`` takes ``alpha = 1`` without evaluating anything.
    layers : list of lists of str, optional
        Parameter names per layer for ``"layerwise"``; default :func:`default_layers`
        (the embedding, each block of a ``ModuleList``, the head, ... as in the authors' code).
    warm_start : bool
        Start each inner problem from the previous inner solution and keep the inner
        optimizer's state (the authors' default); ``False`` restarts from ``theta_t`` with a
        fresh optimizer.

    Notes
    -----
    Deviations and choices: the paper fixes neither the inner learning rates nor ``N``; here
    ``N`` is the number of batches given to :meth:`step`. The line-search batches default to the
    inner batches (the authors draw ``N`` new ones; pass ``line_search_batches`` to do the
    same). Only ``alpha <= 1`` is tried, as in the code. Inner weight decay and the AdamW
    warm-up checkpoint are the caller's business (the paper starts every run from an AdamW
    warm-up). The ``"layerwise"`` variant here uses one inner optimizer over all layers: with
    Muon and AdamW acting per tensor this equals the code's one optimizer per layer.

    References
    ----------
    .. [1] N. Abreu, N. Vyas, S. Kakade, D. Morwani, "The Potential of Second-Order
       Optimization for LLMs: A Study with Full Gauss-Newton", ICLR 2026, arXiv:2510.09378;
       code github.com/natalieabreu/full-gauss-newton.
    """

    def __init__(
        self,
        model: nn.Module,
        loss_fn: Callable[[torch.Tensor, Any], torch.Tensor] | None = None,
        *,
        variant: str = "full",
        inner_optimizer: Callable[[list[tuple[str, torch.Tensor]]], Optimizer] | None = None,
        inner_lr: float = 0.02,
        inner_adamw_lr: float = 3e-3,
        line_search: int = 6,
        layers: Sequence[Sequence[str]] | None = None,
        warm_start: bool = True,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model: expected an nn.Module, got {type(model).__name__}")
        if loss_fn is not None and not callable(loss_fn):
            raise TypeError(f"loss_fn: expected a callable, got {type(loss_fn).__name__}")
        if inner_optimizer is not None and not callable(inner_optimizer):
            raise TypeError(f"inner_optimizer: expected a callable, got {type(inner_optimizer).__name__}")
        self.model = model
        self.loss_fn = loss_fn or cross_entropy
        self.variant = check.choice(variant, "variant", VARIANTS)
        self.inner_lr = check.positive(inner_lr, "inner_lr")
        self.inner_adamw_lr = check.positive(inner_adamw_lr, "inner_adamw_lr")
        self.line_search = check.integer(line_search, "line_search", minimum=1)
        self.warm_start = check.boolean(warm_start, "warm_start")
        self._named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not self._named:
            raise ValueError("model: has no trainable parameters")
        self.names = [n for n, _ in self._named]
        self.layers = self._check_layers(layers)
        self._factory = inner_optimizer or self._default_inner
        self.steps = 0
        self.history: list[dict[str, float]] = []
        self._reset_inner()

    # ------------------------------------------------------------------ setup
    def _check_layers(self, layers: Sequence[Sequence[str]] | None) -> list[list[str]]:
        if layers is None:
            return default_layers(self.names)
        if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence):
            raise TypeError("layers: expected a list of lists of parameter names")
        flat = [n for group in layers for n in group]
        if sorted(flat) != sorted(self.names) or not all(group for group in layers):
            raise ValueError("layers: must split the trainable parameter names into non-empty groups, "
                             "each name exactly once")
        return [list(group) for group in layers]

    def _default_inner(self, named: list[tuple[str, torch.Tensor]]) -> Optimizer:
        hidden, _ = muon_param_groups(self.model)
        hidden_ids = {id(p) for p in hidden}
        by_name = dict(named)
        mats = [by_name[n] for n, p in self._named if id(p) in hidden_ids]
        rest = [by_name[n] for n, p in self._named if id(p) not in hidden_ids]
        return Muon(mats, lr=self.inner_lr, adamw_params=rest, adamw_lr=self.inner_adamw_lr)

    def _reset_inner(self) -> None:
        self._inner = {n: p.detach().clone() for n, p in self._named}
        self.inner_optimizer = self._factory(list(self._inner.items()))
        if not isinstance(self.inner_optimizer, Optimizer):
            raise TypeError(f"inner_optimizer: the factory returned {type(self.inner_optimizer).__name__}, "
                            "not a torch.optim.Optimizer")

    # ------------------------------------------------------------------ functional model
    def _f(self, params: dict[str, torch.Tensor], inputs: Any) -> torch.Tensor:
        args = inputs if isinstance(inputs, tuple) else (inputs,)
        return functional_call(self.model, params, args)

    def _linearised(self, theta: dict[str, torch.Tensor], delta: dict[str, torch.Tensor],
                    inputs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``(f(theta), J delta)`` over the parameters in ``delta`` (the rest held at ``theta``)."""
        def f(sub: dict[str, torch.Tensor]) -> torch.Tensor:
            return self._f({**theta, **sub}, inputs)

        sub = {n: theta[n] for n in delta}
        with sdpa_kernel([SDPBackend.MATH]):  # fused attention kernels have no forward-mode AD
            return jvp(f, (sub,), (delta,))

    def _inner_gradient(self, theta: dict[str, torch.Tensor], batch: Batch
                        ) -> tuple[dict[str, torch.Tensor], float, float]:
        """Gradient of the subproblem at the inner iterate; (grads, loss at theta_t, model loss)."""
        inputs, targets = batch

        def loss(z: torch.Tensor) -> torch.Tensor:
            return self.loss_fn(z, targets)

        delta = {n: self._inner[n] - theta[n] for n in self.names}
        z0, pullback = vjp(lambda p: self._f(p, inputs), theta)
        z0 = z0.detach()
        # g = dl/dz and u -> H u (H symmetric: a vjp of the gradient, reverse-over-reverse;
        # forward-over-reverse fails on some losses' backward formulas, e.g. mse_loss).
        g, hvp = vjp(grad(loss), z0)
        if self.variant == "layerwise":
            grads: dict[str, torch.Tensor] = {}
            for group in self.layers:
                _, u = self._linearised(theta, {n: delta[n] for n in group}, inputs)
                full = pullback(g + hvp(u)[0])[0]
                grads.update({n: full[n] for n in group})
            return grads, float(loss(z0)), math.nan
        _, u = self._linearised(theta, delta, inputs)
        if self.variant == "prox_linear":
            r, value = grad_and_value(loss)(z0 + u)
        else:
            hu = hvp(u)[0]
            r = g + hu
            value = loss(z0) + (g * u).sum() + 0.5 * (u * hu).sum()
        return pullback(r)[0], float(loss(z0)), float(value)

    @torch.no_grad()
    def _true_loss(self, params: dict[str, torch.Tensor], batches: Sequence[Batch]) -> float:
        return sum(float(self.loss_fn(self._f(params, x), y)) for x, y in batches) / len(batches)

    # ------------------------------------------------------------------ the outer step
    def step(self, batches: Sequence[Batch], line_search_batches: Sequence[Batch] | None = None) -> dict[str, float]:
        """One outer step: ``N = len(batches)`` inner steps, then the line search.

        Parameters
        ----------
        batches : sequence of (inputs, targets)
            Fresh mini-batches, one per inner step (``inputs`` a tensor or a tuple of
            arguments of ``model``).
        line_search_batches : sequence of (inputs, targets), optional
            Where the step sizes are compared (default: ``batches``).

        Returns
        -------
        dict
            ``loss`` (true loss at ``theta_t``, mean over ``batches``), ``model_loss`` (the
            subproblem's value at the last inner step; NaN for ``"layerwise"``), ``alpha``
            (chosen step size) and ``line_search_loss`` (NaN when nothing was compared).
        """
        batches = self._check_batches(batches, "batches")
        ls_batches = batches if line_search_batches is None else self._check_batches(
            line_search_batches, "line_search_batches")
        if not self.warm_start:
            self._reset_inner()
        theta = {n: p.detach() for n, p in self._named}
        losses, value = [], math.nan
        for batch in batches:
            grads, loss_t, value = self._inner_gradient(theta, batch)
            for n, t in self._inner.items():
                t.grad = grads[n].detach()
            self.inner_optimizer.step()
            losses.append(loss_t)
        for t in self._inner.values():
            t.grad = None
        direction = {n: self._inner[n] - theta[n] for n in self.names}
        alpha, ls_loss = 1.0, math.nan
        if self.line_search > 1:
            tried = []
            for i in range(self.line_search):
                a = 2.0 ** (-i / 2)
                trial = {n: theta[n] + a * direction[n] for n in self.names}
                tried.append((self._true_loss(trial, ls_batches), a))
            ls_loss, alpha = min(tried)
        with torch.no_grad():
            for n, p in self._named:
                p.add_(direction[n], alpha=alpha)
        self.steps += 1
        stats = {"loss": sum(losses) / len(losses), "model_loss": value, "alpha": alpha,
                 "line_search_loss": ls_loss}
        self.history.append(stats)
        return stats

    @staticmethod
    def _check_batches(batches: Any, name: str) -> list[Batch]:
        if isinstance(batches, (str, bytes)) or not isinstance(batches, Sequence) or not batches:
            raise ValueError(f"{name}: expected a non-empty list of (inputs, targets) pairs")
        for b in batches:
            if not isinstance(b, Sequence) or len(b) != 2:
                raise ValueError(f"{name}: every batch must be an (inputs, targets) pair")
        return list(batches)

    # ------------------------------------------------------------------ resume
    @property
    def inner_solution(self) -> dict[str, torch.Tensor]:
        """The last inner solution ``theta_hat`` (before the line search), by parameter name."""
        return dict(self._inner)

    def state_dict(self) -> dict[str, Any]:
        """Inner solution, inner optimizer state, step count and history (the model's own
        parameters are saved with the model)."""
        return {"inner": {n: t.clone() for n, t in self._inner.items()},
                "inner_optimizer": self.inner_optimizer.state_dict(),
                "steps": self.steps, "history": [dict(h) for h in self.history]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved (same model structure)."""
        if not isinstance(state_dict, dict) or "inner" not in state_dict:
            raise ValueError("state_dict: not a GaussNewton state (no 'inner')")
        inner = state_dict["inner"]
        if sorted(inner) != sorted(self.names):
            raise ValueError("state_dict: its parameter names differ from this model's")
        with torch.no_grad():
            for n, t in self._inner.items():
                t.copy_(inner[n])
        self.inner_optimizer.load_state_dict(state_dict["inner_optimizer"])
        self.steps = int(state_dict["steps"])
        self.history = [dict(h) for h in state_dict["history"]]
