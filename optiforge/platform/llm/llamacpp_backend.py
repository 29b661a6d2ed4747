"""In-process llama.cpp engine (llama-cpp-python) for GGUF models, batched, with LoRA hand-over."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from optiforge.agents.protocols import TextConstraint
from optiforge.extras import require
from optiforge.platform.llm._common import chat_messages, check_generate_args
from optiforge.platform.llm.bundled import BUNDLED_MODELS, BUNDLED_NAME, bundled_gguf_path
from optiforge.platform.llm.constrained import ConstraintDecoder, check_constraints, decoders_for
from optiforge.platform.llm.gguf_lora import lora_deltas, peft_dir_deltas, write_gguf_lora
from optiforge.platform.llm.models import FETCHABLE_MODELS, model_file
from optiforge.types import Completion

FEATURE = "the llama.cpp engine (llamacpp:...)"


def gguf_file(model: str) -> Path:
    """The GGUF file ``model`` names: a bundled model's, or the path given.

    Raises
    ------
    FileNotFoundError
        Naming ``model``, when a path has no file.
    """
    if model in BUNDLED_MODELS:
        return bundled_gguf_path(model)
    if model in FETCHABLE_MODELS:
        return model_file(model)
    path = Path(model).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"model: no GGUF file at {model!r}")
    return path


def default_threads() -> int:
    """Threads llama.cpp may use: ``OMP_NUM_THREADS`` if set (the process's thread budget), else the CPUs."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, len(os.sched_getaffinity(0)))


class LlamaCppLLM:
    """An :class:`~optiforge.agents.protocols.LLM` decoding a GGUF model with llama.cpp in process.

    Several sequences are decoded in one ``llama_decode`` call: each distinct prompt is
    evaluated once, its KV cache is copied to the other samples of that prompt
    (``llama_memory_seq_cp``), and from then on one batch carries one token per live sequence.
    Sampling (temperature, nucleus) is done here with numpy on the logits llama.cpp returns,
    seeded per call.

    With a trainer attached (``train_model``), the backend is also a
    :class:`~optiforge.agents.protocols.TrainableLLM`: ``model`` / ``tokenizer`` are those of a
    transformers twin of the same weights (loaded on first use), which the GRPO learner trains
    in place. Before every :meth:`generate` the twin's LoRA weights are fingerprinted; when
    they changed (an RL step, a resume), they are written as a GGUF LoRA and handed to
    llama.cpp (:attr:`last_handover_s`), so sampling always uses the newest policy.

    Parameters
    ----------
    model : str
        A bundled model (``"smollm2"``, ``"gemma3"``: :data:`~optiforge.platform.llm.bundled.BUNDLED_MODELS`),
        a fetched one (``"qwen-coder-1.5b"``, ``"qwen-coder-0.5b"``:
        :data:`~optiforge.platform.llm.models.FETCHABLE_MODELS`, ``optiforge models fetch``), or the
        path of a ``.gguf`` model.
    n_ctx : int
        Context length shared by all sequences of one batch (prompt + completion of each).
    max_batch_size : int
        Most sequences decoded together.
    n_threads : int, optional
        llama.cpp threads; default :func:`default_threads`.
    train_model : str, optional
        The transformers checkpoint of the same weights to train (an HF id or directory);
        ``"smollm2"`` for the bundled SmolLM2 and the model's own name for a fetched model (their
        default: a checkpoint of the GGUF file's weights, dequantised). ``None`` for any other GGUF file
        and for the bundled ``gemma3`` (no transformers twin is made for it): the backend then
        only samples.
    train_quantization : {"int4", "int8", "none"}
        Quantization of the training twin (NF4 by default, as QLoRA).

    Notes
    -----
    Without an adapter the sampled distribution is the GGUF file's (Q4_1 for the bundled
    model); the twin trains over NF4 weights that were re-quantised from that file, so the
    two policies differ by the NF4 rounding (see docs/benchmarks/llm.md for the measured
    log-probability gap).
    """

    supports_constraints = True  # generate(..., constraints=...): a ConstrainedLLM

    def __init__(
        self,
        model: str = BUNDLED_NAME,
        *,
        n_ctx: int = 4096,
        max_batch_size: int = 16,
        n_threads: int | None = None,
        train_model: str | None = None,
        train_quantization: str = "int4",
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise TypeError("model: expected a bundled model name ('smollm2', 'gemma3') or the path of a .gguf file")
        for name, value, low in (("n_ctx", n_ctx, 64), ("max_batch_size", max_batch_size, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name}: expected an int >= {low}, got {value!r}")
        if n_threads is not None and (isinstance(n_threads, bool) or not isinstance(n_threads, int)
                                      or n_threads < 1):
            raise ValueError(f"n_threads: expected an int >= 1, got {n_threads!r}")
        if train_quantization not in ("int4", "int8", "none"):
            raise ValueError(f"train_quantization: expected int4, int8 or none, got {train_quantization!r}")
        require("llamacpp", FEATURE)
        import llama_cpp
        from llama_cpp import _internals, _logger

        # llama.cpp logs every graph build at debug level to stderr unless told otherwise.
        _logger.set_verbose(False)

        path = gguf_file(model)
        if train_model is None and (model in FETCHABLE_MODELS or
                                    (model in BUNDLED_MODELS and BUNDLED_MODELS[model].trainable)):
            train_model = model  # a twin of the file's own weights (TransformersLLM resolves the name)
        self.name = model
        self.path = path
        self.max_batch_size = max_batch_size
        self.n_threads = n_threads or default_threads()
        self.train_model = train_model
        self.train_quantization = train_quantization
        self._lc = llama_cpp
        self._lock = threading.RLock()

        llama_cpp.llama_backend_init()
        mparams = llama_cpp.llama_model_default_params()
        self._model = _internals.LlamaModel(path_model=str(path), params=mparams, verbose=False)
        cparams = llama_cpp.llama_context_default_params()
        cparams.n_ctx = n_ctx
        cparams.n_batch = n_ctx  # a whole prompt is one decode call
        cparams.n_ubatch = min(512, n_ctx)
        cparams.n_seq_max = max_batch_size
        cparams.kv_unified = True  # samples of one prompt share its cells' prefix
        cparams.n_threads = cparams.n_threads_batch = self.n_threads
        self._ctx = _internals.LlamaContext(model=self._model, params=cparams, verbose=False)
        self.n_ctx = n_ctx
        self._vocab = self._model.vocab
        self._n_vocab = self._model.n_vocab()
        self._batch = llama_cpp.llama_batch_init(n_ctx, 0, 1)
        meta = self._model.metadata()
        self._meta = meta
        self._chat = self._make_formatter(meta)
        self._adapter: Any = None
        self._adapter_dir = Path(tempfile.mkdtemp(prefix="optiforge-lora-"))
        self._served_digest: str | None = None
        self._twin: Any = None
        self.adapter: str | None = None
        self.adapter_version = 0
        self.last_handover_s: float | None = None

    # -- prompting -----------------------------------------------------------------------
    def _make_formatter(self, meta: dict[str, str]) -> Any:
        template = meta.get("tokenizer.chat_template")
        if not template:
            return None
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def piece(key: str) -> str:
            tid = meta.get(key)
            return self._model.token_get_text(int(tid)) if tid is not None and tid.lstrip("-").isdigit() else ""

        return Jinja2ChatFormatter(template, eos_token=piece("tokenizer.ggml.eos_token_id"),
                                   bos_token=piece("tokenizer.ggml.bos_token_id"))

    def format_prompt(self, prompt: str, system: str | None = None) -> str:
        """The exact text the model is conditioned on (the GGUF file's chat template)."""
        if self._chat is None:
            return f"{system}\n\n{prompt}" if system else prompt
        return self._chat(messages=chat_messages(prompt, system)).prompt

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` (special tokens parsed; BOS only when the model wants it and
        the text is not a chat-formatted prompt)."""
        add_bos = self._chat is None and bool(self._model.add_bos_token())
        return self._model.tokenize(text.encode("utf-8"), add_bos, True)

    # -- adapters ------------------------------------------------------------------------
    def load_adapter(self, path: str | os.PathLike[str]) -> str:
        """Sample through the LoRA at ``path``: a PEFT adapter directory or a GGUF LoRA file.

        Returns the adapter's version name (``v1``, ``v2``, ...). The previous adapter is freed.
        """
        p = Path(path).expanduser()
        if p.is_dir():
            if not (p / "adapter_config.json").exists():
                raise FileNotFoundError(f"adapter: no adapter_config.json in {str(path)!r}")
            with self._lock:
                gguf_file = self._export(peft_dir_deltas(p))
                name = self._install(gguf_file)
                self.adapter = str(p)
            return name
        if not p.is_file():
            raise FileNotFoundError(f"adapter: no adapter directory or GGUF file at {str(path)!r}")
        with self._lock:
            name = self._install(p)
            self.adapter = str(p)
        return name

    def _export(self, deltas: Any) -> Path:
        meta = self._meta
        arch = meta.get("general.architecture", "llama")
        n_head = int(meta[f"{arch}.attention.head_count"])
        n_head_kv = int(meta.get(f"{arch}.attention.head_count_kv", n_head))
        target = self._adapter_dir / f"lora-{self.adapter_version + 1}.gguf"
        return write_gguf_lora(target, deltas, architecture=arch, n_head=n_head, n_head_kv=n_head_kv)

    def _install(self, gguf_file: Path) -> str:
        lc = self._lc
        adapter = lc.llama_adapter_lora_init(self._model.model, str(gguf_file).encode("utf-8"))
        if not adapter:
            raise ValueError(f"adapter: llama.cpp could not load the LoRA {str(gguf_file)!r} "
                             "(wrong architecture or shapes for this model)")
        adapters = (lc.llama_adapter_lora_p_ctypes * 1)(adapter)
        scales = (ctypes.c_float * 1)(1.0)
        if lc.llama_set_adapters_lora(self._ctx.ctx, adapters, 1, scales) != 0:
            lc.llama_adapter_lora_free(adapter)
            raise ValueError("adapter: llama.cpp refused to attach the LoRA")
        if self._adapter is not None:
            lc.llama_adapter_lora_free(self._adapter)
        self._adapter = adapter
        self.adapter_version += 1
        if gguf_file.parent == self._adapter_dir:
            # Loaded into memory; only the newest export is kept on disk (for inspection).
            for old in self._adapter_dir.glob("lora-*.gguf"):
                if old != gguf_file:
                    old.unlink(missing_ok=True)
        return f"v{self.adapter_version}"

    # -- training twin (TrainableLLM) ----------------------------------------------------
    def _trainer(self) -> Any:
        if self.train_model is None:
            raise AttributeError(
                f"LlamaCppLLM({self.name!r}) has no training twin: pass train_model=<HF checkpoint "
                "of the same weights> to train it with RL")
        if self._twin is None:
            from optiforge.platform.llm.transformers_backend import TransformersLLM

            self._twin = TransformersLLM(self.train_model, quantization=self.train_quantization,
                                         device="cpu")
        return self._twin

    @property
    def model(self) -> Any:
        """The transformers twin's model (what a learner trains; loaded on first access)."""
        return self._trainer().model

    @property
    def tokenizer(self) -> Any:
        """The transformers twin's tokenizer."""
        return self._trainer().tokenizer

    def prepare_for_training(self) -> Any:
        """The twin's :meth:`~TransformersLLM.prepare_for_training` (the TrainableLLM hook)."""
        return self._trainer().prepare_for_training()

    def sync_adapter(self) -> bool:
        """Hand the twin's current LoRA weights to llama.cpp if they changed; True if it did.

        The fingerprint is a hash of the adapter's bytes, so any change (an optimizer step,
        a restored checkpoint) is seen; an unchanged adapter costs one copy and hash of its
        weights (a few MB, milliseconds).
        """
        twin = self._twin
        if twin is None:
            return False
        deltas = list(lora_deltas(twin.model))
        if not deltas:
            return False
        digest = hashlib.sha256()
        for _, a, b in deltas:
            digest.update(a.tobytes())
            digest.update(b.tobytes())
        key = digest.hexdigest()
        if key == self._served_digest:
            return False
        with self._lock:
            start = time.perf_counter()
            self._install(self._export(iter(deltas)))
            self.last_handover_s = time.perf_counter() - start
            self._served_digest = key
            self.adapter = f"in-memory twin adapter (version {self.adapter_version})"
        return True

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
        """Sample ``n`` completions per prompt (see :class:`~optiforge.agents.protocols.ConstrainedLLM`).

        ``temperature == 0`` decodes greedily; otherwise temperature / nucleus sampling (no
        top-k), as the transformers backend. With ``seed`` a call is reproducible. With
        ``constraints`` (one per prompt, or ``None``), every sample of a prompt is decoded
        under its constraint: only tokens the language allows are sampled from, and a token
        the language forces (the only one allowed) is appended without a decoding step of its
        own (jump-forward; the answers' distribution is unchanged).
        """
        prompts = check_generate_args(prompts, n, max_new_tokens, temperature, top_p, seed, system)
        per_prompt = check_constraints(constraints, len(prompts))
        if not prompts:
            return []
        self.sync_adapter()
        decoders = (decoders_for(per_prompt, self._token_texts(), self._lc.llama_vocab_eos(self._vocab))
                    if any(c is not None for c in per_prompt) else per_prompt)
        rng = np.random.default_rng(seed)
        encoded = [self.tokenize(self.format_prompt(p, system)) for p in prompts]
        for i, ids in enumerate(encoded):
            if len(ids) + max_new_tokens > self.n_ctx:
                raise ValueError(f"prompts: item {i} has {len(ids)} tokens; with max_new_tokens="
                                 f"{max_new_tokens} it exceeds n_ctx={self.n_ctx}")
        items = [(i, ids) for i, ids in enumerate(encoded) for _ in range(n)]
        flat: list[Completion] = []
        with self._lock:
            for chunk in self._plan_chunks(items, max_new_tokens):
                flat.extend(self._generate_chunk(chunk, [decoders[i] for i, _ in chunk], max_new_tokens,
                                                 float(temperature), float(top_p), rng))
        return [flat[i * n : (i + 1) * n] for i in range(len(prompts))]

    def _plan_chunks(self, items: list[tuple[int, list[int]]],
                     max_new_tokens: int) -> list[list[tuple[int, list[int]]]]:
        """Split the (prompt, tokens) rows, in order, into decode batches that fit the context.

        A batch holds at most ``max_batch_size`` sequences, and its cells (the shared prefix once,
        each distinct prompt's rest, ``max_new_tokens`` per sequence) at most ``n_ctx``: without
        this, five 5,000-token prompts that share 4,900 tokens fit, but their answers ran out of
        cells halfway (llama_decode's code 1). Each row alone fits (``generate`` checked it).
        """
        chunks: list[list[tuple[int, list[int]]]] = []
        current: list[tuple[int, list[int]]] = []
        for item in items:
            trial = [*current, item]
            if current and (len(trial) > self.max_batch_size or _cells(trial, max_new_tokens) > self.n_ctx):
                chunks.append(current)
                trial = [item]
            current = trial
        if current:
            chunks.append(current)
        return chunks

    def _token_texts(self) -> list[str]:
        """Every token's text by id ("" for special and non-UTF-8 pieces), built once."""
        if getattr(self, "_texts", None) is None:
            buf = ctypes.create_string_buffer(256)
            texts = []
            for tok in range(self._n_vocab):
                # llama_token_to_piece returns the piece's length (negative: buffer too small).
                size = self._lc.llama_token_to_piece(self._vocab, tok, buf, len(buf), 0, False)
                try:
                    texts.append(buf.raw[:size].decode("utf-8") if size > 0 else "")
                except UnicodeDecodeError:
                    texts.append("")
            self._texts = texts
        return self._texts

    def _set_batch(self, tokens: Sequence[tuple[int, int, int, bool]]) -> None:
        """Fill the batch with (token, position, sequence, wants logits) rows."""
        b = self._batch
        b.n_tokens = len(tokens)
        for k, (tok, pos, seq, logits) in enumerate(tokens):
            b.token[k] = tok
            b.pos[k] = pos
            b.n_seq_id[k] = 1
            b.seq_id[k][0] = seq
            b.logits[k] = logits

    def _decode(self) -> None:
        rc = self._lc.llama_decode(self._ctx.ctx, self._batch)
        if rc != 0:
            raise RuntimeError(f"llama.cpp decode failed (code {rc}); try a smaller max_batch_size or a larger n_ctx")

    def _logits(self, row: int) -> np.ndarray:
        ptr = self._lc.llama_get_logits_ith(self._ctx.ctx, row)
        return np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).astype(np.float64)

    def _generate_chunk(self, chunk: list[tuple[int, list[int]]], decoders: list[ConstraintDecoder | None],
                        max_new_tokens: int, temperature: float, top_p: float,
                        rng: np.random.Generator) -> list[Completion]:
        lc = self._lc
        mem = lc.llama_get_memory(self._ctx.ctx)
        lc.llama_memory_clear(mem, True)
        # Evaluate each distinct prompt once (in its first sample's sequence), then copy its
        # cache to the other samples of the same prompt. Distinct prompts that open alike
        # (HOLLM's region prompts share every evaluated point; only the box differs) also share
        # the cells of their common prefix, which is evaluated once.
        firsts: dict[int, tuple[int, list[int]]] = {}
        for seq, (pi, ids) in enumerate(chunk):
            firsts.setdefault(pi, (seq, ids))
        heads = [ids for _, ids in firsts.values()]
        shared = _shared_prefix_len(heads)
        if shared:
            seq0 = next(iter(firsts.values()))[0]
            self._set_batch([(t, pos, seq0, False) for pos, t in enumerate(heads[0][:shared])])
            self._decode()
            for seq, _ in list(firsts.values())[1:]:
                lc.llama_memory_seq_cp(mem, seq0, seq, 0, shared)
        first_logits: dict[int, np.ndarray] = {}
        for pi, (seq, ids) in firsts.items():
            self._set_batch([(ids[pos], pos, seq, pos == len(ids) - 1) for pos in range(shared, len(ids))])
            self._decode()
            first_logits[pi] = self._logits(len(ids) - 1 - shared)
        for seq, (pi, _) in enumerate(chunk):
            if firsts[pi][0] != seq:
                lc.llama_memory_seq_cp(mem, firsts[pi][0], seq, -1, -1)
        outputs: list[list[int]] = [[] for _ in chunk]
        done = [False] * len(chunk)
        complete = [False] * len(chunk)  # ended by its constraint, without an end token
        states = [None if dec is None else dec.start() for dec in decoders]
        logits = [first_logits[pi] for pi, _ in chunk]
        for _step in range(max_new_tokens):
            live: list[tuple[int, int, int, bool]] = []
            rows: dict[int, int] = {}  # sequence -> its batch row that returns logits
            for seq, row in enumerate(logits):
                if done[seq]:
                    continue
                dec = decoders[seq]
                if dec is None:
                    new = [_sample(row, temperature, top_p, rng)]
                elif dec.finished(states[seq]):
                    done[seq] = complete[seq] = True
                    continue
                else:
                    allowed, after = dec.options(states[seq])
                    new = [int(allowed[_sample(row[allowed], temperature, top_p, rng)])]
                    states[seq] = after.get(new[0])
                    # Jump forward: tokens the language leaves no choice about (the "." of a
                    # number, the "," after its last digit) join this step's batch unsampled.
                    while states[seq] is not None and len(outputs[seq]) + len(new) < max_new_tokens:
                        forced = dec.forced(states[seq])
                        if forced is None:
                            break
                        new.append(forced[0])
                        states[seq] = forced[1]
                start = len(chunk[seq][1]) + len(outputs[seq])
                outputs[seq].extend(new)
                if lc.llama_vocab_is_eog(self._vocab, new[-1]) or len(outputs[seq]) >= max_new_tokens:
                    done[seq] = True
                    continue
                for j, tok in enumerate(new):
                    live.append((tok, start + j, seq, j == len(new) - 1))
                rows[seq] = len(live) - 1
            if not live:
                break
            self._set_batch(live)
            self._decode()
            logits = [None] * len(chunk)  # type: ignore[list-item]
            for seq, k in rows.items():
                logits[seq] = self._logits(k)
        results = []
        for (_, ids), row, whole in zip(chunk, outputs, complete, strict=True):
            stopped = bool(row) and lc.llama_vocab_is_eog(self._vocab, row[-1])
            body = row[:-1] if stopped else row
            text = self._model.detokenize(body, special=False).decode("utf-8", errors="replace")
            results.append(Completion(text=text, prompt_tokens=len(ids), completion_tokens=len(row),
                                      finish_reason="stop" if stopped or whole else "length"))
        return results

    def token_logprobs(self, prompt_text: str, continuation: list[int]) -> np.ndarray:
        """Log-probabilities (natural log, temperature 1) of ``continuation`` token ids after the
        already-formatted ``prompt_text``, under the currently served weights (for tests and
        comparisons with the transformers backend)."""
        self.sync_adapter()
        ids = self.tokenize(prompt_text)
        full = ids + list(continuation)
        with self._lock:
            self._lc.llama_memory_clear(self._lc.llama_get_memory(self._ctx.ctx), True)
            self._set_batch([(t, pos, 0, pos >= len(ids) - 1) for pos, t in enumerate(full)])
            self._decode()
            out = []
            for k, tok in enumerate(continuation):
                row = self._logits(len(ids) - 1 + k)
                m = row.max()
                out.append(row[tok] - m - np.log(np.exp(row - m).sum()))
        return np.asarray(out)

    def close(self) -> None:
        """Free the llama.cpp context, model and adapter."""
        with self._lock:
            if getattr(self, "_batch", None) is not None:
                self._lc.llama_batch_free(self._batch)
                self._batch = None
            if getattr(self, "_adapter", None) is not None:
                self._lc.llama_adapter_lora_free(self._adapter)
                self._adapter = None
            if getattr(self, "_ctx", None) is not None:
                self._ctx.close()
            if getattr(self, "_model", None) is not None:
                self._model.close()
            if getattr(self, "_adapter_dir", None) is not None:
                shutil.rmtree(self._adapter_dir, ignore_errors=True)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: the OS frees the memory
            pass

    def __repr__(self) -> str:
        return f"LlamaCppLLM(model={self.name!r}, threads={self.n_threads}, adapter={self.adapter!r})"


SHARED_PREFIX_MIN = 32
"""Fewest common prompt tokens worth one extra decode call to share their cache cells."""


def _common_prefix_len(seqs: list[list[int]]) -> int:
    """Length of the longest token prefix common to all ``seqs``."""
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for i in range(n):
        if any(s[i] != first[i] for s in seqs[1:]):
            return i
    return n


def _shared_prefix_len(heads: list[list[int]]) -> int:
    """The prefix a batch's distinct prompts share in the cache: their common prefix (leaving
    each prompt at least its last token, whose logits start its answer), or 0 when there is one
    prompt or the common part is shorter than :data:`SHARED_PREFIX_MIN`."""
    if len(heads) < 2:
        return 0
    shared = min(_common_prefix_len(heads), min(len(h) for h in heads) - 1)
    return shared if shared >= SHARED_PREFIX_MIN else 0


def _cells(chunk: list[tuple[int, list[int]]], max_new_tokens: int) -> int:
    """KV cells a decode batch can fill: its shared prefix once, the rest of each distinct
    prompt, and ``max_new_tokens`` for each sequence (samples of one prompt share its cells)."""
    heads = list({pi: ids for pi, ids in chunk}.values())
    shared = _shared_prefix_len(heads)
    return shared + sum(len(h) - shared for h in heads) + len(chunk) * max_new_tokens


def _sample(logits: np.ndarray, temperature: float, top_p: float, rng: np.random.Generator) -> int:
    """One token from ``logits``: greedy at temperature 0, else softmax(logits / T) cut to the
    smallest set of tokens whose probability reaches ``top_p`` (nucleus)."""
    if temperature == 0:
        return int(np.argmax(logits))
    z = logits / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    if top_p < 1.0:
        # The nucleus is usually a few tokens: sort the 64 likeliest, and the whole
        # vocabulary only when they do not reach top_p.
        head = np.argpartition(-p, 64)[:64] if p.size > 64 else np.arange(p.size)
        order = head[np.argsort(-p[head])]
        if p[order].sum() < top_p:
            order = np.argsort(-p)
        keep = int(np.searchsorted(np.cumsum(p[order]), top_p)) + 1
        idx = order[:keep]
        q = p[idx] / p[idx].sum()
        return int(idx[min(int(np.searchsorted(np.cumsum(q), rng.random())), keep - 1)])
    return int(min(int(np.searchsorted(np.cumsum(p), rng.random())), len(p) - 1))
