"""Security tests of the service: a real server subprocess, attacked as a hostile tenant would.

``storage_url`` runs a test on SQLite, and on PostgreSQL too when
``OPTIFORGE_TEST_POSTGRES_URL`` is set (see scripts/postgres.sh).
"""

from __future__ import annotations

import pytest
from service_helpers import start_server


@pytest.fixture(scope="module")
def storage_url(module_storage_url: str) -> str:
    """One fresh database per module and backend, shared by the module's server."""
    return module_storage_url


@pytest.fixture(scope="module")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('svc') / 'store.db'}"


@pytest.fixture(scope="module")
def server(sqlite_url, tmp_path_factory):
    """``optiforge serve`` with the default limits, on SQLite (modules may override it)."""
    srv = start_server(sqlite_url, tmp=tmp_path_factory.mktemp("log"))
    yield srv
    srv.stop()
