"""Schema migrations: applied on open, once under concurrency, matching the models exactly."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from store_helpers import run_at_once

from optiforge.platform.store import NotFoundError, Store
from optiforge.platform.store.engine import (
    MIGRATIONS_DIR,
    VERSION_TABLE,
    current_revision,
    downgrade,
    make_engine,
    upgrade,
)
from optiforge.platform.store.models import Base

TABLES = {"campaigns", "rounds", "candidates", "evaluations", "llm_calls", "agent_states",
          "artifacts", "studies", "trials", "tokens"}


def _head() -> str:
    return ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()


def test_open_creates_schema_at_head(storage_url: str) -> None:
    store = Store(storage_url)
    tables = set(inspect(store.engine).get_table_names())
    assert TABLES | {VERSION_TABLE} <= tables
    with store.engine.connect() as conn:
        assert current_revision(conn) == _head()
    store.close()


def test_migrations_match_models(storage_url: str) -> None:
    """Autogenerate finds nothing to do: the migrations build exactly the declared schema."""
    store = Store(storage_url)
    with store.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True,
                                                     "version_table": VERSION_TABLE})
        diff = compare_metadata(ctx, Base.metadata)
    store.close()
    assert diff == []


def test_downgrade_and_upgrade_round_trip(storage_url: str) -> None:
    store = Store(storage_url)
    cid = store.create_campaign(task="t", agent="evolution", llm="m", budget=1, seed=0,
                                executor="local")
    downgrade(store.engine, "base")
    assert not TABLES & set(inspect(store.engine).get_table_names())
    upgrade(store.engine)
    assert TABLES <= set(inspect(store.engine).get_table_names())
    assert all(c.id != cid for c in store.list_campaigns())
    store.close()


def test_campaigns_made_before_revision_0003_belong_to_local(storage_url: str) -> None:
    """A database at revision 0002: its campaigns get the owner ``local`` (the operator's)."""
    engine = make_engine(storage_url)
    upgrade(engine, "0002")
    now = datetime.now(timezone.utc)
    stamp = now.replace(tzinfo=None) if engine.dialect.name == "sqlite" else now
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO campaigns (id, task, agent, llm, budget, seed, executor, config, status, "
            "created_at, updated_at) VALUES ('c0ffee000001', 't', 'evolution', 'm', 1, 0, 'local', "
            "'{}', 'finished', :c, :c)"), {"c": stamp})
    engine.dispose()
    store = Store(storage_url)  # opening migrates to head
    assert store.get_campaign("c0ffee000001").owner == "local"
    assert store.get_campaign("c0ffee000001", owner="local").task == "t"
    with pytest.raises(NotFoundError):
        store.get_campaign("c0ffee000001", owner="alice")
    new = store.create_campaign(task="t", agent="a", llm="m", budget=1, seed=0, executor="local",
                                owner="alice")
    assert [c.id for c in store.list_campaigns("alice")] == [new]
    downgrade(store.engine, "0002")  # and back: the column goes, the campaigns stay
    with store.engine.connect() as conn:
        assert "owner" not in {c["name"] for c in inspect(conn).get_columns("campaigns")}
        assert conn.execute(text("SELECT count(*) FROM campaigns")).scalar() == 2
    store.close()


def _open_store(url: str, barrier, results) -> None:
    try:
        barrier.wait(timeout=60)
        s = Store(url)
        results.put(s.create_campaign(task="t", agent="a", llm="m", budget=1, seed=0,
                                      executor="local"))
    except BaseException as exc:
        results.put(f"error: {exc!r}")


def test_concurrent_first_open_migrates_once(storage_url: str) -> None:
    got, _ = run_at_once(_open_store, [(storage_url,)] * 4)
    assert not [g for g in got if g.startswith("error")], got
    engine = make_engine(storage_url)
    with engine.connect() as conn:
        assert conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all() == [_head()]
        assert conn.execute(text("SELECT count(*) FROM campaigns")).scalar() == 4
    engine.dispose()


def test_reopening_does_not_rerun_migrations(store: Store, storage_url: str) -> None:
    cid = store.create_campaign(task="t", agent="a", llm="m", budget=1, seed=0, executor="local")
    again = Store(storage_url)
    assert again.get_campaign(cid).task == "t"
    again.close()


@pytest.mark.parametrize("bad", ["not a url", "nosuchdb://x", "sqlite:////proc/forbidden/x.db"])
def test_bad_url_is_a_value_error_naming_url(bad: str) -> None:
    with pytest.raises(ValueError, match="url"):
        Store(bad)


def test_unreachable_postgres_is_a_value_error_without_password() -> None:
    pytest.importorskip("psycopg")
    url = "postgresql+psycopg://u:secret-pw@127.0.0.1:1/db?connect_timeout=2"
    with pytest.raises(ValueError, match="url") as err:
        Store(url)
    assert "secret-pw" not in str(err.value)
