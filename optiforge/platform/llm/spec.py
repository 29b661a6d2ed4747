"""LLM specs: one string names a backend and its options (CLI flags, campaign configs, API).

Accepted forms::

    smollm2                               bundled SmolLM2-135M-Instruct, NF4 (int4)
    smollm2:int4 | smollm2:int8 | smollm2:none
    hf:<id-or-path>[?quantization=int4&adapter=<dir>&device=cuda&dtype=bfloat16&max_batch_size=16]
    llamacpp:qwen-coder-1.5b | llamacpp:qwen-coder-0.5b   fetched first: optiforge models fetch NAME
    llamacpp:smollm2 | llamacpp:gemma3 | llamacpp:<file.gguf>[?n_ctx=4096&max_batch_size=16&n_threads=2&adapter=<dir>
                                            &train_model=<hf checkpoint>&train_quantization=int4]
    openai:<base_url>#<model>             e.g. openai:http://127.0.0.1:8000/v1#Qwen/Qwen2.5-7B-Instruct
    vllm:<model>[?tensor_parallel_size=2&...]
    replay:<path.jsonl>
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from optiforge.agents.protocols import LLM
from optiforge.extras import require
from optiforge.platform.llm.bundled import BUNDLED_MODELS, BUNDLED_NAME
from optiforge.platform.llm.models import FETCHABLE_MODELS, model_file

SPEC_FORMS = (
    "smollm2",
    "smollm2:int4|int8|none",
    "hf:<id-or-path>[?quantization=int4|int8|none&adapter=<dir>&device=...&dtype=...&max_batch_size=N]",
    "llamacpp:qwen-coder-1.5b|qwen-coder-0.5b|smollm2|gemma3|<file.gguf>[?n_ctx=N&max_batch_size=N&n_threads=N&adapter=<dir>&train_model=<id-or-path>]",
    "openai:<base_url>#<model>",
    "vllm:<model>[?engine_arg=value&...]",
    "replay:<path.jsonl>",
)
_HF_OPTIONS = ("quantization", "adapter", "device", "dtype", "max_batch_size")
_LLAMACPP_OPTIONS = ("n_ctx", "max_batch_size", "n_threads", "adapter", "train_model", "train_quantization")
_SPEC_OPTIONS = {"hf": _HF_OPTIONS, "llamacpp": _LLAMACPP_OPTIONS}  # checked when a spec is parsed
_OPENAI_OPTIONS = ("api_key", "timeout", "max_retries", "backoff", "max_concurrency", "check_model", "deadline")
_CACHED_KINDS = ("hf", "vllm", "llamacpp")  # heavy to load: one instance per (spec, overrides) per process

_cache: dict[tuple[str, tuple[tuple[str, Any], ...]], LLM] = {}
_cache_lock = threading.Lock()


@dataclass(frozen=True)
class LLMSpec:
    """A parsed spec: ``kind`` in {"hf", "llamacpp", "openai", "vllm", "replay"}, a target and options."""

    kind: str
    target: str
    options: dict[str, Any] = field(default_factory=dict)


def _bad(spec: object, why: str) -> ValueError:
    forms = "; ".join(SPEC_FORMS)
    return ValueError(f"llm: invalid spec {spec!r} ({why}); accepted forms: {forms}")


def _coerce(value: str) -> Any:
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


def parse_spec(spec: str) -> LLMSpec:
    """Parse an LLM spec string (see module docstring); ValueError naming ``llm`` if malformed."""
    if not isinstance(spec, str):
        raise TypeError(f"llm: expected a spec string, got {type(spec).__name__}")
    s = spec.strip()
    if not s:
        raise _bad(spec, "empty")
    if s == BUNDLED_NAME or s.startswith(BUNDLED_NAME + ":"):
        quant = s.partition(":")[2] or "int4"
        if quant not in ("int4", "int8", "none"):
            raise _bad(spec, f"unknown quantization {quant!r}")
        return LLMSpec("hf", BUNDLED_NAME, {"quantization": quant})
    kind, sep, rest = s.partition(":")
    if not sep or kind not in ("hf", "llamacpp", "openai", "vllm", "replay"):
        raise _bad(spec, f"unknown backend {kind!r}" if sep else "no backend prefix")
    if not rest:
        raise _bad(spec, "nothing after the backend prefix")
    if kind == "openai":
        base_url, hash_, model = rest.rpartition("#")
        if not hash_ or not base_url or not model:
            raise _bad(spec, "openai specs need '#<model>' after the base URL")
        if not base_url.startswith(("http://", "https://")):
            raise _bad(spec, f"base URL {base_url!r} is not http(s)")
        return LLMSpec("openai", base_url, {"model": model})
    if kind == "replay":
        return LLMSpec("replay", rest)
    target, _, query = rest.partition("?")
    if not target:
        raise _bad(spec, "no model named")
    try:
        options = {k: _coerce(v) for k, v in parse_qsl(query, keep_blank_values=False, strict_parsing=bool(query))}
    except ValueError:
        raise _bad(spec, f"malformed options {query!r}") from None
    accepted = _SPEC_OPTIONS.get(kind)
    if accepted is not None:
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise _bad(spec, f"unknown option(s) {unknown}; {kind} accepts {list(accepted)}")
    # Paths and names stay text even when they look like numbers (a folder called "7").
    for key in ("adapter", *(("train_model", "train_quantization") if kind == "llamacpp" else ())):
        if key in options:
            options[key] = str(options[key])
    return LLMSpec(kind, target, options)


def from_spec(spec: str, **overrides: Any) -> LLM:
    """Build (or reuse) the LLM backend a spec names.

    Parameters
    ----------
    spec : str
        See the module docstring, e.g. ``"smollm2"``, ``"hf:Qwen/Qwen2.5-7B-Instruct?quantization=int4"``,
        ``"openai:http://127.0.0.1:8000/v1#my-model"``.
    **overrides
        Constructor arguments that take precedence over the spec's options.

    Returns
    -------
    LLM
        Local models (``smollm2``, ``hf:``, ``vllm:``) are cached per (spec, overrides) in this
        process: loading is slow, and callers asking for the same spec share one instance
        (including its loaded adapter). Call :func:`clear_cache` to drop them.

    Raises
    ------
    ValueError
        A malformed spec, or a missing file or model (the message says which, in optiforge's
        terms).
    TypeError
        An option the backend does not take.
    ImportError
        The backend's extra is not installed (:class:`~optiforge.extras.MissingExtraError`).
    """
    parsed = parse_spec(spec)
    options = {**parsed.options, **overrides}
    key = (spec.strip(), tuple(sorted((k, repr(v)) for k, v in overrides.items())))
    if parsed.kind in _CACHED_KINDS:
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                return hit
            llm = _checked_build(parsed, options)
            _cache[key] = llm
            return llm
    return _checked_build(parsed, options)


def _checked_build(parsed: LLMSpec, options: dict[str, Any]) -> LLM:
    """:func:`_build`, with load failures turned into one-line ``ValueError``s."""
    try:
        return _build(parsed, options)
    except FileNotFoundError as exc:
        raise ValueError(f"llm: {exc}") from None  # the backends' own one-line messages
    except OSError:
        # transformers' own text points at the Hub and its docs; say what failed, here.
        raise ValueError(f"llm: cannot load model {parsed.target!r}: not a local checkpoint folder "
                         f"and not in the Hugging Face cache") from None


def _reject_unknown_options(kind: str, options: dict[str, Any], backend: str) -> None:
    """``TypeError`` for build-time options (the spec's and the caller's overrides) that the
    backend of ``kind`` does not take; the spec's own were already checked by :func:`parse_spec`."""
    accepted = _SPEC_OPTIONS[kind]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(f"llm: unknown option(s) {unknown} for {backend}; accepted: {list(accepted)}")


def _build(parsed: LLMSpec, options: dict[str, Any]) -> LLM:
    if parsed.kind == "hf":
        require("llm", "a local model (smollm2, hf:...)")
        from optiforge.platform.llm.transformers_backend import TransformersLLM

        _reject_unknown_options(parsed.kind, options, "a transformers model")
        return TransformersLLM(parsed.target, **options)
    if parsed.kind == "llamacpp":
        from optiforge.platform.llm.llamacpp_backend import LlamaCppLLM

        _reject_unknown_options(parsed.kind, options, "llama.cpp")
        adapter = options.pop("adapter", None)
        llm = LlamaCppLLM(parsed.target, **options)
        if adapter is not None:
            llm.load_adapter(adapter)
        return llm
    if parsed.kind == "openai":
        from optiforge.platform.llm.openai_backend import OpenAILLM

        unknown = sorted(set(options) - set(_OPENAI_OPTIONS) - {"model"})
        if unknown:
            raise TypeError(f"llm: unknown option(s) {unknown} for an OpenAI server; accepted: {list(_OPENAI_OPTIONS)}")
        return OpenAILLM(parsed.target, **options)
    if parsed.kind == "vllm":
        from optiforge.platform.llm.vllm_backend import VLLMLLM

        return VLLMLLM(parsed.target, **options)
    from optiforge.platform.llm.replay import ReplayLLM

    if options:
        raise TypeError(f"llm: replay specs take no options, got {sorted(options)}")
    return ReplayLLM(parsed.target)


def check_local_files(spec: LLMSpec) -> None:
    """``ValueError`` naming ``llm`` when a spec names a local file that cannot serve: a replay
    file that is missing or holds no responses, or a ``llamacpp:`` path with no file. Nothing is
    loaded (a replay file is read, a GGUF file only looked for), so a campaign checks this when
    it is created instead of failing when it runs. A fetched model (``llamacpp:qwen-coder-1.5b``)
    that is absent fails with the command that fetches it. Other kinds name nothing local to
    check."""
    from optiforge.platform.llm.llamacpp_backend import gguf_file
    from optiforge.platform.llm.replay import ReplayLLM

    try:
        if spec.kind == "replay":
            ReplayLLM(spec.target)
        elif spec.kind == "llamacpp" and spec.target in FETCHABLE_MODELS:
            model_file(spec.target)
        elif spec.kind == "llamacpp" and spec.target not in BUNDLED_MODELS:
            gguf_file(spec.target)  # the backend's own lookup (bundled: gemma3 is assembled on first use)
    except (FileNotFoundError, ValueError) as exc:
        # The backends name their own argument (`path`, `model`); here the argument is the spec.
        raise ValueError(f"llm: {str(exc).partition(': ')[2]}") from None


def trains_in_process(spec: LLMSpec) -> bool:
    """Whether a spec's backend holds trainable weights in this process (RL can fine-tune it):
    transformers models, and llama.cpp models with a transformers twin (the bundled SmolLM2, the
    fetched Qwen coders, or ``train_model=`` given). The bundled ``gemma3`` samples only, so
    ``--rl auto`` is none for it."""
    if spec.kind == "hf":
        return True
    if spec.kind != "llamacpp":
        return False
    if spec.target in FETCHABLE_MODELS:
        return True
    bundled = BUNDLED_MODELS.get(spec.target)
    return (bundled is not None and bundled.trainable) or "train_model" in spec.options


def describe(spec: str) -> str:
    """A one-line, secret-free description of a spec for logs (validates it too)."""
    p = parse_spec(spec)
    if p.kind == "hf" and p.target == BUNDLED_NAME:
        return f"bundled SmolLM2-135M-Instruct via transformers ({p.options['quantization']})"
    if p.kind == "hf":
        opts = ", ".join(f"{k}={v}" for k, v in sorted(p.options.items()))
        return f"transformers model {p.target!r} (quantization={p.options.get('quantization', 'int4')}" + (
            f", {opts})" if opts else ")")
    if p.kind == "llamacpp":
        if p.target in FETCHABLE_MODELS:
            return f"fetched {FETCHABLE_MODELS[p.target].title} (Q4_K_M GGUF) via in-process llama.cpp"
        bundled = BUNDLED_MODELS.get(p.target)
        if bundled is None:
            return f"{p.target!r} via in-process llama.cpp"
        note = "" if bundled.trainable or "train_model" in p.options else " (sampling only: no RL)"
        return f"bundled {bundled.title} ({bundled.quantization} GGUF) via in-process llama.cpp{note}"
    if p.kind == "openai":
        return f"OpenAI-compatible server {p.target} model {p.options['model']!r}"
    if p.kind == "vllm":
        return f"in-process vLLM model {p.target!r}"
    return f"replayed responses from {p.target}"


def clear_cache() -> None:
    """Forget the cached local models (their memory is freed once no one else holds them)."""
    with _cache_lock:
        _cache.clear()
