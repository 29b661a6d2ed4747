"""Fixtures shared by the whole suite: a fresh database per test on each store backend, and an
event-based wait (tests wait for what they need to see, never for a fixed time)."""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

# Triton's kernels run on the CPU through its interpreter. ``triton.jit`` fixes interpreted vs
# compiled when a function is decorated, including triton.language's own helpers the first time
# anything imports triton, so this must be set before any test module is collected (a module that
# imports a triton-using library at collection would otherwise freeze the compiled mode, and every
# kernel test would fail with "Cannot call @triton.jit'd outside of the scope of a kernel"). On a
# CUDA machine set ``TRITON_INTERPRET=0`` explicitly to test the compiled kernels instead.
os.environ.setdefault("TRITON_INTERPRET", "1")

PG_ENV = "OPTIFORGE_TEST_POSTGRES_URL"
T = TypeVar("T")


BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@contextmanager
def fresh_database(backend: str, folder: Path) -> Iterator[str]:
    """A SQLAlchemy URL of a brand-new, empty database on ``backend`` (dropped afterwards).

    ``"sqlite"``: a file in ``folder``. ``"postgres"``: a database created for the caller
    (``optiforge_t_<random>``, dropped afterwards even if connections are still open) on the
    server named by ``OPTIFORGE_TEST_POSTGRES_URL``; skipped when that variable is unset (start
    a server and get its URL with ``scripts/postgres.sh``). The role in the URL needs ``CREATEDB``.
    """
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'store.db'}"
        return
    base_url = os.environ.get(PG_ENV)
    if not base_url:
        pytest.skip(f"{PG_ENV} not set (start a server with scripts/postgres.sh)")
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    base = make_url(base_url)
    name = f"optiforge_t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        _drop_database(admin, name)
        admin.dispose()


@pytest.fixture(params=BACKENDS)
def storage_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database per test, once per store backend (SQLite, PostgreSQL).

    Each test sees only its own rows, so tests may count what they wrote.
    """
    with fresh_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture(scope="module", params=BACKENDS)
def module_storage_url(request: pytest.FixtureRequest,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """:func:`storage_url` shared by a module's tests (e.g. behind one real server)."""
    with fresh_database(request.param, tmp_path_factory.mktemp("db")) as url:
        yield url


def _drop_database(admin, name: str) -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    # FORCE ends the test's leftover connections; it cannot end an autovacuum worker that just
    # entered the new database (a superuser's), so retry until that one has left.
    for attempt in range(60):
        try:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            return
        except DBAPIError:
            if attempt == 59:
                raise
            time.sleep(0.5)


def _wait_for(condition: Callable[[], T], what: str, timeout: float = 300.0, every: float = 0.05) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


@pytest.fixture
def wait_for() -> Callable[..., object]:
    """``wait_for(condition, what, timeout=300)``: poll ``condition()`` until it is truthy.

    Returns the truthy value. The timeout is a generous guard against hangs on a loaded
    machine, not a speed requirement: when it expires the test fails naming ``what``.
    """
    return _wait_for


@pytest.fixture(autouse=True, scope="session")
def _private_default_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test writes into the checkout's ``./.optiforge``: the default home is a temp dir.

    Tests that need their own home still set ``OPTIFORGE_HOME`` (the ``home`` fixtures);
    CLI subprocesses inherit this one.
    """
    old = os.environ.get("OPTIFORGE_HOME")
    os.environ["OPTIFORGE_HOME"] = str(tmp_path_factory.mktemp("default-home"))
    yield
    if old is None:
        os.environ.pop("OPTIFORGE_HOME", None)
    else:
        os.environ["OPTIFORGE_HOME"] = old


def _fail_if_default_dtype_changed(message: str) -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_default_dtype() != torch.float32:
        torch.set_default_dtype(torch.float32)  # so one culprit fails, not every later test
        pytest.fail(message)


@pytest.fixture(autouse=True)
def _torch_default_dtype_untouched() -> Iterator[None]:
    """Fail, by name, a test that leaves torch's process-wide default dtype changed.

    A module that once set float64 at import silently turned 39 unrelated float32 tests red
    (kernels, distributed training). Checked before (a change at collection time) and after.
    """
    _fail_if_default_dtype_changed("torch's default dtype was changed at import time by a test "
                                   "module; set it in a fixture that restores it")
    yield
    _fail_if_default_dtype_changed("this test left torch's default dtype changed; restore it in a fixture")
