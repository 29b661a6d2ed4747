"""Engine set-up and schema migrations.

SQLite is configured for many processes and threads writing one file: WAL journal (readers
never block the writer), ``foreign_keys=ON``, a busy timeout, ``synchronous=NORMAL`` (in WAL
mode a returned commit survives the process being killed; ``OPTIFORGE_SQLITE_SYNCHRONOUS=FULL``
makes it survive power loss too, at one fsync per commit), and **write transactions that start
with ``BEGIN IMMEDIATE``**: they take the write lock up front, so a transaction that read first
can never fail later with "database is locked" when it tries to upgrade its lock.

Migrations are Alembic revisions shipped inside the package and applied programmatically when a
Store opens, under a lock (SQLite: the write lock; PostgreSQL: an advisory lock), so several
processes opening a fresh database at once apply them exactly once.
"""

from __future__ import annotations

import os
import sqlite3
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.pool import StaticPool

from optiforge.extras import require
from optiforge.platform import config

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
VERSION_TABLE = "optiforge_schema_version"
BUSY_TIMEOUT_MS = 60_000
# Any constant works; it only has to be the same for every optiforge process.
_PG_MIGRATION_LOCK = 0x0F7F0_2024
BEGIN_OPTION = "optiforge_begin"


def make_engine(url: str) -> Engine:
    """Create the SQLAlchemy engine for ``url`` (SQLite or PostgreSQL via psycopg 3).

    Raises
    ------
    ValueError
        If ``url`` is not a valid SQLAlchemy URL or names an unavailable driver.
    """
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ValueError(f"url: not a database URL: {url!r}") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(parsed)
    if backend == "postgresql" and parsed.get_driver_name() in ("psycopg2", "postgresql"):
        # Plain "postgresql://" would pick psycopg2, which optiforge does not depend on.
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.drivername == "postgresql+psycopg":
        require("postgres", "a PostgreSQL store")
    try:
        return create_engine(parsed, pool_pre_ping=True)
    except (NoSuchModuleError, ImportError) as exc:
        raise ValueError(f"url: no driver for {parsed.drivername!r} ({exc})") from exc


def is_memory(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite" and engine.url.database in (None, "", ":memory:")


def _sqlite_engine(url: Any) -> Engine:
    database = url.database
    synchronous = config.sqlite_synchronous()
    memory = database in (None, "", ":memory:")
    if memory:
        # One shared connection: a second connection would see a different, empty database.
        engine = create_engine(url, poolclass=StaticPool,
                               connect_args={"check_same_thread": False})
    else:
        if not url.query.get("uri"):
            _private_database_file(Path(database).expanduser())
        engine = create_engine(
            url,
            connect_args={"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            pool_size=8,
            max_overflow=24,
        )

    @event.listens_for(engine, "connect")
    def _configure(dbapi_conn: Any, _record: Any) -> None:
        # Autocommit at the driver level: transactions are begun explicitly below, so the
        # stdlib module's own implicit BEGIN (which is DEFERRED) never gets in the way.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        if not memory:
            _enable_wal(cur)
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute(f"PRAGMA synchronous={synchronous}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get(BEGIN_OPTION, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")

    return engine


def _enable_wal(cur: Any) -> None:
    """Switch the database to WAL, waiting out other processes that are switching it too.

    Changing the journal mode needs an exclusive lock. A lock held before the switch begins is
    waited for (the busy handler runs), but when several processes switch a fresh file at the
    same moment, one can get "database is locked" at once, without the busy handler. So
    retry here, with backoff, for as long as the busy timeout would have waited.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.001
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(2 * delay, 0.05)


def _private_database_file(path: Path) -> None:
    """Create the SQLite file owner-only (0600) before SQLite does, or check an existing one.

    SQLite creates the ``-wal`` and ``-shm`` files later with the database file's own mode,
    so a private database file keeps all three private without touching the process umask
    (which every thread shares).
    """
    try:
        config.make_private_dir(path.parent)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"url: cannot create the folder of {str(path)!r}: {reason}") from exc
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     config.PRIVATE_FILE_MODE)
    except FileExistsError:
        if path.is_file():
            config.warn_if_shared(path)
        return
    except OSError as exc:
        raise ValueError(f"url: cannot create the database file {str(path)!r}: {exc.strerror}") from exc
    try:
        os.fchmod(fd, config.PRIVATE_FILE_MODE)  # exactly 0600, whatever the umask
    finally:
        os.close(fd)


def writer(engine: Engine) -> Engine:
    """The same engine (same pool) whose SQLite transactions begin with ``BEGIN IMMEDIATE``."""
    return engine.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})


@lru_cache(maxsize=1)
def _alembic_head() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()


def _alembic_config(conn: Connection) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["connection"] = conn
    return cfg


def current_revision(conn: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(
        conn, opts={"version_table": VERSION_TABLE}
    ).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` (``alembic upgrade``), once, even under concurrency."""
    from alembic import command

    if revision == "head":
        with engine.connect() as conn:
            if current_revision(conn) == _alembic_head():
                return
    with writer(engine).connect() as conn, conn.begin():
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
        command.upgrade(_alembic_config(conn), revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Revert the schema to ``revision`` (``"base"`` drops every optiforge table)."""
    from alembic import command

    with writer(engine).connect() as conn, conn.begin():
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
        command.downgrade(_alembic_config(conn), revision)
