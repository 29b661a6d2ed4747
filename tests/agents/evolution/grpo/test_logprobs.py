"""Chunked completion log-probabilities change the update's memory, not its values."""

from __future__ import annotations

import pytest
import torch
from grpo_helpers import BAD, GOOD, PROMPT
from trl.trainer.utils import selective_log_softmax

from optiforge.agents.evolution.grpo import GRPOLearner
from optiforge.agents.evolution.grpo.logprobs import completion_logprobs
from optiforge.types import Completion

pytestmark = pytest.mark.slow

GROUP_COMPLETIONS = [Completion(GOOD, finish_reason="stop"), BAD, "def square(x): return x**2"]


def full_logits_logps(model, batch, temperature: float) -> torch.Tensor:
    """The learner's previous code path: the full logits, then TRL's selective_log_softmax."""
    width = int(batch["width"])
    out = model(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        logits_to_keep=width + 1,
        use_cache=False,
    )
    logits = out.logits[:, :-1, :].float() / temperature
    return selective_log_softmax(logits, batch["input_ids"][:, -width:])


def test_chunks_match_the_full_logits(fresh_llm) -> None:
    learner = GRPOLearner(fresh_llm(), seed=1, temperature=0.7)
    with torch.no_grad():  # a trained adapter, so the policy is not the base model
        for p in learner._params:
            p.add_(0.02 * torch.randn_like(p))
    batch = learner._encode(learner.llm.format_prompt(PROMPT), GROUP_COMPLETIONS)
    ids, attention, width = batch["input_ids"], batch["attention_mask"], int(batch["width"])
    learner.model.eval()
    with torch.no_grad():
        expected = full_logits_logps(learner.model, batch, 0.7)
        with learner.model.disable_adapter():
            expected_ref = full_logits_logps(learner.model, batch, 0.7)
            ref = completion_logprobs(
                learner.model, ids, attention, width, temperature=0.7, chunk_tokens=4
            )
    mask = batch["mask"].bool()
    assert width > 8  # several chunks, the last one partial
    for chunk in (4, 5, width, None):
        with torch.no_grad():
            got = completion_logprobs(
                learner.model, ids, attention, width, temperature=0.7, chunk_tokens=chunk
            )
        assert got.shape == expected.shape
        # Chunking changes the matmul shapes, so BLAS sums in another order. A log-prob is a
        # logit (~20) minus a log-sum-exp (~20), each with fp32 rounding of ~1e-6 relative:
        # up to ~4e-5 apart (seen: 1.9e-5), still 10x below the adapter's effect checked below.
        torch.testing.assert_close(got[mask], expected[mask], rtol=0, atol=1e-4)
    torch.testing.assert_close(ref[mask], expected_ref[mask], rtol=0, atol=1e-4)
    assert (ref[mask] - expected[mask]).abs().max() > 1e-3  # the adapter matters: not vacuous
    with pytest.raises(ValueError, match="^width:"):
        completion_logprobs(learner.model, ids, attention, ids.shape[1])
    with pytest.raises(ValueError, match="^chunk_tokens:"):
        completion_logprobs(learner.model, ids, attention, width, chunk_tokens=0)
    with pytest.raises(ValueError, match="logprob_chunk_tokens"):
        GRPOLearner(learner.llm, logprob_chunk_tokens=0)


def test_chunked_update_equals_the_full_logits_update(fresh_llm) -> None:
    chunked = GRPOLearner(fresh_llm(), seed=5, lr=1e-3, logprob_chunk_tokens=3)
    full = GRPOLearner(fresh_llm(), seed=5, lr=1e-3, logprob_chunk_tokens=None)
    groups = [(chunked.llm.format_prompt(PROMPT), GROUP_COMPLETIONS, [1.0, -0.8, 0.3])]
    # The second step has a non-zero KL to the reference (the first moved the adapter off zero).
    for step in (1, 2):
        a, b = chunked.step(groups), full.step(groups)
        for key in ("loss", "kl", "grad_norm"):
            # rel 1e-3: step 2 starts from AdamW's step 1, which amplifies float-order
            # differences (below); a chunking bug moves these figures by O(1).
            assert a[key] == pytest.approx(b[key], rel=1e-3, abs=1e-8), (step, key)
    # Step 2's figures also check step 1's weights. (Not compared element by element: AdamW
    # divides by sqrt(v), so an element whose gradient is ~0 moves by a visible fraction of lr
    # on float-order differences alone.)
    assert a["grad_norm"] > 0 and a["kl"] > 0
