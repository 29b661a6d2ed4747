"""tokens get a public id: list and revoke a token without its plaintext

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03

Existing tokens keep working (their SHA-256 stays the primary key) and each gets a fresh
random id. Self-contained on purpose (no imports from ``models``).
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("id", sa.String(32), nullable=True))
    tokens = sa.table("tokens", sa.column("token_sha256", sa.String()), sa.column("id", sa.String()))
    bind = op.get_bind()
    for (digest,) in bind.execute(sa.select(tokens.c.token_sha256)).all():
        bind.execute(tokens.update().where(tokens.c.token_sha256 == digest)
                     .values(id=uuid.uuid4().hex[:12]))
    with op.batch_alter_table("tokens") as batch:
        batch.alter_column("id", existing_type=sa.String(32), nullable=False)
        batch.create_unique_constraint(op.f("uq_tokens_id"), ["id"])


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_constraint(op.f("uq_tokens_id"), type_="unique")
        batch.drop_column("id")
