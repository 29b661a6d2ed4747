"""Connection set-up: SQLite pragmas, write locking, fork safety, in-memory databases."""

from __future__ import annotations

import multiprocessing as mp
import threading

import pytest
from store_helpers import make_campaign, run_at_once

from optiforge.platform.store import CandidateIn, Store


@pytest.mark.parametrize(("env", "level"), [(None, 1), ("full", 2), ("NORMAL", 1)])
def test_sqlite_pragmas(tmp_path, monkeypatch, env, level) -> None:
    if env is None:
        monkeypatch.delenv("OPTIFORGE_SQLITE_SYNCHRONOUS", raising=False)
    else:
        monkeypatch.setenv("OPTIFORGE_SQLITE_SYNCHRONOUS", env)
    store = Store(f"sqlite:///{tmp_path / 'p.db'}")
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == level  # 1 NORMAL, 2 FULL
    store.close()


def test_bad_synchronous_setting_names_the_variable(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPTIFORGE_SQLITE_SYNCHRONOUS", "off")
    with pytest.raises(ValueError, match="OPTIFORGE_SQLITE_SYNCHRONOUS"):
        Store(f"sqlite:///{tmp_path / 'p.db'}")


def test_foreign_keys_are_enforced(store: Store) -> None:
    from sqlalchemy.exc import IntegrityError

    with pytest.raises(IntegrityError):
        with store.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO rounds (campaign_id, round, created_at) "
                "VALUES ('nope', 0, CURRENT_TIMESTAMP)"
            )


def test_reader_is_not_blocked_by_an_open_write_transaction(tmp_path) -> None:
    """WAL: a writer holding the lock does not stop another process/thread from reading."""
    url = f"sqlite:///{tmp_path / 'w.db'}"
    store = Store(url)
    cid = make_campaign(store)
    store.record_round(cid, 0, [CandidateIn("a", "seed", "c", valid=True, score=1.0)])
    other = Store(url)
    holding, release = threading.Event(), threading.Event()

    def hold_write_lock() -> None:
        with store._write() as s:  # BEGIN IMMEDIATE: the write lock is held from here
            s.connection()
            holding.set()
            release.wait(10)

    t = threading.Thread(target=hold_write_lock)
    t.start()
    try:
        assert holding.wait(10)
        assert [c.hash for c in other.candidates(cid)] == ["a"]
    finally:
        release.set()
        t.join()
    store.close()
    other.close()


def _use_inherited(store: Store, cid: str, rounds: range, results) -> None:
    try:
        for r in rounds:
            store.record_round(cid, r, [CandidateIn(f"c{r}", "e1", "x", valid=True, score=float(r))])
        results.put("ok")
    except BaseException as exc:
        results.put(f"error: {exc!r}")


def test_store_inherited_through_fork_keeps_working(store: Store) -> None:
    """A forked child reuses the parent's Store object; both keep writing safely."""
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork on this platform")
    cid = make_campaign(store)
    store.candidates(cid)  # make sure the parent has a pooled connection to inherit
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    children = [ctx.Process(target=_use_inherited, args=(store, cid, range(10 * i, 10 * i + 10), results))
                for i in (1, 2)]
    for p in children:
        p.start()
    _use_inherited(store, cid, range(0, 10), results)
    outcomes = [results.get(timeout=60) for _ in range(3)]
    for p in children:
        p.join(timeout=30)
    assert outcomes == ["ok"] * 3
    assert sorted(c.round for c in store.candidates(cid)) == list(range(30))


def test_url_is_reported_without_password() -> None:
    store = Store("sqlite://")
    assert "sqlite://" in repr(store)
    store.close()


def _connect_at_once(paths: list[str], barrier, results) -> None:
    from optiforge.platform.store.engine import make_engine

    for path in paths:
        try:
            barrier.wait(timeout=60)
            engine = make_engine(f"sqlite:///{path}")
            with engine.connect() as conn:
                results.put(conn.exec_driver_sql("PRAGMA journal_mode").scalar())
            engine.dispose()
        except Exception as exc:  # reported, so the test names what failed
            results.put(f"error: {exc!r}")


def test_processes_connecting_to_a_fresh_file_at_once_all_get_wal(tmp_path) -> None:
    """Switching to WAL needs an exclusive lock that SQLite does not wait for; the engine must.

    Without the engine's own retry, 6 processes racing on each of 60 fresh files get
    "database is locked" in each of 10 runs of this test (2 cores); with it, none of 20 did.
    """
    paths = [str(tmp_path / f"race{i}.db") for i in range(60)]
    got, _ = run_at_once(_connect_at_once, [(paths,)] * 6, results_each=len(paths))
    assert got == ["wal"] * len(got), [g for g in got if g != "wal"][:3]
