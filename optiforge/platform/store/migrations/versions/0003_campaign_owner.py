"""campaigns get an owner: the dashboard shows a campaign only to its owner

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04

Campaigns stored before this revision were started by the operator from the command line, so
they belong to ``local``, the owner the CLI has always given its own studies (and the studies of
black-box campaigns). Self-contained on purpose (no imports from ``models``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("campaigns") as batch:
        # The server default fills existing rows; new rows always name their owner.
        batch.add_column(sa.Column("owner", sa.String(200), nullable=False, server_default="local"))
    with op.batch_alter_table("campaigns") as batch:
        batch.alter_column("owner", existing_type=sa.String(200), server_default=None)
    op.create_index(op.f("ix_campaigns_owner"), "campaigns", ["owner"])


def downgrade() -> None:
    op.drop_index(op.f("ix_campaigns_owner"), table_name="campaigns")
    with op.batch_alter_table("campaigns") as batch:
        batch.drop_column("owner")
