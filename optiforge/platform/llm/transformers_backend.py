"""Local generation with Hugging Face transformers, optionally 4-/8-bit via bitsandbytes, with LoRA."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from optiforge.agents.protocols import TextConstraint
from optiforge.platform.llm._common import chat_messages, check_generate_args
from optiforge.platform.llm.bundled import BUNDLED_NAME, bundled_checkpoint_dir, gguf_checkpoint_dir
from optiforge.platform.llm.constrained import ConstraintDecoder, check_constraints, decoders_for
from optiforge.platform.llm.models import FETCHABLE_MODELS, model_file
from optiforge.types import Completion

QUANTIZATIONS = ("int4", "int8", "none")
_DTYPES = ("auto", "float32", "bfloat16", "float16")


class _NoHubKernelWarning(logging.Filter):
    """Drops bitsandbytes' warning, on CPUs with AVX512-BF16, that it could not fetch an NF4
    matmul kernel from the Hugging Face Hub (it needs the Hub and a trust allow-list entry).
    bitsandbytes then uses its own CPU kernel, the one every NF4 figure in docs/benchmarks was
    measured with; the warning printed on every model load and told the user nothing to do."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Failed to load CPU gemm_4bit_forward")


logging.getLogger("bitsandbytes.backends.cpu.ops").addFilter(_NoHubKernelWarning())


@contextlib.contextmanager
def _no_transformers_progress_bar() -> Iterator[None]:
    """Silences transformers' own "Loading weights" tqdm bar (one redraw per tensor, hundreds
    of lines in a piped log) while a model loads, then restores the caller's setting: the
    campaign shows its own rich progress, and a user who turned the bar on keeps it."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


class TransformersLLM:
    """A :class:`~optiforge.agents.protocols.TrainableLLM` backed by a local transformers causal LM.

    All ``len(prompts) * n`` samples are generated together with left padding (in chunks of
    ``max_batch_size`` sequences); generation stops at the tokenizer's EOS / end-of-turn token.

    Parameters
    ----------
    model : str
        ``"smollm2"`` (the bundled SmolLM2-135M-Instruct), a fetched model's name
        (``"qwen-coder-0.5b"``, ``"qwen-coder-1.5b"``: its GGUF file's weights, dequantised), a
        Hugging Face model id, or a local checkpoint directory. Local paths, the bundled and the
        fetched models never touch the network.
    quantization : {"int4", "int8", "none"}
        ``"int4"``: NF4 weights (bitsandbytes ``Linear4bit``, double quantisation);
        ``"int8"``: LLM.int8 (``Linear8bitLt``); ``"none"``: full precision.
    adapter : str, optional
        A PEFT LoRA adapter directory to load on top of the base model.
    device : {"auto", "cpu", "cuda", "cuda:N"}
        ``"auto"`` picks the first CUDA device when present, else the CPU.
    dtype : {"auto", "float32", "bfloat16", "float16"}
        Weight / compute dtype of the non-quantised parts. ``"auto"``: float32 on CPU,
        bfloat16 on CUDA.
    max_batch_size : int
        Most sequences decoded together in one ``model.generate`` call.

    Notes
    -----
    The bundled model ships as a Q4_1 GGUF file; its dequantised weights are re-quantised to
    NF4, so they carry two roundings (Q4_1, then NF4) rather than QLoRA's one from bf16.
    On CPUs with AVX512-BF16, bitsandbytes runs NF4 matmuls in eval mode through a fused kernel
    that casts activations to bf16, while in train mode it dequantises to the compute dtype:
    log-probabilities computed under ``model.train()`` can differ slightly from those seen
    while sampling. :meth:`generate` always decodes in eval mode. After
    :meth:`prepare_for_training` (a trainer's hook) that kernel is off for good and both modes
    use the generic path.

    References
    ----------
    Dettmers et al., "QLoRA: Efficient Finetuning of Quantized LLMs", NeurIPS 2023 (NF4).
    Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", ICLR 2022.
    """

    supports_constraints = True  # generate(..., constraints=...): a ConstrainedLLM

    def __init__(
        self,
        model: str = BUNDLED_NAME,
        quantization: str = "int4",
        adapter: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        max_batch_size: int = 32,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise TypeError("model: expected a non-empty string (HF id, local path or 'smollm2')")
        if quantization not in QUANTIZATIONS:
            raise ValueError(f"quantization: expected one of {QUANTIZATIONS}, got {quantization!r}")
        if dtype not in _DTYPES:
            raise ValueError(f"dtype: expected one of {_DTYPES}, got {dtype!r}")
        if isinstance(max_batch_size, bool) or not isinstance(max_batch_size, int) or max_batch_size < 1:
            raise ValueError(f"max_batch_size: expected an int >= 1, got {max_batch_size!r}")
        if not isinstance(device, str) or not (device in ("auto", "cpu") or device.startswith("cuda")):
            raise ValueError(f"device: expected 'auto', 'cpu' or 'cuda[:N]', got {device!r}")

        import torch

        self.name = model
        self.quantization = quantization
        self.max_batch_size = max_batch_size
        if device == "auto":
            device = "cuda:0" if torch.cuda.is_available() else "cpu"
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device: {device!r} requested but CUDA is not available")
        self.device = torch.device(device)
        if dtype == "auto":
            dtype = "float32" if self.device.type == "cpu" else "bfloat16"
        self.dtype = getattr(torch, dtype)
        self._lock = threading.RLock()
        self._adapter_versions = 0
        self.adapter: str | None = None

        source, local = self._resolve_source(model)
        self.tokenizer = self._load_tokenizer(source, local)
        self.model = self._load_model(source, local)
        self.model.eval()
        self._eos_ids = self._collect_eos_ids()
        if adapter is not None:
            self.load_adapter(adapter)

    # -- loading -------------------------------------------------------------------------
    @staticmethod
    def _resolve_source(model: str) -> tuple[str, bool]:
        if model == BUNDLED_NAME:
            return str(bundled_checkpoint_dir()), True
        if model in FETCHABLE_MODELS:
            # The fetched GGUF file's own weights, dequantised: the twin of what llama.cpp samples.
            return str(gguf_checkpoint_dir(model_file(model), model, FETCHABLE_MODELS[model].sha256[:16])), True
        path = Path(model).expanduser()
        if path.exists():
            if not (path / "config.json").exists():
                raise ValueError(f"model: {model!r} is a path but has no config.json (not a checkpoint)")
            return str(path), True
        if model.startswith((".", "/", "~")):
            raise FileNotFoundError(f"model: no checkpoint directory at {model!r}")
        return model, os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")

    def _load_tokenizer(self, source: str, local: bool) -> Any:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(source, local_files_only=local)
        if tok.pad_token is None:
            # Padding positions are masked out, so any existing token id is safe to pad with.
            tok.pad_token = tok.eos_token
        tok.padding_side = "left"  # decoder-only generation appends after the last real token
        return tok

    def _load_model(self, source: str, local: bool) -> Any:
        import torch
        from transformers import AutoModelForCausalLM, BitsAndBytesConfig

        kwargs: dict[str, Any] = {"dtype": self.dtype, "local_files_only": local}
        if self.quantization == "int4":
            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True,
                bnb_4bit_quant_type="nf4",
                bnb_4bit_use_double_quant=True,
                bnb_4bit_compute_dtype=self.dtype,
            )
        elif self.quantization == "int8":
            kwargs["quantization_config"] = BitsAndBytesConfig(load_in_8bit=True)
        if self.device.type == "cuda":
            kwargs["device_map"] = {"": self.device.index or 0}
        with _no_transformers_progress_bar():
            model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
        if self.device.type == "cpu" and self.quantization == "none":
            model = model.to(torch.device("cpu"))
        return model

    def _collect_eos_ids(self) -> list[int]:
        ids: set[int] = set()
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        gen_eos = getattr(self.model.generation_config, "eos_token_id", None)
        if isinstance(gen_eos, int):
            ids.add(gen_eos)
        elif gen_eos:
            ids.update(int(i) for i in gen_eos)
        if not ids:
            raise ValueError(f"model: {self.name!r} defines no end-of-sequence token")
        return sorted(ids)

    # -- adapters ------------------------------------------------------------------------
    def load_adapter(self, path: str | os.PathLike[str]) -> str:
        """Switch generation to the LoRA adapter saved at ``path`` (a PEFT adapter directory).

        The previous adapter (if any) is dropped, so repeated loads of new versions (as the RL
        loop does) do not accumulate memory. Returns the internal adapter name.
        """
        from peft import PeftModel

        p = Path(path).expanduser()
        if not (p / "adapter_config.json").exists():
            raise FileNotFoundError(f"adapter: no adapter_config.json in {str(path)!r}")
        with self._lock:
            self._adapter_versions += 1
            name = f"v{self._adapter_versions}"
            if isinstance(self.model, PeftModel):
                old = self.model.active_adapter
                self.model.load_adapter(str(p), adapter_name=name, is_trainable=False)
                self.model.set_adapter(name)
                if old != name:
                    self.model.delete_adapter(old)
            else:
                self.model = PeftModel.from_pretrained(self.model, str(p), adapter_name=name, is_trainable=False)
            self.model.eval()
            self.adapter = str(p)
        return name

    # -- training ------------------------------------------------------------------------
    def prepare_for_training(self) -> Any:
        """Make :attr:`model` trainable in place and return it (the :class:`TrainableLLM` hook).

        Undoes bitsandbytes' CPU inference packing of the NF4 layers and keeps it off (see
        :func:`unpack_cpu_4bit_weights`); a no-op for unquantised or CUDA models. Idempotent and
        cheap, so a trainer may call it before every update.

        Returns
        -------
        torch.nn.Module
            :attr:`model` (a PEFT model once an adapter was injected or loaded).
        """
        with self._lock:
            unpack_cpu_4bit_weights(self.model)
            return self.model

    # -- prompting -----------------------------------------------------------------------
    def format_prompt(self, prompt: str, system: str | None = None) -> str:
        """The exact text fed to the model for ``prompt`` (chat template when the tokenizer has one)."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                chat_messages(prompt, system), tokenize=False, add_generation_prompt=True
            )
        return f"{system}\n\n{prompt}" if system else prompt

    @property
    def _template_has_special_tokens(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    # -- generation ----------------------------------------------------------------------
    def generate(
        self,
        prompts: Sequence[str],
        n: int = 1,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.8,
        top_p: float = 1.0,
        seed: int | None = None,
        system: str | None = None,
        constraints: Sequence[TextConstraint | None] | None = None,
    ) -> list[list[Completion]]:
        """Sample ``n`` completions for each prompt (see :class:`~optiforge.agents.protocols.ConstrainedLLM`).

        ``temperature == 0`` decodes greedily; otherwise plain temperature / nucleus sampling
        (no top-k). With ``seed`` the samples are reproducible for the same call (same prompts,
        ``n`` and ``max_batch_size``); the process-wide torch RNG is left untouched. With
        ``constraints`` (one per prompt, or ``None``), every sample of a prompt is decoded under
        its constraint: the nucleus is taken over the tokens the language allows.
        """
        prompts = check_generate_args(prompts, n, max_new_tokens, temperature, top_p, seed, system)
        per_prompt = check_constraints(constraints, len(prompts))
        if not prompts:
            return []
        import torch

        texts = [self.format_prompt(p, system) for p in prompts for _ in range(n)]
        decoders = (decoders_for(per_prompt, self._token_texts(), self._eos_ids[0])
                    if any(c is not None for c in per_prompt) else per_prompt)
        per_text = [decoders[i] for i in range(len(prompts)) for _ in range(n)]
        flat: list[Completion] = []
        with self._lock, torch.no_grad(), _seeded(seed, self.device), _eval_mode(self.model):
            for start in range(0, len(texts), self.max_batch_size):
                stop = start + self.max_batch_size
                flat.extend(self._generate_chunk(texts[start:stop], per_text[start:stop],
                                                 max_new_tokens, temperature, top_p))
        return [flat[i * n : (i + 1) * n] for i in range(len(prompts))]


    def _token_texts(self) -> list[str]:
        """Every token's text by id ("" for special tokens), built once."""
        if getattr(self, "_texts", None) is None:
            special = set(self.tokenizer.all_special_ids)
            self._texts = ["" if i in special else self.tokenizer.decode([i])
                           for i in range(len(self.tokenizer))]
        return self._texts

    def _generate_chunk(self, texts: list[str], decoders: list[ConstraintDecoder | None],
                        max_new_tokens: int, temperature: float, top_p: float) -> list[Completion]:
        enc = self.tokenizer(
            texts, return_tensors="pt", padding=True,
            add_special_tokens=not self._template_has_special_tokens,
        ).to(self.device)
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new_tokens,
            "eos_token_id": self._eos_ids,
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        constrained = any(d is not None for d in decoders)
        if temperature == 0:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        elif constrained:
            # The processor masks, then applies temperature and the nucleus itself: transformers'
            # own top-p runs before custom processors and could leave no allowed token.
            kwargs.update(do_sample=True, temperature=1.0, top_p=1.0, top_k=0)
        else:
            kwargs.update(do_sample=True, temperature=float(temperature), top_p=float(top_p), top_k=0)
        if constrained:
            from transformers import LogitsProcessorList

            kwargs["logits_processor"] = LogitsProcessorList([_ConstrainedLogits(
                decoders, enc["input_ids"].shape[1], self._eos_ids[0], temperature, top_p)])
        out = self.model.generate(**enc, **kwargs)
        new_tokens = out[:, enc["input_ids"].shape[1]:].tolist()
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        eos = set(self._eos_ids)
        results = []
        for row, plen in zip(new_tokens, prompt_lens, strict=True):
            cut = next((k for k, tok in enumerate(row) if tok in eos), None)
            body = row if cut is None else row[:cut]
            results.append(Completion(
                text=self.tokenizer.decode(body, skip_special_tokens=True),
                prompt_tokens=int(plen),
                # The EOS token was generated too, so it counts (as servers count it).
                completion_tokens=len(row) if cut is None else cut + 1,
                finish_reason="length" if cut is None else "stop",
            ))
        return results

    def __repr__(self) -> str:
        return (f"TransformersLLM(model={self.name!r}, quantization={self.quantization!r}, "
                f"device={str(self.device)!r}, adapter={self.adapter!r})")


class _ConstrainedLogits:
    """A transformers logits processor that keeps each row inside its constraint's language.

    Rows without a decoder pass through unchanged (their temperature and nucleus are then the
    processor's, the same as transformers' own). A row whose answer is complete, or that ended,
    may only emit the end token.
    """

    def __init__(self, decoders: list[ConstraintDecoder | None], prompt_len: int, eos_id: int,
                 temperature: float, top_p: float) -> None:
        self.decoders = decoders
        self.prompt_len = prompt_len
        self.eos_id = eos_id
        self.temperature = temperature
        self.top_p = top_p
        self.states = [None if d is None else d.start() for d in decoders]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        scores = scores.clone()
        step = input_ids.shape[1] - self.prompt_len
        for row, dec in enumerate(self.decoders):
            if dec is not None:
                if step > 0 and self.states[row] is not None:
                    self.states[row] = dec.options(self.states[row])[1].get(int(input_ids[row, -1]))
                state = self.states[row]
                allowed = ([self.eos_id] if state is None or dec.finished(state)
                           else dec.options(state)[0].tolist())
                keep = torch.full_like(scores[row], float("-inf"))
                keep[allowed] = 0.0
                scores[row] += keep
            if self.temperature > 0:
                scores[row] /= self.temperature
                if self.top_p < 1.0:
                    order = torch.argsort(scores[row], descending=True)
                    cum = torch.softmax(scores[row][order], dim=-1).cumsum(dim=-1)
                    # Keep the smallest prefix reaching top_p (the first token always).
                    cut = order[1:][cum[:-1] >= self.top_p]
                    scores[row][cut] = float("-inf")
        return scores


def unpack_cpu_4bit_weights(model: Any, *, keep_unpacked: bool = True) -> int:
    """Undo and (by default) switch off bitsandbytes' CPU inference packing of NF4 weights.

    On CPUs with AVX512-BF16, bitsandbytes repacks a ``Linear4bit`` weight the first time the
    layer runs in eval mode without grad (e.g. during generation) and from then on multiplies
    with a fused bf16 kernel that has **no autograd**: backpropagation through the frozen base
    then silently drops the input gradient, so only the LoRA factors next to the residual
    stream would learn. Moreover the pack / unpack round trip is lossy (the NF4 block scales
    pass through bf16; measured here: up to 7e-3 change of a dequantised weight per round
    trip), so packing for every generation and unpacking for every update would make the
    *frozen* base drift. Hence a trainer unpacks once (:meth:`TransformersLLM.prepare_for_training`)
    and the weights stay unpacked; generation then uses bitsandbytes' generic
    dequantise-and-matmul path.

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


@contextlib.contextmanager
def _seeded(seed: int | None, device: Any):
    """Seed torch for one call without disturbing the caller's RNG streams."""
    import torch

    if seed is None:
        yield
        return
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


@contextlib.contextmanager
def _eval_mode(model: Any):
    """Decode without dropout even if a trainer left the model in train mode; restore after."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        if was_training:
            model.train()
