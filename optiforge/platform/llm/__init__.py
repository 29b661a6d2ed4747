"""LLM backends: one :class:`~optiforge.agents.protocols.LLM` protocol, several engines.

- :class:`TransformersLLM`: local transformers model (bundled SmolLM2, any HF id or path),
  NF4/INT8 via bitsandbytes, LoRA adapters via peft.
- :class:`LlamaCppLLM`: GGUF models in process through llama.cpp (batched; LoRA hand-over).
- :class:`OpenAILLM`: any OpenAI-compatible server (vLLM, llama.cpp) over HTTP.
- :class:`VLLMLLM`: in-process vLLM (optional extra).
- :class:`ReplayLLM` / :class:`RecordingLLM`: deterministic replay of recorded responses.
- :func:`from_spec`: build one from a spec string such as ``"smollm2"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from optiforge.platform.llm.bundled import (
    bundled_checkpoint_dir,
    bundled_gguf_path,
    model_cache_dir,
)
from optiforge.platform.llm.replay import RecordingLLM, ReplayLLM
from optiforge.platform.llm.spec import (
    SPEC_FORMS,
    LLMSpec,
    check_local_files,
    clear_cache,
    describe,
    from_spec,
    parse_spec,
    trains_in_process,
)

if TYPE_CHECKING:
    from optiforge.platform.llm.llamacpp_backend import LlamaCppLLM
    from optiforge.platform.llm.openai_backend import LLMRequestError, LLMServerError, OpenAILLM
    from optiforge.platform.llm.transformers_backend import TransformersLLM
    from optiforge.platform.llm.vllm_backend import VLLMLLM

__all__ = [
    "SPEC_FORMS", "LLMSpec", "LLMRequestError", "LlamaCppLLM", "LLMServerError", "OpenAILLM", "RecordingLLM",
    "ReplayLLM", "TransformersLLM", "VLLMLLM", "bundled_checkpoint_dir", "bundled_gguf_path",
    "check_local_files", "clear_cache", "describe", "from_spec", "model_cache_dir", "parse_spec",
    "trains_in_process",
]

_LAZY = {
    "TransformersLLM": "optiforge.platform.llm.transformers_backend",
    "OpenAILLM": "optiforge.platform.llm.openai_backend",
    "LlamaCppLLM": "optiforge.platform.llm.llamacpp_backend",
    "LLMRequestError": "optiforge.platform.llm.openai_backend",
    "LLMServerError": "optiforge.platform.llm.openai_backend",
    "VLLMLLM": "optiforge.platform.llm.vllm_backend",
}


def __getattr__(name: str) -> Any:
    # Backends import torch / httpx; keep `import optiforge.platform.llm` cheap for the CLI.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
