"""Bi-LoRA: descent on a primary LoRA module, clipped ascent on an auxiliary one, one backward pass."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch.optim import Optimizer

from optiforge import validation as check

CLIPS = ("global", "layer", "none")
AUX_OPTIMIZERS = ("adam", "sgd")
Pair = tuple[torch.Tensor, torch.Tensor, float]


def _check_pairs(auxiliary: Any) -> list[Pair]:
    if isinstance(auxiliary, (str, bytes)) or not isinstance(auxiliary, Iterable):
        raise TypeError("auxiliary: expected a list of (B, A) or (B, A, scale) tuples")
    pairs: list[Pair] = []
    for k, item in enumerate(auxiliary):
        if not isinstance(item, Sequence) or len(item) not in (2, 3):
            raise TypeError(f"auxiliary[{k}]: expected (B, A) or (B, A, scale)")
        b, a = item[0], item[1]
        scale = check.positive(item[2], f"auxiliary[{k}] scale") if len(item) == 3 else 1.0
        if not isinstance(b, torch.Tensor) or not isinstance(a, torch.Tensor) or b.ndim != 2 or a.ndim != 2:
            raise TypeError(f"auxiliary[{k}]: B and A must be 2-D tensors")
        if b.shape[1] != a.shape[0]:
            raise ValueError(f"auxiliary[{k}]: B is {tuple(b.shape)} and A is {tuple(a.shape)}; "
                             "B @ A needs B's columns == A's rows (the rank)")
        pairs.append((b, a, scale))
    if not pairs:
        raise ValueError("auxiliary: must hold at least one (B, A) pair")
    return pairs


class BiLoRA:
    """Bi-directional LoRA: the primary module descends, the auxiliary one ascends, both from one gradient.

    Each adapted weight is ``W = W0 + B1 A1 + s B2 A2`` (primary ``B1 A1``, auxiliary ``B2 A2``
    with scale ``s``, e.g. peft's ``lora_alpha / r``). The caller runs **one** forward/backward
    pass with both modules in the forward (the merged weights), which gives ``G = dL/dW`` and the
    factor gradients ``dL/dB2 = s G A2^T``, ``dL/dA2 = s B2^T G`` (likewise for the primary).
    :meth:`step` then

    1. descends on the primary factors with the wrapped ``optimizer`` (``B1 <- B1 - eta1 G A1^T``,
       ``A1 <- A1 - eta1 B1^T G`` for SGD; any optimizer, typically AdamW);
    2. ascends on the auxiliary factors: ``B2 <- B2 + eta2 dL/dB2``, ``A2 <- A2 + eta2 dL/dA2``
       (``aux_optimizer="sgd"``) or Adam's normalised ascent (``"adam"``, the default);
    3. clips the perturbation: ``c = sqrt(sum_l ||s_l B2_l A2_l||_F^2)``; if ``c > rho`` every
       ``B2`` and ``A2`` is multiplied by ``sqrt(rho / c)`` (``clip="global"``); ``"layer"`` clips
       each layer's ``||s B2 A2||_F`` to ``rho`` alone; ``"none"`` does not clip (ablations).

    This approximates ``min_{A1,B1} max_{||B2 A2|| <= rho} L(W)`` (SAM) at LoRA's cost per step:
    one gradient instead of SAM's two. At inference and save the auxiliary module is dropped
    (``W0 + B1 A1``: a standard LoRA adapter).

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
        The primary module's optimizer (over ``A1``, ``B1`` and whatever else is trained).
    auxiliary : list of (B, A) or (B, A, scale)
        The auxiliary factors per adapted layer (``B`` is ``out x r``, ``A`` is ``r x in``,
        leaf tensors receiving gradients); ``scale`` (default 1) multiplies ``B A`` in the
        weights and in the norm that is clipped.
    aux_lr : float
        ``eta2`` (the sources: robust in [1e-4, 1e-3], best 3e-4, equal to the main lr).
    rho : float
        Radius of the perturbation (Frobenius norm of the weight-space perturbation).
    clip : {"global", "layer", "none"}
    aux_optimizer : {"adam", "sgd"}
        How the ascent step is taken (see Notes).
    aux_betas, aux_eps
        Adam's hyper-parameters for ``"adam"``.

    Notes
    -----
    Sources: the paper's rule as summarised in our research notes (primary text and code were
    not available to us). Choices where they are silent: ``rho`` and the auxiliary rank are not
    given (``rho`` has no default here; the GRPO learner uses SAM's customary 0.05 and rank
    ``r2 = r1``); the rule is written as plain gradient ascent, but at the reported ``eta2``
    (3e-4, the same as AdamW's lr) plain ascent leaves ``B2`` at its zero initialisation in
    practice, so the default ascent is Adam-normalised (``torch.optim.Adam(maximize=True)``);
    ``aux_optimizer="sgd"`` is the literal rule. The clipped norm includes the scale ``s``
    (it bounds the actual weight perturbation). Clipping rescales both factors by
    ``sqrt(rho / c)`` so the product scales by ``rho / c``; the auxiliary optimizer's moments are
    not rescaled. :meth:`state_dict` holds both optimizers' states, not the factors themselves
    (they are model parameters).

    References
    ----------
    .. [1] Y. Liu, T. Li, Z. Huang, Z. Yang, X. Huang, "Bi-LoRA: Efficient Sharpness-Aware
       Minimization for Fine-Tuning Large-Scale Models", ICLR 2026, arXiv:2508.19564.
    .. [2] P. Foret et al., "Sharpness-Aware Minimization for Efficiently Improving
       Generalization", ICLR 2021.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        auxiliary: Iterable[tuple[Any, ...]],
        *,
        aux_lr: float = 3e-4,
        rho: float,
        clip: str = "global",
        aux_optimizer: str = "adam",
        aux_betas: tuple[float, float] = (0.9, 0.999),
        aux_eps: float = 1e-8,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer: expected a torch.optim.Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        self.pairs = _check_pairs(auxiliary)
        self.aux_lr = check.positive(aux_lr, "aux_lr")
        self.rho = check.positive(rho, "rho")
        self.clip = check.choice(clip, "clip", CLIPS)
        self.aux_method = check.choice(aux_optimizer, "aux_optimizer", AUX_OPTIMIZERS)
        if not isinstance(aux_betas, Sequence) or len(aux_betas) != 2:
            raise ValueError(f"aux_betas: must be a pair, got {aux_betas!r}")
        betas = (check.unit(aux_betas[0], "aux_betas[0]"), check.unit(aux_betas[1], "aux_betas[1]"))
        check.positive(aux_eps, "aux_eps")
        primary = {id(p) for g in optimizer.param_groups for p in g["params"]}
        aux_params = [t for b, a, _ in self.pairs for t in (b, a)]
        if any(id(t) in primary for t in aux_params):
            raise ValueError("auxiliary: a factor is also trained by the primary optimizer")
        if self.aux_method == "adam":
            self.aux_optimizer: Optimizer = torch.optim.Adam(aux_params, lr=self.aux_lr, betas=betas,
                                                             eps=aux_eps, maximize=True)
        else:
            self.aux_optimizer = torch.optim.SGD(aux_params, lr=self.aux_lr, maximize=True)
        self.last_norm = 0.0

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        """The primary optimizer's groups (what a learning-rate scheduler adjusts)."""
        return self.optimizer.param_groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)
        self.aux_optimizer.zero_grad(set_to_none=set_to_none)

    @torch.no_grad()
    def auxiliary_norms(self) -> list[float]:
        """``||s B2 A2||_F`` of every auxiliary pair.

        Computed as ``s sqrt(<B^T B, A A^T>)`` (``r x r`` products), never forming ``B A``.
        """
        sq = torch.stack([(s * s) * ((b.float().mT @ b.float()) * (a.float() @ a.float().mT)).sum().cpu()
                          for b, a, s in self.pairs])
        return sq.clamp_min(0).sqrt().tolist()

    @torch.no_grad()
    def _clip(self) -> None:
        norms = self.auxiliary_norms()
        if self.clip == "global":
            c = math.sqrt(sum(n * n for n in norms))
            factors = [math.sqrt(self.rho / c) if c > self.rho else 1.0] * len(norms)
        elif self.clip == "layer":
            factors = [math.sqrt(self.rho / n) if n > self.rho else 1.0 for n in norms]
        else:
            factors = [1.0] * len(norms)
        for (b, a, _), f in zip(self.pairs, factors, strict=True):
            if f != 1.0:
                b.mul_(f)
                a.mul_(f)
        self.last_norm = math.sqrt(sum((n * f * f) ** 2 for n, f in zip(norms, factors, strict=True)))

    def step(self, closure: Callable[[], float] | None = None) -> Any:
        """Descend on the primary module, ascend on the auxiliary one, clip (one gradient).

        Parameters
        ----------
        closure : callable, optional
            Re-evaluates the model at the merged weights (both modules active), calls
            ``backward`` and returns the loss.

        Returns
        -------
        The closure's loss, if given.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self.optimizer.step()
        self.aux_optimizer.step()
        self._clip()
        return loss

    def state_dict(self) -> dict[str, Any]:
        """Both optimizers' states and the settings (the factors are saved with the model)."""
        return {"primary": self.optimizer.state_dict(), "auxiliary": self.aux_optimizer.state_dict(),
                "aux_lr": self.aux_lr, "rho": self.rho, "clip": self.clip, "aux_optimizer": self.aux_method}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved; without ``"auxiliary"`` the ascent starts afresh."""
        if not isinstance(state_dict, dict) or "primary" not in state_dict:
            raise ValueError("state_dict: not a BiLoRA state (no 'primary')")
        if state_dict.get("aux_optimizer", self.aux_method) != self.aux_method:
            raise ValueError(f"state_dict: saved with aux_optimizer={state_dict['aux_optimizer']!r}, "
                             f"this optimizer uses {self.aux_method!r}")
        self.optimizer.load_state_dict(state_dict["primary"])
        if "auxiliary" in state_dict:
            self.aux_optimizer.load_state_dict(state_dict["auxiliary"])
        else:
            self.aux_optimizer.state.clear()
