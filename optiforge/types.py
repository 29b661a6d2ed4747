"""Plain value types shared by every layer (no imports from the rest of optiforge).

Vocabulary follows docs/architecture.md: a *Candidate* is one proposal (a point or a
program), an *Evaluation* is the result of running it, a *Completion* is one LLM sample.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Completion:
    """One sampled LLM response.

    Attributes
    ----------
    text : str
        The generated text (without the prompt).
    prompt_tokens, completion_tokens : int
        Token counts as reported by the backend's tokenizer / server.
    finish_reason : str
        ``"stop"`` (end-of-sequence), ``"length"`` (hit ``max_new_tokens``) or backend-specific.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"


@dataclass
class Evaluation:
    """Result of evaluating one candidate, computed by trusted code.

    ``score`` is the task's objective, **lower is better** everywhere in optiforge
    (e.g. % excess bins over the lower bound, % tour-length gap, a black-box value).
    An invalid candidate has ``valid=False``, ``score=None`` and an ``error`` text.
    """

    valid: bool
    score: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    runtime_s: float = 0.0

    def __post_init__(self) -> None:
        if self.valid and (self.score is None or not math.isfinite(self.score)):
            # A "valid" evaluation without a finite score would poison comparisons downstream.
            self.valid, self.error = False, self.error or f"non-finite score {self.score!r}"
            self.score = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def invalid(cls, error: str, runtime_s: float = 0.0) -> Evaluation:
        return cls(valid=False, score=None, error=error, runtime_s=runtime_s)


def content_hash(text: str) -> str:
    """Stable identifier of a candidate's content (first 16 hex digits of SHA-256)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
