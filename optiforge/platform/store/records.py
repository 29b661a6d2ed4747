"""Plain, immutable values the Store takes and returns (never live ORM objects).

``*In`` classes are what callers pass in; the others are what the store hands back, with the
ids and timestamps the database assigned. Timestamps are timezone-aware UTC datetimes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

CAMPAIGN_STATUSES = ("created", "running", "interrupted", "finished", "failed")
TRIAL_STATES = ("waiting", "running", "complete", "failed")
OPEN_TRIAL_STATES = ("waiting", "running")
DIRECTIONS = ("minimize", "maximize")


@dataclass(frozen=True)
class CandidateIn:
    """One candidate of a round together with its evaluation, as handed to ``record_round``.

    ``llm_call_index`` points into the same round's ``llm_calls`` list (the response this
    candidate was parsed from); ``None`` for candidates that no LLM wrote (seeds).
    """

    hash: str
    operator: str
    code: str | None
    idea: str | None = None
    parents: list[str] | tuple[str, ...] = field(default_factory=tuple)
    split: str = "train"
    valid: bool = False
    score: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    runtime_s: float = 0.0
    reward: float | None = None
    llm_call_index: int | None = None


@dataclass(frozen=True)
class LLMCallIn:
    """One prompt/response pair of a round (one sampled completion)."""

    prompt: str
    response: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    operator: str | None = None
    reward: float | None = None


@dataclass(frozen=True)
class Campaign:
    """A stored campaign; ``owner`` is who may see it on the dashboard (``"local"`` for the CLI's).

    ``runner`` names the process that set it ``running`` (:mod:`~optiforge.platform.store.runners`).
    A campaign stored as ``running`` whose runner on this machine has died reads as
    ``interrupted``: the process was killed before it could say so.
    """

    id: str
    owner: str
    name: str | None
    task: str
    agent: str
    llm: str
    budget: int
    seed: int
    executor: str
    config: dict[str, Any]
    status: str
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    runner: str | None = None


@dataclass(frozen=True)
class Candidate:
    """A stored candidate joined with the evaluation recorded with it in its round.

    ``number`` is its position in its campaign (0, 1, ... in the order stored): the name the
    dashboard shows, since ``id`` is one global sequence (like a trial's row id).
    """

    id: int
    campaign_id: str
    number: int
    round: int
    hash: str
    operator: str
    code: str | None
    idea: str | None
    parents: tuple[str, ...]
    split: str
    valid: bool
    score: float | None
    metrics: dict[str, Any]
    error: str | None
    runtime_s: float
    reward: float | None
    llm_call_index: int | None
    llm_call_id: int | None
    evaluation_id: int
    created_at: datetime


@dataclass(frozen=True)
class CandidateOutline:
    """A stored candidate without its texts (program, idea, error, metrics): what a summary or a
    curve over thousands of candidates needs, read in one light query."""

    number: int
    round: int
    hash: str
    operator: str
    valid: bool
    score: float | None
    reward: float | None


@dataclass(frozen=True)
class EvaluationRecord:
    """One stored evaluation. ``candidate_hash`` links it to the campaign's candidates with that
    hash (it may also name something that never was a candidate, e.g. ``"baseline:best_fit"``)."""

    id: int
    campaign_id: str
    candidate_hash: str
    split: str
    valid: bool
    score: float | None
    metrics: dict[str, Any]
    error: str | None
    runtime_s: float
    created_at: datetime


@dataclass(frozen=True)
class LLMCall:
    id: int
    campaign_id: str
    round: int
    index: int
    prompt: str
    response: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    operator: str | None
    reward: float | None
    created_at: datetime


@dataclass(frozen=True)
class Artifact:
    """A file or folder kept for a campaign (``path`` is absolute; ``sha256`` of its content)."""

    id: int
    campaign_id: str
    kind: str
    name: str
    path: Path
    sha256: str
    size_bytes: int
    meta: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class StudyRecord:
    id: str
    owner: str
    name: str | None
    space: dict[str, Any]
    direction: str
    agent: str
    agent_options: dict[str, Any]
    n_trials: int
    created_at: datetime


@dataclass(frozen=True)
class Trial:
    id: int
    study_id: str
    number: int
    params: dict[str, Any]
    value: float | None
    state: str
    created_at: datetime
    finished_at: datetime | None


@dataclass(frozen=True)
class TokenInfo:
    """An API token as the store knows it: never the token itself (only its SHA-256 is kept)."""

    id: str
    """Public handle of the token (12 hex digits): list and revoke it without the plaintext."""
    owner: str
    created_at: datetime
    revoked_at: datetime | None
