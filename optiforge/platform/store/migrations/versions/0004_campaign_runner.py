"""campaigns record the process that runs them: a killed run reads as interrupted

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03

Campaigns stored before this revision have no runner; one left ``running`` by a killed process
keeps reading as ``running`` until it is resumed (as before). Self-contained on purpose (no
imports from ``models``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("campaigns") as batch:
        batch.add_column(sa.Column("runner", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("campaigns") as batch:
        batch.drop_column("runner")
