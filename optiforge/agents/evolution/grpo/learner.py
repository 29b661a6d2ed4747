"""Online GRPO on a (4-bit quantised) causal LM with a LoRA adapter: CALM's "numerical guidance".

The evolution agent samples ``G`` responses to one prompt and turns their sandboxed evaluations
into CALM rewards; :class:`GRPOLearner` then takes one policy-gradient step on those groups.
The learner never samples: it receives the generator itself (a
:class:`~optiforge.agents.protocols.TrainableLLM`) and the already-scored text, which is why it
does not use TRL's ``GRPOTrainer`` (that trainer owns a dataset, samples completions itself
and calls reward functions; in CALM the agent samples and the rewards come from the
evaluator, asynchronously to training). The loss is
:mod:`optiforge.optim.policy_gradient`'s (TRL's definitions); the per-token log-probabilities
are those of TRL's ``selective_log_softmax``, computed a chunk of positions at a time
(:mod:`~optiforge.agents.evolution.grpo.logprobs`) so no ``(tokens, vocabulary)`` logits
tensor outlives its chunk.

The reference policy is the base model itself with the adapter disabled (no second copy in
memory). ``pi_old`` is the policy that sampled the completions: with ``num_iterations=1`` (the
default, one optimizer step per batch, as CALM's online loop and TRL's default do) it equals
the current policy, so ``rho = 1`` and the clip is inactive; the gradient is then the plain
advantage-weighted policy gradient plus the KL term. With ``num_iterations > 1`` the old
log-probabilities are frozen before the first step and the clip takes effect from the second.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from optiforge import validation as check
from optiforge.agents.evolution.grpo import checkpoint, logprobs
from optiforge.agents.protocols import TrainableLLM
from optiforge.optim.policy_gradient import (
    LOSS_TYPES,
    aggregate_token_loss,
    group_advantages,
    grpo_token_loss,
)
from optiforge.types import Completion

Group = tuple[str, Sequence[str | Completion], Sequence[float]]


def _check_target_modules(value: Any) -> str | list[str]:
    if isinstance(value, str) and value.strip():
        return value
    if (
        not isinstance(value, str)
        and isinstance(value, Sequence)
        and value
        and all(isinstance(t, str) and t for t in value)
    ):
        return list(value)
    raise ValueError(
        f"target_modules: must be 'all-linear' or a non-empty list of names, got {value!r}"
    )


class GRPOLearner:
    """Group Relative Policy Optimization on a LoRA adapter over a (4-bit) causal LM.

    Satisfies :class:`~optiforge.agents.protocols.PolicyLearner`. The adapter is injected into
    ``llm.model`` **in place** (PEFT), so the generator samples from the newest policy without
    reloading anything; the saved adapter directories serve out-of-process backends (vLLM LoRA
    serving) and resume.

    Parameters
    ----------
    llm : TrainableLLM
        The generator whose model is trained (typically bitsandbytes NF4: QLoRA). Its
        :meth:`~optiforge.agents.protocols.TrainableLLM.prepare_for_training` is called before
        the adapter is attached and before every update. If ``llm.model`` is already a
        ``PeftModel``, its active LoRA adapter continues training; otherwise a fresh LoRA
        adapter is created.
    lora_r, lora_alpha, lora_dropout : int, float, float
        LoRA rank, scale numerator and dropout (ignored when ``llm.model`` is a PeftModel).
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
        Recompute activations in the backward pass (less memory, ~30 % slower).
    micro_batch_size : int
        Sequences per forward/backward pass. Gradients of all micro-batches are accumulated
        into one optimizer step, so the update is the same for any size; memory (activations
        and the ``(sequences, tokens, vocabulary)`` logits) grows with it. Each micro-batch
        is cut to its own longest completion.
    seed : int
        Seeds the LoRA initialisation (without touching the caller's RNG).
    logprob_chunk_tokens : int or None
        Completion positions whose logits are computed at once (memory only: the values are
        the same); ``None`` computes the full ``(sequences, tokens, vocabulary)`` logits.

    Raises
    ------
    TypeError, ValueError
        On a bad argument (the message names it), checked before the model is touched.

    Notes
    -----
    Deviations: completions arrive as text and are re-tokenised, so a token sequence can differ
    from the sampled one where the tokenizer's decode/encode is not a bijection (rare for
    code); the end-of-sequence token is trained only for :class:`~optiforge.types.Completion`
    inputs with ``finish_reason == "stop"`` (plain strings carry no stop information). CALM
    does not report epsilon, beta or the number of epochs per batch; the defaults above are
    TRL's / the GRPO paper's.

    The parts a variant replaces are separate methods: :meth:`_attach_adapter` (which adapter
    is trained), :meth:`_make_optimizer`, :meth:`_accumulate_gradients` (forward/backward
    over the groups) and :meth:`_apply_update` (clip and step). Only :attr:`adapter_name` is
    saved, so a training-only second adapter never reaches a version directory.

    References
    ----------
    .. [1] Shao et al., "DeepSeekMath", arXiv:2402.03300, 2024 (GRPO).
    .. [2] Huang et al., "CALM: Co-evolution of Algorithms and Language Model for Automatic
       Heuristic Design", 2025.
    .. [3] Dettmers et al., "QLoRA", NeurIPS 2023; Hu et al., "LoRA", ICLR 2022.
    """

    def __init__(
        self,
        llm: TrainableLLM,
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
        micro_batch_size: int = 1,
        seed: int = 0,
        logprob_chunk_tokens: int | None = logprobs.CHUNK_TOKENS,
    ) -> None:
        if not isinstance(llm, TrainableLLM):
            raise TypeError(
                f"llm: expected a TrainableLLM (a backend whose model is in this process, e.g. "
                f"TransformersLLM), got {type(llm).__name__}"
            )
        self.lora_r = check.integer(lora_r, "lora_r", minimum=1)
        self.lora_alpha = check.positive(lora_alpha, "lora_alpha")
        self.lora_dropout = check.unit(lora_dropout, "lora_dropout")
        self.target_modules = _check_target_modules(target_modules)
        self.lr = check.positive(lr, "lr")
        self.beta = check.nonneg(beta, "beta")
        self.epsilon = check.unit(check.positive(epsilon, "epsilon"), "epsilon")
        self.max_grad_norm = check.positive(max_grad_norm, "max_grad_norm")
        self.num_iterations = check.integer(num_iterations, "num_iterations", minimum=1)
        self.loss_type = check.choice(loss_type, "loss_type", LOSS_TYPES)
        self.temperature = check.positive(temperature, "temperature")
        if max_completion_tokens is not None:
            check.integer(max_completion_tokens, "max_completion_tokens", minimum=1)
        self.max_completion_tokens = max_completion_tokens
        if not isinstance(gradient_checkpointing, bool):
            raise TypeError("gradient_checkpointing: expected a bool")
        self.micro_batch_size = check.integer(micro_batch_size, "micro_batch_size", minimum=1)
        self.seed = check.integer(seed, "seed", minimum=0)
        if logprob_chunk_tokens is not None:
            check.integer(logprob_chunk_tokens, "logprob_chunk_tokens", minimum=1)
        self.logprob_chunk_tokens = logprob_chunk_tokens

        self.llm = llm
        self.tokenizer = llm.tokenizer
        self._step = 0
        self.last_stats: dict[str, float] | None = None
        self.model = self._attach_adapter(llm.prepare_for_training(), gradient_checkpointing)
        self.adapter_name: str = self.model.active_adapter
        self._params = [p for p in self.model.parameters() if p.requires_grad]
        if not self._params:
            raise ValueError("target_modules: no trainable LoRA parameters were created")
        self.optimizer = self._make_optimizer()

    # ----------------------------------------------------------------------------- setup
    def _attach_adapter(self, model: Any, gradient_checkpointing: bool) -> Any:
        """The PEFT model whose active adapter is trained (injected into ``model`` in place)."""
        from peft import LoraConfig, PeftModel, get_peft_model, prepare_model_for_kbit_training

        if isinstance(model, PeftModel):
            name = model.active_adapter
            for n, p in model.named_parameters():
                p.requires_grad_(f".{name}." in n and "lora_" in n)
            if gradient_checkpointing:
                model.gradient_checkpointing_enable(
                    gradient_checkpointing_kwargs={"use_reentrant": False}
                )
            return model
        quantised = bool(
            getattr(model, "is_loaded_in_4bit", False) or getattr(model, "is_loaded_in_8bit", False)
        )
        if quantised:
            # QLoRA preparation: freeze the base, keep norms/embeddings in fp32 for stable grads.
            model = prepare_model_for_kbit_training(
                model,
                use_gradient_checkpointing=gradient_checkpointing,
                gradient_checkpointing_kwargs={"use_reentrant": False},
            )
        elif gradient_checkpointing:
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False}
            )
        config = LoraConfig(
            r=self.lora_r,
            lora_alpha=self.lora_alpha,
            lora_dropout=self.lora_dropout,
            target_modules=self.target_modules,
            bias="none",
            task_type="CAUSAL_LM",
        )
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.seed)
                return get_peft_model(model, config)
        except ValueError as exc:
            raise ValueError(f"target_modules: {exc}") from exc

    def _make_optimizer(self) -> torch.optim.Optimizer:
        # Plain AdamW (TRL's default optimizer); LoRA parameters are few, so no 8-bit states.
        return torch.optim.AdamW(self._params, lr=self.lr, weight_decay=0.0)

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
        """Where the adapter's weights (and every batch) live."""
        return self._params[0].device

    def trainable_parameters(self) -> int:
        """Number of trained (LoRA) parameters."""
        return sum(p.numel() for p in self._params)

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
            if (
                isinstance(completions, (str, bytes))
                or not isinstance(completions, Sequence)
                or not completions
            ):
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
        return {
            "input_ids": input_ids.to(dev),
            "attention_mask": attention.to(dev),
            "mask": mask.to(dev),
            "width": torch.tensor(width),
        }

    def _micro_batches(
        self, batch: dict[str, torch.Tensor], advantages: torch.Tensor
    ) -> list[tuple[dict[str, torch.Tensor], torch.Tensor]]:
        """Split one group's batch into micro-batches of :attr:`micro_batch_size` sequences,
        each cut to its own longest completion (right padding beyond it is dropped)."""
        out = []
        n = batch["input_ids"].shape[0]
        width = int(batch["width"])
        prompt_len = batch["input_ids"].shape[1] - width
        for start in range(0, n, self.micro_batch_size):
            rows = slice(start, start + self.micro_batch_size)
            mask = batch["mask"][rows]
            w = max(1, int(mask.sum(dim=1).max().item()))
            out.append(
                (
                    {
                        "input_ids": batch["input_ids"][rows, : prompt_len + w],
                        "attention_mask": batch["attention_mask"][rows, : prompt_len + w],
                        "mask": mask[:, :w],
                        "width": torch.tensor(w),
                    },
                    advantages[rows],
                )
            )
        return out

    def _logps(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Per-token log-probabilities of the completion tokens, shape ``(G, width)``."""
        return logprobs.completion_logprobs(
            self.model,
            batch["input_ids"],
            batch["attention_mask"],
            int(batch["width"]),
            temperature=self.temperature,
            chunk_tokens=self.logprob_chunk_tokens,
        )

    # ----------------------------------------------------------------------------- update
    def step(self, groups: Sequence[Group]) -> dict[str, float]:
        """One GRPO update on groups of responses, each group sharing one prompt.

        Parameters
        ----------
        groups : list of (prompt, completions, rewards)
            ``prompt``: the exact formatted text the model saw
            (``llm.format_prompt(user_prompt, system)``); ``completions``: the ``G`` sampled
            responses (str, or :class:`~optiforge.types.Completion` to also train the stop
            token); ``rewards``: their ``G`` rewards (higher is better).

        Returns
        -------
        dict
            ``loss`` (aggregated GRPO loss), ``kl`` (mean k3 KL per completion token),
            ``mean_reward``, ``grad_norm`` (before clipping), ``step`` (new
            :attr:`step_count`), ``clip_ratio`` (share of clipped tokens), ``tokens``.

        Raises
        ------
        ValueError
            On malformed ``groups`` (nothing is changed then).
        """
        checked = self._check_groups(groups)
        batches, advantages = [], []
        for p, cs, rs in checked:
            group_adv = group_advantages(torch.tensor(rs)).to(self.device)
            for micro, adv in self._micro_batches(self._encode(p, cs), group_adv):
                batches.append(micro)
                advantages.append(adv)
        n_tokens = float(sum(b["mask"].sum().item() for b in batches))
        n_seqs = float(sum(b["mask"].shape[0] for b in batches))
        was_training = self.model.training
        self.llm.prepare_for_training()
        self._activate()
        self.model.train()
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
                loss, kl_sum, clip_sum = self._accumulate_gradients(
                    batches, advantages, ref, old, n_tokens=n_tokens, n_seqs=n_seqs
                )
                totals["grad_norm"] += self._apply_update()
                totals["loss"] += loss
                totals["kl"] += kl_sum / max(n_tokens, 1.0)
                totals["clip_ratio"] += clip_sum / max(n_tokens, 1.0)
        finally:
            self.model.train(was_training)
        self._step += 1
        mean_reward = sum(sum(rs) for _, _, rs in checked) / n_seqs
        stats = {k: v / self.num_iterations for k, v in totals.items()}
        stats.update({"mean_reward": mean_reward, "step": self._step, "tokens": n_tokens})
        self.last_stats = stats
        return stats

    def _accumulate_gradients(
        self,
        batches: list[dict[str, torch.Tensor]],
        advantages: list[torch.Tensor],
        ref: list[torch.Tensor] | None,
        old: list[torch.Tensor] | None,
        *,
        n_tokens: float,
        n_seqs: float,
    ) -> tuple[float, float, float]:
        """Backpropagate the GRPO loss of every group; return (loss, KL sum, clipped tokens)."""
        loss_sum = kl_sum = clip_sum = 0.0
        for k, batch in enumerate(batches):
            logps = self._logps(batch)
            old_k = logps.detach() if old is None else old[k]
            ptl, ptkl, clipped = grpo_token_loss(
                logps,
                old_k,
                None if ref is None else ref[k],
                advantages[k],
                batch["mask"],
                epsilon=self.epsilon,
                beta=self.beta,
            )
            # Each group is a slice of one batch: normalise by the whole batch's count, so the
            # accumulated gradient is that of the batch loss (one optimizer step for all).
            loss = aggregate_token_loss(
                ptl,
                batch["mask"],
                self.loss_type,
                normalizer=n_tokens if self.loss_type == "dapo" else n_seqs,
            )
            loss.backward()
            loss_sum += float(loss.detach())
            kl_sum += float(ptkl.detach().sum())
            clip_sum += float(clipped.sum())
        return loss_sum, kl_sum, clip_sum

    def _apply_update(self) -> float:
        """Clip the gradient norm, take the optimizer step; return the norm before clipping."""
        grad_norm = torch.nn.utils.clip_grad_norm_(self._params, self.max_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(grad_norm)

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
            "lora_r": self.lora_r,
            "lora_alpha": self.lora_alpha,
            "lora_dropout": self.lora_dropout,
            "target_modules": self.target_modules,
            "lr": self.lr,
            "beta": self.beta,
            "epsilon": self.epsilon,
            "max_grad_norm": self.max_grad_norm,
            "num_iterations": self.num_iterations,
            "loss_type": self.loss_type,
            "temperature": self.temperature,
            "seed": self.seed,
        }

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the adapter (PEFT format), optimizer state and step counter to ``directory``.

        Parameters
        ----------
        directory : str or path
            Target directory (see :mod:`~optiforge.agents.evolution.grpo.checkpoint` for the
            format); written atomically, an older version of that name is replaced.

        Returns
        -------
        pathlib.Path
            The directory, loadable by :meth:`load`, ``PeftModel.from_pretrained`` and vLLM's
            LoRA serving.
        """
        hparams = self._hparams()
        return checkpoint.save_checkpoint(
            directory,
            self.model,
            self.adapter_name,
            state={"optimizer": self._optimizer_state(), "step": self._step, "hparams": hparams},
            info={
                "step": self._step,
                "stats": self.last_stats,
                "hparams": hparams,
                "trainable_parameters": self.trainable_parameters(),
            },
        )

    def _optimizer_state(self) -> dict[str, Any]:
        """The optimizer state a version keeps (a variant leaves training-only parts out)."""
        return self.optimizer.state_dict()

    def load(self, directory: str | os.PathLike[str]) -> None:
        """Restore adapter weights, optimizer state and step counter saved by :meth:`save`.

        A version whose optimizer state was dropped (:meth:`drop_optimizer_state`) restores
        the weights and the step; the optimizer then starts afresh.

        Raises
        ------
        TypeError
            If ``directory`` is not a path.
        ValueError
            If ``directory`` is not a saved learner state or its adapter's shape differs.
        """
        state = checkpoint.load_checkpoint(directory, self.model, self.adapter_name)
        if "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        else:
            self.optimizer = self._make_optimizer()
        self._step = int(state["step"])

    @staticmethod
    def drop_optimizer_state(directory: str | os.PathLike[str]) -> int:
        """Shrink a saved version to what serving needs (see :func:`checkpoint.drop_optimizer_state`).

        Returns
        -------
        int
            Bytes freed (0 when there was no optimizer state left to drop).
        """
        return checkpoint.drop_optimizer_state(directory)
