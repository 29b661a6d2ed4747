"""Per-token log-probabilities of completion tokens without a ``(tokens, vocabulary)`` tensor.

A GRPO update needs ``log pi(y_t | x, y_<t)`` for each completion token only. Computing it from
the model's full logits keeps a ``(tokens, vocabulary)`` fp32 tensor (75 MB for 384 tokens of a
49 152-token vocabulary), its temperature-scaled copy and, in the backward pass, the same again
for the softmax gradient. Here the decoder's last hidden states are projected by the output
head a chunk of positions at a time, each chunk reduced at once to
``z[y_t] / T - logsumexp(z / T)`` (the log-softmax of the sampled token), and, with autograd
on, each chunk is recomputed in the backward pass (activation checkpointing of the head), so
no more than one chunk's logits live at any time.

The value is the same as the log-softmax of the full temperature-scaled logits gathered at the
sampled tokens (TRL's ``selective_log_softmax``), up to the floating-point order of the head's
matrix product over a chunk instead of the whole sequence.

References
----------
.. [1] Shao et al., "DeepSeekMath", arXiv:2402.03300, 2024 (GRPO's per-token ratios and KL).
.. [2] Chen et al., "Training Deep Nets with Sublinear Memory Cost", arXiv:1604.06174, 2016
   (recomputing activations in the backward pass).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

# Causal LMs whose logits are exactly ``lm_head(last_hidden_state)`` (no soft-capping or logit
# scale between them), checked in their transformers ``forward``. Others take the full-logits
# path, which gives the same values with more memory.
PLAIN_HEAD_MODEL_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3"})
CHUNK_TOKENS = 64  # 64 x 49 152 fp32 logits = 12 MB per chunk for the bundled model


def _head_logps(
    head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor, temperature: float
) -> torch.Tensor:
    logits = head(hidden).float()
    if temperature != 1.0:
        logits = logits / temperature
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def split_causal_lm(model: Any) -> tuple[torch.nn.Module, torch.nn.Module] | None:
    """``(decoder, output head)`` of a (PEFT-wrapped) causal LM with a plain head, else ``None``.

    The modules are the model's own (LoRA layers injected in place stay in them, and a PEFT
    ``disable_adapter()`` context applies to them as well).
    """
    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = getattr(causal_lm, "config", None)
    if getattr(config, "model_type", None) not in PLAIN_HEAD_MODEL_TYPES:
        return None
    decoder = getattr(causal_lm, getattr(causal_lm, "base_model_prefix", ""), None)
    head = (
        causal_lm.get_output_embeddings() if hasattr(causal_lm, "get_output_embeddings") else None
    )
    if not isinstance(decoder, torch.nn.Module) or not isinstance(head, torch.nn.Module):
        return None
    return decoder, head


def completion_logprobs(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    width: int,
    *,
    temperature: float = 1.0,
    chunk_tokens: int | None = CHUNK_TOKENS,
) -> torch.Tensor:
    """Log-probabilities of the last ``width`` tokens of each row, shape ``(rows, width)``.

    Parameters
    ----------
    model : transformers causal LM (optionally a PEFT model)
        Called on ``input_ids`` / ``attention_mask`` (no KV cache).
    input_ids, attention_mask : torch.Tensor
        ``(rows, length)``: prompt followed by ``width`` completion positions (right padding
        inside them is the caller's to mask out).
    width : int
        Completion positions at the end of each row, ``1 <= width < length``.
    temperature : float
        Logits are divided by it before the log-softmax (as the sampler did).
    chunk_tokens : int or None
        Positions projected by the output head at once (memory: ``rows * chunk_tokens *
        vocabulary`` fp32 values, twice in the backward pass). ``None``: the model's full
        logits of all completion positions at once (the reference path; also taken for
        models outside :data:`PLAIN_HEAD_MODEL_TYPES`).

    Returns
    -------
    torch.Tensor
        fp32 ``log softmax(logits / temperature)`` at each completion token; differentiable
        when autograd is on.

    Raises
    ------
    ValueError
        If ``width`` or ``chunk_tokens`` is out of range.
    """
    length = input_ids.shape[1]
    if not 1 <= width < length:
        raise ValueError(f"width: expected 1 <= width < {length} (the row length), got {width}")
    if chunk_tokens is not None and chunk_tokens < 1:
        raise ValueError(f"chunk_tokens: expected an int >= 1 or None, got {chunk_tokens}")
    targets = input_ids[:, -width:]
    parts = None if chunk_tokens is None else split_causal_lm(model)
    if parts is None:
        # Same value from the full logits of the positions that predict the completion.
        out = model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            logits_to_keep=width + 1,
            use_cache=False,
        )
        return _head_logps(torch.nn.Identity(), out.logits[:, :-1, :], targets, temperature)
    decoder, head = parts
    hidden = decoder(
        input_ids=input_ids, attention_mask=attention_mask, use_cache=False
    ).last_hidden_state
    # Position p's hidden state predicts token p + 1: the completion's predictors end one
    # position before the row does.
    hidden = hidden[:, length - width - 1 : length - 1, :]
    pieces = []
    for start in range(0, width, chunk_tokens):
        h, t = hidden[:, start : start + chunk_tokens], targets[:, start : start + chunk_tokens]
        if torch.is_grad_enabled():
            # Keep only the hidden chunk for backward; its logits are recomputed there.
            pieces.append(checkpoint(_head_logps, head, h, t, temperature, use_reentrant=False))
        else:
            pieces.append(_head_logps(head, h, t, temperature))
    return torch.cat(pieces, dim=1)
