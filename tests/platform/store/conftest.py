"""Store fixtures: every test using ``store``/``store_url`` runs on SQLite, and on PostgreSQL
too when ``OPTIFORGE_TEST_POSTGRES_URL`` is set (see scripts/postgres.sh)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from store_helpers import PG_ENV

from optiforge.platform.store import Store


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres" and not os.environ.get(PG_ENV):
        pytest.skip(f"{PG_ENV} not set (run scripts/postgres.sh)")
    return request.param


@pytest.fixture
def store_url(backend: str, tmp_path) -> Iterator[str]:
    """A database URL of an empty-or-shared database for this test.

    SQLite: a fresh file. PostgreSQL: the shared test database (every test works on its own
    random campaign/study ids, so tests don't see each other's rows).
    """
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
    else:
        yield os.environ[PG_ENV]


@pytest.fixture
def store(store_url: str, tmp_path) -> Iterator[Store]:
    s = Store(store_url, artifacts_root=tmp_path / "artifacts")
    yield s
    s.close()


@pytest.fixture
def scratch_url(backend: str, tmp_path) -> Iterator[str]:
    """A brand-new, empty database (PostgreSQL: created for the test and dropped after)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'scratch.db'}"
        return
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = make_url(os.environ[PG_ENV]).set(drivername="postgresql+psycopg")
    name = f"optiforge_scratch_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

