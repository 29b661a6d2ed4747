"""Texts and parameter probes shared by the GRPO tests."""

from __future__ import annotations

import torch

PROMPT = "Write a Python function square(x) that returns x squared."
GOOD = "def square(x):\n    return x * x"
BAD = "Sorry, I can not write code for that."
PROJECTIONS = 7  # q, k, v, o, gate, up, down: every linear layer of a Llama block


def adapter_weights(learner) -> dict[str, torch.Tensor]:
    """Copies of the learner's own LoRA factors (not another adapter the backend loaded)."""
    ours = f".{learner.adapter_name}."
    return {n: p.detach().clone() for n, p in learner.model.named_parameters() if "lora_" in n and ours in n}


def moved(learner, before: dict[str, torch.Tensor]) -> set[str]:
    """Names of the factors that changed since ``before``."""
    now = dict(learner.model.named_parameters())
    return {n for n, p in before.items() if not torch.equal(now[n], p)}
