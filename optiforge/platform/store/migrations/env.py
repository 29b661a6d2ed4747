"""Alembic environment: runs on the connection the Store hands over (no alembic.ini)."""

from __future__ import annotations

from alembic import context

from optiforge.platform.store.engine import VERSION_TABLE
from optiforge.platform.store.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "optiforge migrations run programmatically: use optiforge.platform.store.Store(url) "
        "or optiforge.platform.store.engine.upgrade(engine)"
    )

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    version_table=VERSION_TABLE,
    # SQLite cannot ALTER most things in place; batch mode rebuilds the table instead.
    render_as_batch=True,
    compare_type=True,
    transactional_ddl=True,
)
with context.begin_transaction():
    context.run_migrations()
