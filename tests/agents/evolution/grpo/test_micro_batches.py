"""Micro-batching a GRPO update changes its memory, not its gradient."""

from __future__ import annotations

import pytest
from grpo_helpers import BAD, GOOD, PROMPT

from optiforge.agents.evolution.grpo import GRPOLearner
from optiforge.types import Completion

pytestmark = pytest.mark.slow


def test_micro_batch_size_leaves_the_update_unchanged(fresh_llm) -> None:
    a = GRPOLearner(fresh_llm(), seed=5, micro_batch_size=1, lr=1e-4)
    b = GRPOLearner(fresh_llm(), seed=5, micro_batch_size=3, lr=1e-4)
    prompt = a.llm.format_prompt(PROMPT)
    # Completions of different lengths: each micro-batch is cut to its own longest one.
    groups = [(prompt, [Completion(GOOD, finish_reason="stop"), BAD, "def square(x): return x**2"],
               [1.0, -0.8, 0.3])]
    sa, sb = a.step(groups), b.step(groups)
    assert sa["tokens"] == sb["tokens"]
    for key in ("loss", "kl", "grad_norm"):
        assert sa[key] == pytest.approx(sb[key], rel=1e-3, abs=1e-7), key
    assert sa["grad_norm"] > 0
    with pytest.raises(ValueError, match="micro_batch_size"):
        GRPOLearner(a.llm, micro_batch_size=0)
