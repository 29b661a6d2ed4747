"""initial schema: campaigns, rounds, evaluations, llm_calls, candidates, agent_states,
artifacts, studies, trials, tokens

Revision ID: 0001
Revises:
Create Date: 2026-12-02

Self-contained on purpose (no imports from ``models``): a revision must keep meaning the same
schema after the models move on.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _id() -> sa.types.TypeEngine:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "campaigns",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(200), nullable=True),
        sa.Column("task", sa.String(200), nullable=False),
        sa.Column("agent", sa.String(64), nullable=False),
        sa.Column("llm", sa.String(500), nullable=False),
        sa.Column("budget", sa.Integer(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("executor", sa.String(64), nullable=False),
        sa.Column("config", _json(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        _ts("finished_at", nullable=True),
        sa.CheckConstraint(
            "status IN ('created', 'running', 'interrupted', 'finished', 'failed')",
            name=op.f("ck_campaigns_status"),
        ),
        sa.CheckConstraint("budget > 0", name=op.f("ck_campaigns_budget_positive")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaigns")),
    )
    op.create_index(op.f("ix_campaigns_created_at"), "campaigns", ["created_at"])

    op.create_table(
        "studies",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("name", sa.String(200), nullable=True),
        sa.Column("space", _json(), nullable=False),
        sa.Column("direction", sa.String(16), nullable=False),
        sa.Column("agent", sa.String(64), nullable=False),
        sa.Column("agent_options", _json(), nullable=False),
        sa.Column("n_trials", sa.Integer(), nullable=False),
        _ts("created_at"),
        sa.CheckConstraint("direction IN ('minimize', 'maximize')", name=op.f("ck_studies_direction")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_studies")),
    )
    op.create_index(op.f("ix_studies_created_at"), "studies", ["created_at"])
    op.create_index(op.f("ix_studies_owner"), "studies", ["owner"])

    op.create_table(
        "tokens",
        sa.Column("token_sha256", sa.String(64), nullable=False),
        sa.Column("owner", sa.String(200), nullable=False),
        _ts("created_at"),
        _ts("revoked_at", nullable=True),
        sa.PrimaryKeyConstraint("token_sha256", name=op.f("pk_tokens")),
    )
    op.create_index(op.f("ix_tokens_owner"), "tokens", ["owner"])

    op.create_table(
        "artifacts",
        sa.Column("id", _id(), autoincrement=True, nullable=False),
        sa.Column("campaign_id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("meta", _json(), nullable=False),
        _ts("created_at"),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaigns.id"], ondelete="CASCADE",
                                name=op.f("fk_artifacts_campaign_id_campaigns")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_artifacts")),
        sa.UniqueConstraint("campaign_id", "kind", "name", name="uq_artifacts_campaign_kind_name"),
    )

    op.create_table(
        "evaluations",
        sa.Column("id", _id(), autoincrement=True, nullable=False),
        sa.Column("campaign_id", sa.String(32), nullable=False),
        sa.Column("candidate_hash", sa.String(200), nullable=False),
        sa.Column("split", sa.String(64), nullable=False),
        sa.Column("valid", sa.Boolean(), nullable=False),
        sa.Column("score", sa.Double(), nullable=True),
        sa.Column("metrics", _json(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("runtime_s", sa.Double(), nullable=False),
        _ts("created_at"),
        sa.CheckConstraint("NOT valid OR score IS NOT NULL",
                           name=op.f("ck_evaluations_valid_has_score")),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaigns.id"], ondelete="CASCADE",
                                name=op.f("fk_evaluations_campaign_id_campaigns")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evaluations")),
    )
    op.create_index("ix_evaluations_campaign_hash", "evaluations", ["campaign_id", "candidate_hash"])
    op.create_index("ix_evaluations_campaign_split_score", "evaluations",
                    ["campaign_id", "split", "valid", "score"])

    op.create_table(
        "rounds",
        sa.Column("campaign_id", sa.String(32), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        _ts("created_at"),
        sa.ForeignKeyConstraint(["campaign_id"], ["campaigns.id"], ondelete="CASCADE",
                                name=op.f("fk_rounds_campaign_id_campaigns")),
        sa.PrimaryKeyConstraint("campaign_id", "round", name=op.f("pk_rounds")),
    )

    op.create_table(
        "trials",
        sa.Column("id", _id(), autoincrement=True, nullable=False),
        sa.Column("study_id", sa.String(32), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("params", _json(), nullable=False),
        sa.Column("value", sa.Double(), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        _ts("created_at"),
        _ts("finished_at", nullable=True),
        sa.CheckConstraint("state <> 'complete' OR value IS NOT NULL",
                           name=op.f("ck_trials_complete_has_value")),
        sa.CheckConstraint("state IN ('waiting', 'running', 'complete', 'failed')",
                           name=op.f("ck_trials_state")),
        sa.ForeignKeyConstraint(["study_id"], ["studies.id"], ondelete="CASCADE",
                                name=op.f("fk_trials_study_id_studies")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trials")),
        sa.UniqueConstraint("study_id", "number", name="uq_trials_study_number"),
    )
    op.create_index("ix_trials_study_state", "trials", ["study_id", "state"])

    op.create_table(
        "agent_states",
        sa.Column("campaign_id", sa.String(32), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("state", _json(), nullable=False),
        _ts("created_at"),
        sa.ForeignKeyConstraint(["campaign_id", "round"], ["rounds.campaign_id", "rounds.round"],
                                ondelete="CASCADE", name="fk_agent_states_round"),
        sa.PrimaryKeyConstraint("campaign_id", "round", name=op.f("pk_agent_states")),
    )

    op.create_table(
        "llm_calls",
        sa.Column("id", _id(), autoincrement=True, nullable=False),
        sa.Column("campaign_id", sa.String(32), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("call_index", sa.Integer(), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("response", sa.Text(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("model", sa.String(500), nullable=False),
        sa.Column("operator", sa.String(64), nullable=True),
        sa.Column("reward", sa.Double(), nullable=True),
        _ts("created_at"),
        sa.ForeignKeyConstraint(["campaign_id", "round"], ["rounds.campaign_id", "rounds.round"],
                                ondelete="CASCADE", name="fk_llm_calls_round"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_llm_calls")),
        sa.UniqueConstraint("campaign_id", "round", "call_index", name="uq_llm_calls_round_index"),
    )

    op.create_table(
        "candidates",
        sa.Column("id", _id(), autoincrement=True, nullable=False),
        sa.Column("campaign_id", sa.String(32), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(200), nullable=False),
        sa.Column("operator", sa.String(64), nullable=False),
        sa.Column("code", sa.Text(), nullable=True),
        sa.Column("idea", sa.Text(), nullable=True),
        sa.Column("parents", _json(), nullable=False),
        sa.Column("reward", sa.Double(), nullable=True),
        sa.Column("evaluation_id", _id(), nullable=False),
        sa.Column("llm_call_id", _id(), nullable=True),
        _ts("created_at"),
        sa.ForeignKeyConstraint(["campaign_id", "round"], ["rounds.campaign_id", "rounds.round"],
                                ondelete="CASCADE", name="fk_candidates_round"),
        sa.ForeignKeyConstraint(["evaluation_id"], ["evaluations.id"], ondelete="CASCADE",
                                name=op.f("fk_candidates_evaluation_id_evaluations")),
        sa.ForeignKeyConstraint(["llm_call_id"], ["llm_calls.id"], ondelete="SET NULL",
                                name=op.f("fk_candidates_llm_call_id_llm_calls")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_candidates")),
        sa.UniqueConstraint("evaluation_id", name=op.f("uq_candidates_evaluation_id")),
    )
    op.create_index("ix_candidates_campaign_hash", "candidates", ["campaign_id", "hash"])
    op.create_index("ix_candidates_campaign_round", "candidates", ["campaign_id", "round"])


def downgrade() -> None:
    # Reverse dependency order: children before the tables they reference.
    for table in ("candidates", "llm_calls", "agent_states", "trials", "rounds", "evaluations",
                  "artifacts", "tokens", "studies", "campaigns"):
        op.drop_table(table)
