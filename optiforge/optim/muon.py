"""Muon: momentum orthogonalised by a polar iteration, with an internal AdamW for the rest."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.adam import adam as _adam_functional

from optiforge import validation as check

from .polar import newton_schulz, polar_express

NS_METHODS = ("polar_express", "jordan", "you")
ADJUST_LR = ("spectral", "match_rms_adamw", "none")


def orthogonalize(
    update: torch.Tensor, ns: str = "polar_express", steps: int = 5, dtype: torch.dtype = torch.bfloat16
) -> torch.Tensor:
    """Polar factor of a batch of update matrices with the chosen iteration."""
    if ns == "polar_express":
        return polar_express(update, steps, dtype)
    return newton_schulz(update, steps, ns, dtype)


def lr_scale(shape: tuple[int, int], adjust_lr: str) -> float:
    """Per-matrix multiplier of the learning rate.

    ``"spectral"``: ``sqrt(max(1, rows / cols))`` (Keller Jordan's Muon); ``"match_rms_adamw"``:
    ``0.2 * sqrt(max(rows, cols))`` so the update RMS matches AdamW's (Moonshot's Moonlight);
    ``"none"``: 1.
    """
    rows, cols = shape
    if adjust_lr == "spectral":
        return max(1.0, rows / cols) ** 0.5
    if adjust_lr == "match_rms_adamw":
        return 0.2 * max(rows, cols) ** 0.5
    return 1.0


def muon_param_groups(
    model: nn.Module, exclude: Iterable[str] = ("embed", "lm_head", "head", "wte", "wpe")
) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """Split a model's trainable parameters into ``(muon_params, adamw_params)``.

    Parameters
    ----------
    model : nn.Module
        The model.
    exclude : iterable of str
        Parameters whose qualified name contains one of these substrings go to AdamW, as do
        every ``nn.Embedding`` weight and every parameter with fewer than 2 dimensions.

    Returns
    -------
    tuple of lists
        Hidden matrices (Muon) and everything else (AdamW).
    """
    exclude = tuple(exclude)
    embedding_ids = {
        id(m.weight) for m in model.modules() if isinstance(m, (nn.Embedding, nn.EmbeddingBag))
    }
    muon, adamw = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if p.ndim < 2 or id(p) in embedding_ids or any(s in name for s in exclude):
            adamw.append(p)
        else:
            muon.append(p)
    return muon, adamw


class Muon(Optimizer):
    """Muon with Polar Express (or Newton--Schulz) orthogonalisation and an internal AdamW.

    Matrices (and flattened ``>= 3``-D weights such as convolutions, viewed as
    ``(shape[0], -1)``) get the Muon update

    ``B <- mu B + (1 - mu) G``;  ``U = G + mu (B - G)`` (Nesterov) or ``B``;
    ``W <- (1 - lr wd) W - lr * s(W) * polar(U)``

    where ``polar`` is :func:`~optiforge.optim.polar_express` or a Newton--Schulz preset and
    ``s`` the shape-dependent learning-rate scale. Parameters passed in ``adamw_params``, groups
    flagged ``use_muon=False`` and every parameter with fewer than 2 dimensions (biases, norms)
    get AdamW. Same-shape matrices are orthogonalised together as one batched call.

    Parameters
    ----------
    params : iterable of tensors or dicts
        Parameters or parameter groups. A group may set ``use_muon`` explicitly and override any
        hyper-parameter below (AdamW groups take ``lr``, ``betas``, ``eps``, ``weight_decay``).
    lr : float
        Muon learning rate (default 0.02, as in KellerJordan/Muon).
    momentum : float
        Momentum ``mu`` in ``[0, 1)``.
    nesterov : bool
        Use the Nesterov-style update.
    weight_decay : float
        Decoupled weight decay for Muon parameters (``W <- W (1 - lr wd)`` with the unadjusted
        lr, as in ``torch.optim.Muon``).
    ns : {"polar_express", "jordan", "you"}
        Orthogonalisation: Polar Express or Newton--Schulz with Jordan's or You's coefficients.
    ns_steps : int
        Iterations of the polar method (5 in the papers).
    adjust_lr : {"spectral", "match_rms_adamw", "none"}
        Shape-dependent learning-rate scaling (see :func:`lr_scale`).
    adamw_params : iterable of tensors, optional
        Parameters that must use AdamW even if they are matrices (embeddings, output head).
    adamw_lr, adamw_betas, adamw_eps, adamw_weight_decay
        AdamW hyper-parameters (defaults 3e-4, (0.9, 0.95), 1e-10, 0 as in KellerJordan/Muon).
    ns_dtype : torch.dtype
        Working precision of the polar iteration (bf16 in the papers).

    References
    ----------
    .. [1] K. Jordan et al., "Muon: An optimizer for hidden layers in neural networks", 2024.
    .. [2] N. Amsel, D. Persson, C. Musco, R. M. Gower, "The Polar Express: Optimal Matrix Sign
       Methods and Their Application to the Muon Algorithm", ICLR 2026, arXiv:2505.16932.
    .. [3] J. Liu et al., "Muon is Scalable for LLM Training" (Moonlight), arXiv:2502.16982
       (``match_rms_adamw``).

    Notes
    -----
    Momentum is the exponential moving average used by KellerJordan/Muon and
    ``torch.optim.Muon``; no deviation from those references. Single-process only (no
    distributed sharding of the orthogonalisation).
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 0.02,
        momentum: float = 0.95,
        nesterov: bool = True,
        weight_decay: float = 0.0,
        ns: str = "polar_express",
        ns_steps: int = 5,
        adjust_lr: str = "spectral",
        adamw_params: Iterable[torch.Tensor] | None = None,
        adamw_lr: float = 3e-4,
        adamw_betas: tuple[float, float] = (0.9, 0.95),
        adamw_eps: float = 1e-10,
        adamw_weight_decay: float = 0.0,
        ns_dtype: torch.dtype = torch.bfloat16,
    ) -> None:
        muon_defaults = dict(
            lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay, ns=ns,
            ns_steps=ns_steps, adjust_lr=adjust_lr,
        )
        adamw_defaults = dict(
            lr=adamw_lr, betas=tuple(adamw_betas), eps=adamw_eps, weight_decay=adamw_weight_decay,
        )
        self._check_muon(muon_defaults, prefix="")
        self._check_adamw(adamw_defaults, prefix="adamw_")
        if not isinstance(ns_dtype, torch.dtype) or not ns_dtype.is_floating_point:
            raise ValueError(f"ns_dtype must be a floating torch.dtype, got {ns_dtype!r}")
        self.ns_dtype = ns_dtype

        forced = {id(p) for p in adamw_params} if adamw_params is not None else set()
        extra_adamw = list(adamw_params) if adamw_params is not None else []
        raw = list(params)
        if not raw and not extra_adamw:
            raise ValueError("params must not be empty")
        groups = raw if raw and isinstance(raw[0], dict) else ([{"params": raw}] if raw else [])
        built: list[dict[str, Any]] = []
        for g in groups:
            g = dict(g)
            ps = [p for p in g.pop("params") if id(p) not in forced]
            flag = g.pop("use_muon", None)
            if flag is False:
                built.append({**adamw_defaults, **g, "params": ps, "use_muon": False})
                continue
            mats = [p for p in ps if p.ndim >= 2]
            rest = [p for p in ps if p.ndim < 2]
            if flag is True and rest:
                raise ValueError("a group with use_muon=True must contain only >= 2-D parameters")
            if mats:
                grp = {**muon_defaults, **g, "params": mats, "use_muon": True}
                self._check_muon(grp, prefix="")
                built.append(grp)
            if rest:
                adamw_keys = {k: v for k, v in g.items() if k in adamw_defaults and k != "lr"}
                built.append({**adamw_defaults, **adamw_keys, "params": rest, "use_muon": False})
        if extra_adamw:
            built.append({**adamw_defaults, "params": extra_adamw, "use_muon": False})
        for grp in built:
            if not grp["use_muon"]:
                self._check_adamw(grp, prefix="adamw_" if grp is built[-1] and extra_adamw else "")
        super().__init__([g for g in built if g["params"]], {})

    @staticmethod
    def _check_muon(g: dict[str, Any], prefix: str) -> None:
        check.nonneg(g["lr"], prefix + "lr")
        check.unit(g["momentum"], prefix + "momentum")
        check.nonneg(g["weight_decay"], prefix + "weight_decay")
        check.choice(g["ns"], prefix + "ns", NS_METHODS)
        check.integer(g["ns_steps"], prefix + "ns_steps", minimum=1)
        check.choice(g["adjust_lr"], prefix + "adjust_lr", ADJUST_LR)
        if not isinstance(g["nesterov"], bool):
            raise ValueError(f"{prefix}nesterov must be a bool, got {g['nesterov']!r}")

    @staticmethod
    def _check_adamw(g: dict[str, Any], prefix: str) -> None:
        check.nonneg(g["lr"], prefix + "lr")
        betas = g["betas"]
        if len(betas) != 2:
            raise ValueError(f"{prefix}betas must be a pair, got {betas!r}")
        check.unit(betas[0], prefix + "betas[0]")
        check.unit(betas[1], prefix + "betas[1]")
        check.nonneg(g["eps"], prefix + "eps")
        check.nonneg(g["weight_decay"], prefix + "weight_decay")

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
            if group["use_muon"]:
                self._muon_group(group)
            else:
                self._adamw_group(group)
        return loss

    def _muon_group(self, group: dict[str, Any]) -> None:
        mu = group["momentum"]
        by_shape: dict[tuple[tuple[int, ...], torch.device], list[tuple[torch.Tensor, torch.Tensor]]]
        by_shape = defaultdict(list)
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise RuntimeError("Muon does not support sparse gradients")
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = torch.zeros_like(p)
            buf = state["momentum_buffer"]
            buf.lerp_(p.grad, 1 - mu)
            upd = p.grad.lerp(buf, mu) if group["nesterov"] else buf
            mat = upd.reshape(upd.shape[0], -1)
            by_shape[(tuple(mat.shape), p.device)].append((p, mat))
        for (shape, _), items in by_shape.items():
            ortho = orthogonalize(
                torch.stack([m for _, m in items]), group["ns"], group["ns_steps"], self.ns_dtype
            )
            scale = group["lr"] * lr_scale(shape, group["adjust_lr"])  # type: ignore[arg-type]
            for (p, _), o in zip(items, ortho, strict=True):
                if group["weight_decay"]:
                    p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(o.reshape(p.shape).to(p.dtype), alpha=-scale)

    def _adamw_group(self, group: dict[str, Any]) -> None:
        params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = torch.tensor(0.0)
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)
            params.append(p)
            grads.append(p.grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            steps.append(state["step"])
        if not params:
            return
        beta1, beta2 = group["betas"]
        _adam_functional(
            params, grads, exp_avgs, exp_avg_sqs, [], steps, foreach=None,
            decoupled_weight_decay=True, amsgrad=False,
            beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
            eps=group["eps"], maximize=False,
        )
