"""In-process vLLM engine (optional dependency, imported only when used)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from optiforge.extras import require
from optiforge.platform.llm._common import chat_messages, check_generate_args
from optiforge.types import Completion

FEATURE = ("the in-process vLLM engine (a CUDA GPU; or run `vllm serve` and use "
           "'openai:http://host:8000/v1#<model>')")


def import_vllm() -> Any:
    """Import vllm, or raise :class:`~optiforge.extras.MissingExtraError` naming the extra."""
    require("vllm", FEATURE)
    import vllm

    return vllm


class VLLMLLM:
    """An :class:`~optiforge.agents.protocols.LLM` running a vLLM engine in this process.

    Parameters
    ----------
    model : str
        Hugging Face id or local path of the model.
    **engine_kwargs
        Passed to ``vllm.LLM`` (e.g. ``tensor_parallel_size=2``, ``quantization="awq"``,
        ``gpu_memory_utilization=0.8``, ``enable_lora=True`` to allow :meth:`load_adapter`).
    """

    def __init__(self, model: str, **engine_kwargs: Any) -> None:
        if not isinstance(model, str) or not model.strip():
            raise TypeError("model: expected a non-empty model id or path")
        vllm = import_vllm()
        self.name = model
        self._vllm = vllm
        self.engine = vllm.LLM(model=model, **engine_kwargs)
        self._lora: Any = None
        self._lora_count = 0
        self._lock = threading.Lock()

    def load_adapter(self, path: str | os.PathLike[str]) -> str:
        """Serve later requests through the LoRA adapter at ``path`` (engine needs ``enable_lora=True``)."""
        from vllm.lora.request import LoRARequest

        with self._lock:
            self._lora_count += 1
            name = f"v{self._lora_count}"
            self._lora = LoRARequest(name, self._lora_count, os.fspath(path))
        return name

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
    ) -> list[list[Completion]]:
        prompts = check_generate_args(prompts, n, max_new_tokens, temperature, top_p, seed, system)
        if not prompts:
            return []
        params = self._vllm.SamplingParams(
            n=n, max_tokens=max_new_tokens, temperature=float(temperature),
            top_p=float(top_p) if temperature > 0 else 1.0, seed=seed,
        )
        outputs = self.engine.chat([chat_messages(p, system) for p in prompts], params,
                                   lora_request=self._lora, use_tqdm=False)
        result = []
        for req in outputs:
            plen = len(req.prompt_token_ids or [])
            result.append([
                Completion(text=o.text, prompt_tokens=plen, completion_tokens=len(o.token_ids),
                           finish_reason=o.finish_reason or "stop")
                for o in req.outputs
            ])
        return result

    def __repr__(self) -> str:
        return f"VLLMLLM(model={self.name!r})"
