"""Store fixtures: ``store`` opens the shared ``storage_url`` fixture (tests/conftest.py), so every
store test runs on SQLite, and on a fresh PostgreSQL database when ``OPTIFORGE_TEST_POSTGRES_URL``
is set (see scripts/postgres.sh)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from optiforge.platform.store import Store


@pytest.fixture
def store(storage_url: str, tmp_path) -> Iterator[Store]:
    s = Store(storage_url, artifacts_root=tmp_path / "artifacts")
    yield s
    s.close()
