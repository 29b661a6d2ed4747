"""Argument checks shared by every backend's ``generate`` (one message per bad argument)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def check_generate_args(
    prompts: Sequence[str],
    n: int,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    seed: int | None,
    system: str | None,
) -> list[str]:
    """Validate ``generate`` arguments and return the prompts as a list.

    Raises
    ------
    TypeError, ValueError
        Naming the offending argument.
    """
    # A bare string is a Sequence[str] too; iterating it would send one prompt per character.
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence):
        raise TypeError(f"prompts: expected a sequence of strings, got {type(prompts).__name__}")
    for i, p in enumerate(prompts):
        if not isinstance(p, str):
            raise TypeError(f"prompts: item {i} is {type(p).__name__}, expected str")
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n: expected an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n: must be >= 1, got {n}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise TypeError(f"max_new_tokens: expected an int, got {type(max_new_tokens).__name__}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens: must be >= 1, got {max_new_tokens}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise TypeError(f"temperature: expected a number, got {type(temperature).__name__}")
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature: must be a finite number >= 0, got {temperature}")
    if isinstance(top_p, bool) or not isinstance(top_p, (int, float)):
        raise TypeError(f"top_p: expected a number, got {type(top_p).__name__}")
    if not (0 < top_p <= 1):
        raise ValueError(f"top_p: must be in (0, 1], got {top_p}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise TypeError(f"seed: expected an int or None, got {type(seed).__name__}")
    if system is not None and not isinstance(system, str):
        raise TypeError(f"system: expected a string or None, got {type(system).__name__}")
    return list(prompts)


def chat_messages(prompt: str, system: str | None) -> list[dict[str, str]]:
    """OpenAI-style message list for one user prompt."""
    messages = [{"role": "system", "content": system}] if system is not None else []
    messages.append({"role": "user", "content": prompt})
    return messages
