"""Online GRPO for the evolution agent: the learners and their adapter-version format.

The loss itself is in :mod:`optiforge.optim.policy_gradient`, usable by any trainer.
:data:`LEARNERS` maps the ``lora`` option (``--lora``) to a learner class: ``"lora"`` trains one
LoRA adapter, ``"bilora"`` adds Bi-LoRA's auxiliary adapter (:mod:`.bilora`).
"""

from typing import Any

from optiforge import validation as check
from optiforge.agents.evolution.grpo.bilora import BiLoRAGRPOLearner
from optiforge.agents.evolution.grpo.learner import GRPOLearner
from optiforge.agents.protocols import TrainableLLM

LEARNERS: dict[str, type[GRPOLearner]] = {"lora": GRPOLearner, "bilora": BiLoRAGRPOLearner}
LORA_VARIANTS = tuple(LEARNERS)


def make_learner(llm: TrainableLLM, *, lora: str = "lora", **options: Any) -> GRPOLearner:
    """The GRPO learner of LoRA variant ``lora`` (``"lora"`` or ``"bilora"``) with ``options``."""
    return LEARNERS[check.choice(lora, "lora", LORA_VARIANTS)](llm, **options)


__all__ = ["LEARNERS", "LORA_VARIANTS", "BiLoRAGRPOLearner", "GRPOLearner", "make_learner"]
