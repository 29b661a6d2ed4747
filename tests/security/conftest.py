"""Security tests of the service: a real server subprocess, attacked as a hostile tenant would.

``storage_url`` runs a test on SQLite, and on PostgreSQL too when
``OPTIFORGE_TEST_POSTGRES_URL`` is set (see scripts/postgres.sh).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from service_helpers import PG_ENV, start_server


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def storage_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if request.param == "postgres":
        if not os.environ.get(PG_ENV):
            pytest.skip(f"{PG_ENV} not set (run scripts/postgres.sh)")
        yield os.environ[PG_ENV]
    else:
        yield f"sqlite:///{tmp_path_factory.mktemp('svc') / 'store.db'}"


@pytest.fixture(scope="module")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('svc') / 'store.db'}"


@pytest.fixture(scope="module")
def server(sqlite_url, tmp_path_factory):
    """``optiforge serve`` with the default limits, on SQLite (modules may override it)."""
    srv = start_server(sqlite_url, tmp=tmp_path_factory.mktemp("log"))
    yield srv
    srv.stop()
