"""The database schema (SQLAlchemy 2 declarative). Alembic migrations under ``migrations/``
create exactly this; ``tests/platform/store/test_migrations.py`` checks the two never drift.

Tables
------
campaigns      one row per campaign (owner, task, agent, LLM, budget, seed, executor, config, status)
rounds         one row per committed round: (campaign_id, round) is the unit of atomicity
candidates     proposals of a round; each points at the evaluation recorded with it
evaluations    every evaluation (round results and later re-scorings, e.g. on the test split)
llm_calls      prompt/response/token counts of a round
agent_states   the agent's state after a round (what a resumed campaign restores)
artifacts      files/folders kept for a campaign (LoRA adapters, exports), with their SHA-256
studies        black-box studies (owner, search space, direction, agent + options)
trials         one row per trial; (study_id, number) unique, numbers assigned without gaps
tokens         API bearer tokens, stored as SHA-256 digests only, each with a public id
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

# Explicit constraint names keep migrations reproducible across SQLite and PostgreSQL.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JSONType = JSON().with_variant(JSONB(), "postgresql")
# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets 64-bit ids.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC datetimes on every backend (SQLite has no time zones)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use timezone-aware UTC")
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class CampaignRow(Base):
    __tablename__ = "campaigns"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    # Who may see it on the dashboard (revision 0003; the CLI's campaigns belong to "local").
    owner: Mapped[str] = mapped_column(String(200), index=True)
    name: Mapped[str | None] = mapped_column(String(200))
    task: Mapped[str] = mapped_column(String(200))
    agent: Mapped[str] = mapped_column(String(64))
    llm: Mapped[str] = mapped_column(String(500))
    budget: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(BigInteger)
    executor: Mapped[str] = mapped_column(String(64))
    config: Mapped[dict] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The process that set it running (revision 0004; see platform/store/runners.py).
    runner: Mapped[str | None] = mapped_column(String(200))
    __table_args__ = (
        CheckConstraint(
            "status IN ('created', 'running', 'interrupted', 'finished', 'failed')", name="status"
        ),
        CheckConstraint("budget > 0", name="budget_positive"),
    )


class RoundRow(Base):
    __tablename__ = "rounds"
    campaign_id: Mapped[str] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True
    )
    round: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class EvaluationRow(Base):
    __tablename__ = "evaluations"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    campaign_id: Mapped[str] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    candidate_hash: Mapped[str] = mapped_column(String(200))
    split: Mapped[str] = mapped_column(String(64))
    valid: Mapped[bool] = mapped_column(Boolean)
    score: Mapped[float | None] = mapped_column(Double)
    metrics: Mapped[dict] = mapped_column(JSONType)
    error: Mapped[str | None] = mapped_column(Text)
    runtime_s: Mapped[float] = mapped_column(Double)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    __table_args__ = (
        Index("ix_evaluations_campaign_hash", "campaign_id", "candidate_hash"),
        Index("ix_evaluations_campaign_split_score", "campaign_id", "split", "valid", "score"),
        CheckConstraint("NOT valid OR score IS NOT NULL", name="valid_has_score"),
    )


class LLMCallRow(Base):
    __tablename__ = "llm_calls"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    campaign_id: Mapped[str] = mapped_column(String(32))
    round: Mapped[int] = mapped_column(Integer)
    call_index: Mapped[int] = mapped_column(Integer)
    prompt: Mapped[str] = mapped_column(Text)
    response: Mapped[str] = mapped_column(Text)
    prompt_tokens: Mapped[int] = mapped_column(Integer)
    completion_tokens: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(String(500))
    operator: Mapped[str | None] = mapped_column(String(64))
    reward: Mapped[float | None] = mapped_column(Double)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    __table_args__ = (
        ForeignKeyConstraint(
            ["campaign_id", "round"], ["rounds.campaign_id", "rounds.round"],
            ondelete="CASCADE", name="fk_llm_calls_round",
        ),
        UniqueConstraint("campaign_id", "round", "call_index", name="uq_llm_calls_round_index"),
    )


class CandidateRow(Base):
    __tablename__ = "candidates"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    campaign_id: Mapped[str] = mapped_column(String(32))
    round: Mapped[int] = mapped_column(Integer)
    hash: Mapped[str] = mapped_column(String(200))
    operator: Mapped[str] = mapped_column(String(64))
    code: Mapped[str | None] = mapped_column(Text)
    idea: Mapped[str | None] = mapped_column(Text)
    parents: Mapped[list] = mapped_column(JSONType)
    reward: Mapped[float | None] = mapped_column(Double)
    evaluation_id: Mapped[int] = mapped_column(
        ForeignKey("evaluations.id", ondelete="CASCADE"), unique=True
    )
    llm_call_id: Mapped[int | None] = mapped_column(ForeignKey("llm_calls.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    __table_args__ = (
        ForeignKeyConstraint(
            ["campaign_id", "round"], ["rounds.campaign_id", "rounds.round"],
            ondelete="CASCADE", name="fk_candidates_round",
        ),
        Index("ix_candidates_campaign_hash", "campaign_id", "hash"),
        Index("ix_candidates_campaign_round", "campaign_id", "round"),
    )


class AgentStateRow(Base):
    __tablename__ = "agent_states"
    campaign_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    round: Mapped[int] = mapped_column(Integer, primary_key=True)
    state: Mapped[dict] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    __table_args__ = (
        ForeignKeyConstraint(
            ["campaign_id", "round"], ["rounds.campaign_id", "rounds.round"],
            ondelete="CASCADE", name="fk_agent_states_round",
        ),
    )


class ArtifactRow(Base):
    __tablename__ = "artifacts"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    campaign_id: Mapped[str] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(255))
    path: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    meta: Mapped[dict] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    __table_args__ = (
        UniqueConstraint("campaign_id", "kind", "name", name="uq_artifacts_campaign_kind_name"),
    )


class StudyRow(Base):
    __tablename__ = "studies"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    owner: Mapped[str] = mapped_column(String(200), index=True)
    name: Mapped[str | None] = mapped_column(String(200))
    space: Mapped[dict] = mapped_column(JSONType)
    direction: Mapped[str] = mapped_column(String(16))
    agent: Mapped[str] = mapped_column(String(64))
    agent_options: Mapped[dict] = mapped_column(JSONType)
    # The next trial number; incremented under the row lock so numbers never repeat or skip.
    n_trials: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    __table_args__ = (
        CheckConstraint("direction IN ('minimize', 'maximize')", name="direction"),
    )


class TrialRow(Base):
    __tablename__ = "trials"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    study_id: Mapped[str] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    params: Mapped[dict] = mapped_column(JSONType)
    value: Mapped[float | None] = mapped_column(Double)
    state: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    __table_args__ = (
        UniqueConstraint("study_id", "number", name="uq_trials_study_number"),
        Index("ix_trials_study_state", "study_id", "state"),
        CheckConstraint("state IN ('waiting', 'running', 'complete', 'failed')", name="state"),
        CheckConstraint("state <> 'complete' OR value IS NOT NULL", name="complete_has_value"),
    )


class TokenRow(Base):
    __tablename__ = "tokens"
    token_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    # A random public handle (revision 0002): list and revoke a token without its plaintext.
    id: Mapped[str] = mapped_column(String(32), unique=True)
    owner: Mapped[str] = mapped_column(String(200), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
