from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from optiforge.types import Completion


class ScriptedLLM:
    """The agent's LLM seam: answers each prompt with ``respond(prompt, call_index)``."""

    def __init__(self, respond: Callable[[str, int], str]) -> None:
        self.respond = respond
        self.calls: list[list[str]] = []

    def generate(self, prompts: Sequence[str], n: int = 1, *, max_new_tokens: int = 256,
                 temperature: float = 0.8, top_p: float = 1.0, seed: int | None = None,
                 system: str | None = None) -> list[list[Completion]]:
        self.calls.append(list(prompts))
        i = len(self.calls) - 1
        return [[Completion(self.respond(p, i)) for _ in range(n)] for p in prompts]


@pytest.fixture
def scripted_llm() -> type[ScriptedLLM]:
    return ScriptedLLM
