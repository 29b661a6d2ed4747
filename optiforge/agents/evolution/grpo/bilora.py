"""Bi-LoRA in the GRPO loop: the auxiliary adapter held by peft beside the primary one.

The update rule is :class:`optiforge.optim.BiLoRA` (plain torch); this module is the peft
plumbing: a second LoRA adapter on the same layers (:func:`add_auxiliary_adapter`), its factors
(:func:`adapter_factors`), and :class:`BiLoRAGRPOLearner`, the GRPO learner whose forward/backward
runs with both adapters active (peft sums every active adapter's ``scale * B @ A`` into the
layer) and whose optimizer descends on the primary and ascends on the auxiliary. Only the
primary adapter is ever active outside an update and only it is saved, so what generation and
disk see is a standard LoRA adapter (peft, vLLM).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch

from optiforge import validation as check
from optiforge.agents.evolution.grpo.learner import GRPOLearner
from optiforge.agents.protocols import TrainableLLM
from optiforge.optim.bilora import AUX_OPTIMIZERS, CLIPS, BiLoRA

AUX_ADAPTER = "bilora_aux"


def add_auxiliary_adapter(model: Any, primary: str, *, name: str = AUX_ADAPTER, r: int | None = None,
                          seed: int = 0) -> None:
    """Add a LoRA adapter ``name`` on the layers of adapter ``primary`` of a ``PeftModel``.

    Same target modules, ``lora_alpha`` and dropout as the primary; rank ``r`` (default the
    primary's). peft's initialisation (``B = 0``, ``A`` Kaiming-uniform) under ``seed``, so the
    auxiliary perturbation starts at zero. ``primary`` stays the only active adapter.
    """
    from peft import LoraConfig

    cfg = model.peft_config[primary]
    aux = LoraConfig(r=r or cfg.r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                     target_modules=cfg.target_modules, bias="none", task_type=cfg.task_type)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model.add_adapter(name, aux)
    model.base_model.set_adapter(primary)


def adapter_factors(model: Any, name: str) -> list[tuple[torch.Tensor, torch.Tensor, float]]:
    """``(B, A, scale)`` of adapter ``name`` in every LoRA layer of ``model`` (``dW = scale B A``)."""
    from peft.tuners.lora import LoraLayer

    out = []
    for module in model.modules():
        if isinstance(module, LoraLayer) and name in module.lora_A:
            out.append((module.lora_B[name].weight, module.lora_A[name].weight, float(module.scaling[name])))
    if not out:
        raise ValueError(f"adapter {name!r} has no LoRA layers in this model")
    return out


class BiLoRAGRPOLearner(GRPOLearner):
    """:class:`GRPOLearner` with Bi-LoRA: descent on the primary adapter, clipped ascent on an auxiliary.

    Every update runs one forward/backward at the merged weights ``W0 + B1 A1 + s B2 A2`` (both
    adapters active) and takes one :class:`~optiforge.optim.BiLoRA` step: AdamW on the primary
    (after the usual gradient-norm clip), ascent on the auxiliary, global (or layer-wise)
    clipping of the auxiliary perturbation to ``rho``. Outside :meth:`step` only the primary is
    active, so generation samples ``W0 + B1 A1``; only the primary is saved.

    Parameters
    ----------
    llm : TrainableLLM
    rho : float
        Radius of the auxiliary perturbation (not given by the paper; 0.05 is SAM's customary
        value).
    aux_lr : float, optional
        Auxiliary learning rate (default: ``lr``, as the paper reports ``eta2 = eta1`` best).
    aux_rank : int, optional
        Rank of the auxiliary adapter (default: ``lora_r``; not given by the paper).
    clip : {"global", "layer", "none"}
    aux_optimizer : {"adam", "sgd"}
        See :class:`~optiforge.optim.BiLoRA`.
    **kwargs
        Everything :class:`GRPOLearner` takes.

    Notes
    -----
    Deviation from :class:`~optiforge.agents.protocols.PolicyLearner`'s exact resume: the
    auxiliary adapter and its optimizer state never reach disk, so :meth:`load` restores the
    primary adapter and its AdamW state exactly and restarts the auxiliary at zero. With
    ``num_iterations > 1`` the frozen "old" log-probabilities are computed with the auxiliary
    perturbation of that moment active.
    """

    def __init__(self, llm: TrainableLLM, *, rho: float = 0.05, aux_lr: float | None = None,
                 aux_rank: int | None = None, clip: str = "global", aux_optimizer: str = "adam",
                 **kwargs: Any) -> None:
        self.rho = check.positive(rho, "rho")
        self.aux_lr = None if aux_lr is None else check.positive(aux_lr, "aux_lr")
        self.aux_rank = None if aux_rank is None else check.integer(aux_rank, "aux_rank", minimum=1)
        self.clip = check.choice(clip, "clip", CLIPS)
        self.aux_optimizer = check.choice(aux_optimizer, "aux_optimizer", AUX_OPTIMIZERS)
        super().__init__(llm, **kwargs)

    def _attach_adapter(self, model: Any, gradient_checkpointing: bool) -> Any:
        peft_model = super()._attach_adapter(model, gradient_checkpointing)
        primary = peft_model.active_adapter
        add_auxiliary_adapter(peft_model, primary, r=self.aux_rank or self.lora_r, seed=self.seed + 1)
        self.aux_factors = adapter_factors(peft_model, AUX_ADAPTER)
        return peft_model

    def _make_optimizer(self) -> BiLoRA:  # type: ignore[override]
        return BiLoRA(super()._make_optimizer(), self.aux_factors, aux_lr=self.aux_lr or self.lr,
                      rho=self.rho, clip=self.clip, aux_optimizer=self.aux_optimizer)

    def _activate(self) -> None:
        # Both adapters in the forward (and trainable); peft's set_adapter takes a list.
        self.model.base_model.set_adapter([self.adapter_name, AUX_ADAPTER])

    def _deactivate_auxiliary(self) -> None:
        self.model.base_model.set_adapter(self.adapter_name)

    def step(self, groups: Sequence[Any]) -> dict[str, float]:
        try:
            stats = super().step(groups)
        finally:
            self._deactivate_auxiliary()
        stats["aux_norm"] = self.optimizer.last_norm
        self.last_stats = stats
        return stats

    def _optimizer_state(self) -> dict[str, Any]:
        state = self.optimizer.state_dict()
        state.pop("auxiliary")  # the auxiliary is training-only: it never reaches disk
        return state

    def load(self, directory: str | os.PathLike[str]) -> None:
        """Restore the primary adapter, its optimizer state and the step; restart the auxiliary."""
        super().load(directory)
        with torch.no_grad():
            for b, _, _ in self.aux_factors:
                b.zero_()
        self.optimizer.aux_optimizer.state.clear()

    def _hparams(self) -> dict[str, Any]:
        return {**super()._hparams(), "lora": "bilora", "rho": self.rho, "aux_lr": self.aux_lr or self.lr,
                "aux_rank": self.aux_rank or self.lora_r, "clip": self.clip, "aux_optimizer": self.aux_optimizer}
