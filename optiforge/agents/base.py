"""Small protocols the agents need from the platform.

Agents never import :mod:`optiforge.platform`; the orchestrator hands them plain
objects that satisfy these protocols structurally (the platform's LLM backends and
executors do).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from optiforge.types import Completion, Evaluation


@runtime_checkable
class LLM(Protocol):
    """Batched text generation.

    ``generate(prompts, n=G)`` returns, for each prompt, ``n`` independent samples:
    ``result[i][j]`` is sample ``j`` of prompt ``i``. Prompts are user messages; chat
    backends wrap them in the model's chat template (with ``system`` if given).
    ``temperature == 0`` means greedy decoding (deterministic).
    """

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
    ) -> list[list[Completion]]: ...


@runtime_checkable
class ProgramEvaluator(Protocol):
    """Evaluates programs for a heuristic task (sandboxed run + trusted scoring)."""

    def evaluate(self, task: str, programs: Sequence[str], split: str = "train") -> list[Evaluation]: ...
