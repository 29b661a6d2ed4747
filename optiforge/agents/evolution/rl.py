"""Online GRPO on a (4-bit quantised) causal LM with a LoRA adapter: CALM's "numerical guidance".

The evolution agent samples ``G`` responses to one prompt and turns their sandboxed evaluations
into CALM rewards; :class:`GRPOLearner` then takes one policy-gradient step on those groups.
The learner never samples: it receives the model and tokenizer (from the platform's LLM backend)
and the already-scored text, which is why it does not use TRL's ``GRPOTrainer`` (that trainer
owns a dataset, samples completions itself and calls reward functions; in CALM the agent
samples and the rewards come from the evaluator, asynchronously to training). The loss below
follows TRL's ``GRPOTrainer`` definitions, and TRL's own ``selective_log_softmax`` computes the
per-token log-probabilities.

Objective for one batch of groups (``i`` a completion, ``t`` one of its tokens)::

    A_i     = (r_i - mean_g(r)) / (std_g(r) + 1e-4)           (group-normalised advantage)
    rho_it  = pi_theta(o_it | q, o_<t) / pi_old(o_it | ...)    (token-level importance ratio)
    L_it    = -min(rho_it * A_i, clip(rho_it, 1 - eps, 1 + eps) * A_i) + beta * KL_it
    KL_it   = exp(ref_it - logp_it) - (ref_it - logp_it) - 1   (Schulman's k3, >= 0)
    loss    = sum_{i,t} L_it / sum_i |o_i|                     (loss_type="dapo": token level)
            = mean_i (sum_t L_it / |o_i|)                      (loss_type="grpo": sequence level)

The reference policy is the base model itself with the adapter disabled (no second copy in
memory). ``pi_old`` is the policy that sampled the completions: with ``num_iterations=1`` (the
default, one optimizer step per batch, as CALM's online loop and TRL's default do) it equals
the current policy, so ``rho = 1`` and the clip is inactive; the gradient is then the plain
advantage-weighted policy gradient plus the KL term. With ``num_iterations > 1`` the old
log-probabilities are frozen before the first step and the clip takes effect from the second.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from optiforge.types import Completion

_ADV_EPS = 1e-4  # TRL's GRPOTrainer: advantages / (std + 1e-4)
_STATE_FILE = "learner_state.pt"
_INFO_FILE = "learner_info.json"
LOSS_TYPES = ("dapo", "grpo")

Group = tuple[str, Sequence[str | Completion], Sequence[float]]


def group_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """GRPO advantages of one group: ``(r - mean) / (std + 1e-4)``, unbiased std as in TRL.

    Parameters
    ----------
    rewards : torch.Tensor
        Shape ``(G,)``: the rewards of the ``G`` responses to one prompt.

    Returns
    -------
    torch.Tensor
        Shape ``(G,)``; all zeros when the rewards are equal or ``G == 1`` (nothing to compare).
    """
    rewards = rewards.to(torch.float32)
    if rewards.numel() < 2:
        return torch.zeros_like(rewards)
    return (rewards - rewards.mean()) / (rewards.std() + _ADV_EPS)


def grpo_token_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    ref_logps: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    epsilon: float,
    beta: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token clipped GRPO loss with the k3 KL penalty (before aggregation).

    Parameters
    ----------
    logps, old_logps : torch.Tensor
        Shape ``(B, T)``: per-token log-probabilities under the current and the sampling policy.
    ref_logps : torch.Tensor or None
        Shape ``(B, T)`` under the reference policy; ``None`` when ``beta == 0``.
    advantages : torch.Tensor
        Shape ``(B,)``: one advantage per sequence, shared by its tokens.
    mask : torch.Tensor
        Shape ``(B, T)``: 1 for completion tokens, 0 for padding.
    epsilon : float
        Clip range of the importance ratio.
    beta : float
        KL coefficient.

    Returns
    -------
    (per_token_loss, per_token_kl, clipped) : tuple of torch.Tensor
        Each of shape ``(B, T)``; ``clipped`` is 1 where the clip bound was the active term.
    """
    ratio = torch.exp(logps - old_logps)
    adv = advantages.unsqueeze(1)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + epsilon) * adv
    per_token_loss = -torch.min(unclipped, clipped)
    if ref_logps is not None and beta != 0.0:
        diff = ref_logps - logps
        per_token_kl = torch.exp(diff) - diff - 1.0
        per_token_loss = per_token_loss + beta * per_token_kl
    else:
        per_token_kl = torch.zeros_like(logps)
    was_clipped = (clipped < unclipped).to(logps.dtype) * mask
    return per_token_loss * mask, per_token_kl * mask, was_clipped


def unpack_cpu_4bit_weights(model: torch.nn.Module, *, keep_unpacked: bool = True) -> int:
    """Undo and (by default) switch off bitsandbytes' CPU inference packing of NF4 weights.

    On CPUs with AVX512-BF16, bitsandbytes repacks a ``Linear4bit`` weight the first time the
    layer runs in eval mode without grad (e.g. during generation) and from then on multiplies
    with a fused bf16 kernel that has **no autograd**: backpropagation through the frozen base
    then silently drops the input gradient, so only the LoRA factors next to the residual
    stream would learn. Moreover the pack / unpack round trip is lossy (the NF4 block scales
    pass through bf16; measured here: up to 7e-3 change of a dequantised weight per round
    trip), so packing for every generation and unpacking for every update would make the
    *frozen* base drift. Hence the learner unpacks once and keeps the weights unpacked;
    generation then uses bitsandbytes' generic dequantise-and-matmul path.

    Parameters
    ----------
    model : torch.nn.Module
        Any module tree; only ``bitsandbytes.nn.Linear4bit`` layers are touched.
    keep_unpacked : bool
        Also stop bitsandbytes from packing these layers again.

    Returns
    -------
    int
        Number of layers that were packed and are now unpacked.
    """
    try:
        from bitsandbytes.functional import _convert_weight_packed_for_cpu_inverse
        from bitsandbytes.nn import Linear4bit
    except ImportError:  # no bitsandbytes: nothing can be packed
        return 0
    count = 0
    for module in model.modules():
        if isinstance(module, Linear4bit):
            if keep_unpacked:
                module.support_avx512bf16_for_cpu = False
            state = getattr(module.weight, "quant_state", None)
            if state is not None and getattr(state, "packing_format_for_cpu", False):
                module.weight.data, module.weight.quant_state = _convert_weight_packed_for_cpu_inverse(
                    module.weight.data, state
                )
                count += 1
    return count


def _check_number(name: str, value: Any, *, low: float, low_open: bool, high: float | None = None,
                  high_open: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected a number, got {type(value).__name__}")
    v = float(value)
    too_low = v <= low if low_open else v < low
    too_high = high is not None and (v >= high if high_open else v > high)
    if not math.isfinite(v) or too_low or too_high:
        lo = "(" if low_open else "["
        hi = "inf)" if high is None else (f"{high})" if high_open else f"{high}]")
        raise ValueError(f"{name}: must lie in {lo}{low}, {hi}, got {value!r}")
    return v


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")
    return value


class GRPOLearner:
    """Group Relative Policy Optimization on a LoRA adapter over a (4-bit) causal LM.

    The adapter is injected into ``model`` **in place** (PEFT), so a generator that holds the
    same model object samples from the newest policy without reloading anything; the saved
    adapter directories serve out-of-process backends (vLLM LoRA serving) and resume.

    Parameters
    ----------
    model : transformers.PreTrainedModel or peft.PeftModel
        The causal LM, typically bitsandbytes NF4 (QLoRA). A ``PeftModel`` is trained as is
        (its active LoRA adapter continues training); anything else gets a fresh LoRA adapter.
    tokenizer : transformers.PreTrainedTokenizerBase
        Its tokenizer (chat template used by :meth:`format_prompt`).
    lora_r, lora_alpha, lora_dropout : int, float, float
        LoRA rank, scale numerator and dropout (ignored when ``model`` is already a PeftModel).
    target_modules : "all-linear" or list of str
        Modules given a LoRA adapter. ``"all-linear"``: every linear layer but the output head.
    lr : float
        AdamW learning rate (CALM: 5e-5).
    beta : float
        KL coefficient against the reference (the base model, adapter disabled). 0.04 is the
        GRPO paper's value and TRL's former default (TRL >= 0.19 defaults to 0.0).
    epsilon : float
        Clip range of the token-level importance ratio (TRL default 0.2).
    max_grad_norm : float
        Global gradient-norm clip (TRL default 1.0).
    num_iterations : int
        Optimizer steps per batch (TRL's ``num_iterations``, mu in the GRPO paper); 1 = online.
    loss_type : {"dapo", "grpo"}
        ``"dapo"`` (TRL's default): normalise by the total number of completion tokens in the
        batch (token-level loss). ``"grpo"``: mean over each sequence, then over sequences.
    temperature : float
        Logits are divided by it before the log-softmax, as in TRL; set it to the sampling
        temperature so the log-probabilities are those of the policy that sampled.
    max_completion_tokens : int, optional
        Completions are truncated to this many tokens (bounds the memory of one step).
    gradient_checkpointing : bool
        Trade compute for activation memory (useful for 7B models on one GPU).
    prompt_formatter : callable, optional
        ``(prompt, system) -> str``: the exact text the generator fed the model (e.g. the LLM
        backend's ``format_prompt``); by default the tokenizer's chat template.
    system : str, optional
        System message :meth:`format_prompt` uses when none is passed.
    seed : int
        Seeds the LoRA initialisation (the global torch RNG is left untouched).

    References
    ----------
    Shao et al., "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language
    Models", arXiv:2402.03300 (2024) -- GRPO (Eqs. 3-4, k3 KL estimator).
    Huang et al., "CALM: Co-evolution of Algorithms and Language Model for Automatic Heuristic
    Design", arXiv:2505.12285 (2025) -- online GRPO with G=4 on an INT4 model + LoRA, lr 5e-5.
    Dettmers et al., "QLoRA: Efficient Finetuning of Quantized LLMs", NeurIPS 2023.
    Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", ICLR 2022.
    von Werra et al., TRL ``GRPOTrainer`` documentation (loss definitions followed here).

    Notes
    -----
    Deviations: completions arrive as text and are re-tokenised, so a token sequence can differ
    from the sampled one where the tokenizer's decode/encode is not a bijection (rare for
    code); the end-of-sequence token is trained only for :class:`~optiforge.types.Completion`
    inputs with ``finish_reason == "stop"`` (plain strings carry no stop information). CALM
    does not report epsilon, beta or the number of epochs per batch; the defaults above are
    TRL's / the GRPO paper's. On CPU the learner switches off bitsandbytes' bf16 inference
    packing of the NF4 layers it trains (see :func:`unpack_cpu_4bit_weights`: that kernel has no
    autograd and its round trip is lossy), so generation on the shared model uses the generic
    NF4 path.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        lora_r: int = 16,
        lora_alpha: float = 32,
        lora_dropout: float = 0.0,
        target_modules: str | Sequence[str] = "all-linear",
        lr: float = 5e-5,
        beta: float = 0.04,
        epsilon: float = 0.2,
        max_grad_norm: float = 1.0,
        num_iterations: int = 1,
        loss_type: str = "dapo",
        temperature: float = 1.0,
        max_completion_tokens: int | None = None,
        gradient_checkpointing: bool = False,
        prompt_formatter: Callable[[str, str | None], str] | None = None,
        system: str | None = None,
        seed: int = 0,
    ) -> None:
        if not isinstance(model, torch.nn.Module) or not callable(getattr(model, "forward", None)):
            raise TypeError(f"model: expected a torch causal LM module, got {type(model).__name__}")
        if not callable(tokenizer) or not hasattr(tokenizer, "decode"):
            raise TypeError(f"tokenizer: expected a transformers tokenizer, got {type(tokenizer).__name__}")
        self.lora_r = _check_int("lora_r", lora_r, 1)
        self.lora_alpha = _check_number("lora_alpha", lora_alpha, low=0.0, low_open=True)
        self.lora_dropout = _check_number("lora_dropout", lora_dropout, low=0.0, low_open=False,
                                          high=1.0)
        if isinstance(target_modules, str):
            if not target_modules.strip():
                raise ValueError("target_modules: must be 'all-linear' or a non-empty list of names")
            targets: str | list[str] = target_modules
        elif isinstance(target_modules, Sequence) and target_modules and all(
            isinstance(t, str) and t for t in target_modules
        ):
            targets = list(target_modules)
        else:
            raise ValueError(
                f"target_modules: must be 'all-linear' or a non-empty list of names, got {target_modules!r}"
            )
        self.target_modules = targets
        self.lr = _check_number("lr", lr, low=0.0, low_open=True)
        self.beta = _check_number("beta", beta, low=0.0, low_open=False)
        self.epsilon = _check_number("epsilon", epsilon, low=0.0, low_open=True, high=1.0)
        self.max_grad_norm = _check_number("max_grad_norm", max_grad_norm, low=0.0, low_open=True)
        self.num_iterations = _check_int("num_iterations", num_iterations, 1)
        if loss_type not in LOSS_TYPES:
            raise ValueError(f"loss_type: expected one of {LOSS_TYPES}, got {loss_type!r}")
        self.loss_type = loss_type
        self.temperature = _check_number("temperature", temperature, low=0.0, low_open=True)
        if max_completion_tokens is not None:
            _check_int("max_completion_tokens", max_completion_tokens, 1)
        self.max_completion_tokens = max_completion_tokens
        if not isinstance(gradient_checkpointing, bool):
            raise TypeError("gradient_checkpointing: expected a bool")
        if prompt_formatter is not None and not callable(prompt_formatter):
            raise TypeError("prompt_formatter: expected a callable (prompt, system) -> str")
        if system is not None and not isinstance(system, str):
            raise TypeError(f"system: expected a str or None, got {type(system).__name__}")
        self.seed = _check_int("seed", seed, 0)
        self.tokenizer = tokenizer
        self.system = system
        self._prompt_formatter = prompt_formatter
        self._step = 0
        self.model = self._wrap(model, gradient_checkpointing)
        unpack_cpu_4bit_weights(self.model)
        self.adapter_name: str = self.model.active_adapter
        self._params = [p for n, p in self.model.named_parameters() if p.requires_grad]
        if not self._params:
            raise ValueError("target_modules: no trainable LoRA parameters were created")
        # Plain AdamW (TRL's default optimizer); LoRA parameters are few, so no 8-bit states.
        self.optimizer = torch.optim.AdamW(self._params, lr=self.lr, weight_decay=0.0)

    # ----------------------------------------------------------------------------- setup
    def _wrap(self, model: Any, gradient_checkpointing: bool) -> Any:
        from peft import LoraConfig, PeftModel, get_peft_model, prepare_model_for_kbit_training

        if isinstance(model, PeftModel):
            name = model.active_adapter
            for n, p in model.named_parameters():
                p.requires_grad_(f".{name}." in n and "lora_" in n)
            if gradient_checkpointing:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            return model
        quantised = bool(getattr(model, "is_loaded_in_4bit", False) or getattr(model, "is_loaded_in_8bit", False))
        if quantised:
            # QLoRA preparation: freeze the base, keep norms/embeddings in fp32 for stable grads.
            model = prepare_model_for_kbit_training(
                model, use_gradient_checkpointing=gradient_checkpointing,
                gradient_checkpointing_kwargs={"use_reentrant": False},
            )
        elif gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        config = LoraConfig(
            r=self.lora_r, lora_alpha=self.lora_alpha, lora_dropout=self.lora_dropout,
            target_modules=self.target_modules, bias="none", task_type="CAUSAL_LM",
        )
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.seed)
                return get_peft_model(model, config)
        except ValueError as exc:
            raise ValueError(f"target_modules: {exc}") from exc

    def _activate(self) -> None:
        """Make this learner's adapter the active, trainable one again.

        A backend that loads a saved version into the same model object (PEFT adds it beside
        ours and activates it) would otherwise leave our parameters out of the forward pass.
        """
        # The layers, not the PeftModel wrapper, decide which adapter runs: set them directly.
        self.model.base_model.set_adapter(self.adapter_name)
        for p in self._params:
            p.requires_grad_(True)

    @property
    def step_count(self) -> int:
        """Number of :meth:`step` calls applied so far (the adapter version)."""
        return self._step

    @property
    def device(self) -> torch.device:
        return self._params[0].device

    def trainable_parameters(self) -> int:
        """Number of trained (LoRA) parameters."""
        return sum(p.numel() for p in self._params)

    def format_prompt(self, prompt: str, system: str | None = None) -> str:
        """The text a chat model sees for ``prompt``: the form :meth:`step` expects.

        Parameters
        ----------
        prompt : str
            The user message.
        system : str, optional
            System message (default: the ``system`` given at construction).

        Returns
        -------
        str
            ``prompt_formatter(prompt, system)`` when one was given, else the tokenizer's chat
            template with the generation prompt appended (or ``prompt`` itself without one).
        """
        if not isinstance(prompt, str):
            raise TypeError(f"prompt: expected a str, got {type(prompt).__name__}")
        system = self.system if system is None else system
        if self._prompt_formatter is not None:
            return self._prompt_formatter(prompt, system)
        if getattr(self.tokenizer, "chat_template", None):
            messages = ([{"role": "system", "content": system}] if system else []) + [
                {"role": "user", "content": prompt}
            ]
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return f"{system}\n\n{prompt}" if system else prompt

    # ----------------------------------------------------------------------------- data
    @staticmethod
    def _check_groups(groups: Any) -> list[tuple[str, list[str | Completion], list[float]]]:
        if not isinstance(groups, Sequence) or isinstance(groups, (str, bytes)) or not groups:
            raise ValueError("groups: expected a non-empty list of (prompt, completions, rewards)")
        out = []
        for k, g in enumerate(groups):
            if not isinstance(g, Sequence) or isinstance(g, (str, bytes)) or len(g) != 3:
                raise ValueError(f"groups[{k}]: expected a (prompt, completions, rewards) triple")
            prompt, completions, rewards = g
            if not isinstance(prompt, str) or not prompt:
                raise ValueError(f"groups[{k}]: prompt must be a non-empty str")
            if isinstance(completions, (str, bytes)) or not isinstance(completions, Sequence) or not completions:
                raise ValueError(f"groups[{k}]: completions must be a non-empty list of str")
            if not all(isinstance(c, (str, Completion)) for c in completions):
                raise ValueError(f"groups[{k}]: completions must be str or Completion")
            if isinstance(rewards, (str, bytes)) or not isinstance(rewards, Sequence):
                raise ValueError(f"groups[{k}]: rewards must be a list of numbers")
            if len(rewards) != len(completions):
                raise ValueError(
                    f"groups[{k}]: {len(completions)} completions but {len(rewards)} rewards"
                )
            for r in rewards:
                if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r):
                    raise ValueError(f"groups[{k}]: rewards must be finite numbers, got {r!r}")
            out.append((prompt, list(completions), [float(r) for r in rewards]))
        return out

    def _encode(self, prompt: str, completions: list[str | Completion]) -> dict[str, torch.Tensor]:
        """Prompt + right-padded completions of one group (all share the prompt: no left pad)."""
        tok = self.tokenizer
        prompt_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        if not prompt_ids:
            raise ValueError("groups: a prompt tokenises to nothing")
        eos = tok.eos_token_id
        seqs: list[list[int]] = []
        for c in completions:
            text = c.text if isinstance(c, Completion) else c
            ids = tok(text, add_special_tokens=False)["input_ids"] if text else []
            if isinstance(c, Completion) and c.finish_reason == "stop" and eos is not None:
                ids = ids + [int(eos)]
            if self.max_completion_tokens is not None:
                ids = ids[: self.max_completion_tokens]
            seqs.append(ids)
        width = max(1, max(len(s) for s in seqs))
        pad = tok.pad_token_id if tok.pad_token_id is not None else (eos or 0)
        n, p = len(seqs), len(prompt_ids)
        input_ids = torch.full((n, p + width), int(pad), dtype=torch.long)
        attention = torch.zeros((n, p + width), dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.float32)
        prompt_t = torch.tensor(prompt_ids, dtype=torch.long)
        for i, s in enumerate(seqs):
            input_ids[i, :p] = prompt_t
            attention[i, :p] = 1
            if s:
                input_ids[i, p : p + len(s)] = torch.tensor(s, dtype=torch.long)
                attention[i, p : p + len(s)] = 1
                mask[i, : len(s)] = 1.0
        dev = self.device
        return {"input_ids": input_ids.to(dev), "attention_mask": attention.to(dev),
                "mask": mask.to(dev), "width": torch.tensor(width)}

    def _logps(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Per-token log-probabilities of the completion tokens, shape ``(G, width)``."""
        from trl.trainer.utils import selective_log_softmax

        width = int(batch["width"])
        out = self.model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
            logits_to_keep=width + 1, use_cache=False,
        )
        logits = out.logits[:, :-1, :].float() / self.temperature
        targets = batch["input_ids"][:, -width:]
        return selective_log_softmax(logits, targets)

    # ----------------------------------------------------------------------------- update
    def step(self, groups: Sequence[Group]) -> dict[str, float]:
        """One GRPO update on groups of responses, each group sharing one prompt.

        Parameters
        ----------
        groups : list of (prompt, completions, rewards)
            ``prompt``: the exact formatted text the model saw (see :meth:`format_prompt`);
            ``completions``: the ``G`` sampled responses (str, or
            :class:`~optiforge.types.Completion` to also train the stop token);
            ``rewards``: their ``G`` rewards (higher is better).

        Returns
        -------
        dict
            ``loss`` (aggregated GRPO loss), ``kl`` (mean k3 KL per completion token),
            ``mean_reward``, ``grad_norm`` (before clipping), ``step`` (new
            :attr:`step_count`), ``clip_ratio`` (share of clipped tokens), ``tokens``.
        """
        checked = self._check_groups(groups)
        batches = [self._encode(p, cs) for p, cs, _ in checked]
        advantages = [group_advantages(torch.tensor(rs)).to(self.device) for _, _, rs in checked]
        n_tokens = float(sum(b["mask"].sum().item() for b in batches))
        n_seqs = float(sum(b["mask"].shape[0] for b in batches))
        was_training = self.model.training
        self._activate()
        self.model.train()
        unpack_cpu_4bit_weights(self.model)
        try:
            with torch.no_grad():
                ref = None
                if self.beta != 0.0:
                    with self.model.disable_adapter():
                        ref = [self._logps(b) for b in batches]
                old = [self._logps(b) for b in batches] if self.num_iterations > 1 else None
            totals = {"loss": 0.0, "kl": 0.0, "clip_ratio": 0.0, "grad_norm": 0.0}
            for _ in range(self.num_iterations):
                self.optimizer.zero_grad(set_to_none=True)
                loss_sum = kl_sum = clip_sum = 0.0
                for k, batch in enumerate(batches):
                    logps = self._logps(batch)
                    old_k = logps.detach() if old is None else old[k]
                    ptl, ptkl, clipped = grpo_token_loss(
                        logps, old_k, None if ref is None else ref[k], advantages[k], batch["mask"],
                        epsilon=self.epsilon, beta=self.beta,
                    )
                    if self.loss_type == "dapo":
                        loss = ptl.sum() / max(n_tokens, 1.0)
                    else:
                        loss = (ptl.sum(-1) / batch["mask"].sum(-1).clamp(min=1.0)).sum() / n_seqs
                    # Gradients accumulate over groups: one optimizer step for the whole batch.
                    loss.backward()
                    loss_sum += float(loss.detach())
                    kl_sum += float(ptkl.detach().sum())
                    clip_sum += float(clipped.sum())
                grad_norm = torch.nn.utils.clip_grad_norm_(self._params, self.max_grad_norm)
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
                totals["loss"] += loss_sum
                totals["kl"] += kl_sum / max(n_tokens, 1.0)
                totals["clip_ratio"] += clip_sum / max(n_tokens, 1.0)
                totals["grad_norm"] += float(grad_norm)
        finally:
            self.model.train(was_training)
        self._step += 1
        mean_reward = sum(sum(rs) for _, _, rs in checked) / n_seqs
        stats = {k: v / self.num_iterations for k, v in totals.items()}
        stats.update({"mean_reward": mean_reward, "step": self._step, "tokens": n_tokens})
        self.last_stats = stats
        return stats

    def sequence_logprob(self, prompt: str, completion: str) -> float:
        """Sum of the current policy's log-probabilities of ``completion`` after ``prompt``."""
        batch = self._encode(prompt, [completion])
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                return float((self._logps(batch) * batch["mask"]).sum())
        finally:
            self.model.train(was_training)

    # ----------------------------------------------------------------------------- persistence
    def _hparams(self) -> dict[str, Any]:
        return {
            "lora_r": self.lora_r, "lora_alpha": self.lora_alpha, "lora_dropout": self.lora_dropout,
            "target_modules": self.target_modules, "lr": self.lr, "beta": self.beta,
            "epsilon": self.epsilon, "max_grad_norm": self.max_grad_norm,
            "num_iterations": self.num_iterations, "loss_type": self.loss_type,
            "temperature": self.temperature, "seed": self.seed,
        }

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the adapter (PEFT format), optimizer state and step counter to ``directory``.

        The directory is written beside its final place and renamed into it, so a crash never
        leaves a half-written version under the final name (an older one is replaced).

        Parameters
        ----------
        directory : str or path
            Target directory; its parent is created if needed.

        Returns
        -------
        pathlib.Path
            The directory: ``adapter_config.json`` + ``adapter_model.safetensors`` (loadable by
            ``PeftModel.from_pretrained`` and by vLLM's LoRA serving), ``learner_state.pt``
            (optimizer state, step) and ``learner_info.json`` (step, last stats, settings).
        """
        if not isinstance(directory, (str, os.PathLike)) or not str(directory):
            raise TypeError("directory: expected a path")
        target = Path(directory).expanduser().resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            self.model.save_pretrained(str(tmp), selected_adapters=[self.adapter_name])
            # PEFT writes non-default adapters into a sub-folder; keep one flat layout.
            sub = tmp / self.adapter_name
            if self.adapter_name != "default" and sub.is_dir():
                for f in sub.iterdir():
                    shutil.move(str(f), tmp / f.name)
                sub.rmdir()
            torch.save(
                {"optimizer": self.optimizer.state_dict(), "step": self._step, "hparams": self._hparams()},
                tmp / _STATE_FILE,
            )
            info = {"step": self._step, "stats": getattr(self, "last_stats", None), "hparams": self._hparams(),
                    "trainable_parameters": self.trainable_parameters()}
            (tmp / _INFO_FILE).write_text(json.dumps(info, indent=2), encoding="utf-8")
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return target

    @staticmethod
    def drop_optimizer_state(directory: str | os.PathLike[str]) -> int:
        """Remove the optimizer state from a saved version; keep its adapter, step and info.

        Only the newest version is needed to resume, and the AdamW moments are twice the size
        of the adapter itself; campaigns call this on every older version. The file is
        replaced atomically, so a crash leaves either the old or the new one.

        Parameters
        ----------
        directory : str or path
            A directory written by :meth:`save`.

        Returns
        -------
        int
            Bytes freed (0 when there was no optimizer state left to drop).
        """
        state_file = Path(directory).expanduser() / _STATE_FILE
        if not state_file.is_file():
            raise ValueError(f"directory: {str(directory)!r} holds no saved GRPOLearner state")
        state = torch.load(state_file, map_location="cpu", weights_only=True)
        if "optimizer" not in state:
            return 0
        before = state_file.stat().st_size
        tmp = state_file.with_name(f".{_STATE_FILE}.tmp")
        torch.save({k: v for k, v in state.items() if k != "optimizer"}, tmp)
        os.replace(tmp, state_file)
        return before - state_file.stat().st_size

    def load(self, directory: str | os.PathLike[str]) -> None:
        """Restore adapter weights, optimizer state and step counter saved by :meth:`save`.

        A version whose optimizer state was dropped (:meth:`drop_optimizer_state`) restores
        the weights and the step; the optimizer then starts afresh.

        Raises
        ------
        ValueError
            If ``directory`` is not a saved learner state or its adapter shape differs.
        """
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        if not isinstance(directory, (str, os.PathLike)) or not str(directory):
            raise TypeError("directory: expected a path")
        d = Path(directory).expanduser()
        weights = d / "adapter_model.safetensors"
        state_file = d / _STATE_FILE
        if not weights.is_file() or not state_file.is_file() or not (d / "adapter_config.json").is_file():
            raise ValueError(f"directory: {str(directory)!r} holds no saved GRPOLearner state")
        saved = json.loads((d / "adapter_config.json").read_text(encoding="utf-8"))
        ours = self.model.peft_config[self.adapter_name]
        if int(saved.get("r", -1)) != int(ours.r):
            raise ValueError(f"directory: adapter rank {saved.get('r')} differs from this learner's {ours.r}")
        tensors = load_file(str(weights), device=str(self.device))
        result = set_peft_model_state_dict(self.model, tensors, adapter_name=self.adapter_name)
        unexpected = getattr(result, "unexpected_keys", [])
        if unexpected:
            raise ValueError(f"directory: adapter has {len(unexpected)} tensors this model lacks "
                             f"(e.g. {unexpected[0]})")
        state = torch.load(state_file, map_location=self.device, weights_only=True)
        if "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        self._step = int(state["step"])
