"""'Nothing lost': a returned write survives SIGKILL, and a round is all-or-nothing."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import pytest
from sqlalchemy import event
from store_helpers import HERE, make_campaign, subprocess_env

from optiforge.platform.store import CandidateIn, LLMCallIn, Store

PER_ROUND = 12


def _assert_rounds_complete(store: Store, cid: str, acknowledged: list[int]) -> set[int]:
    """Every acknowledged round is fully stored; every stored round is complete."""
    cands = store.candidates(cid)
    calls = store.llm_calls(cid)
    by_round: dict[int, list] = {}
    for c in cands:
        by_round.setdefault(c.round, []).append(c)
    calls_by_round: dict[int, list] = {}
    for c in calls:
        calls_by_round.setdefault(c.round, []).append(c)
    stored = set(by_round) | set(calls_by_round)
    assert set(acknowledged) <= stored, f"lost acknowledged rounds {set(acknowledged) - stored}"
    for r in stored:
        assert sorted(c.hash for c in by_round.get(r, [])) == sorted(f"{r}-{i}" for i in range(PER_ROUND))
        assert [c.index for c in calls_by_round.get(r, [])] == list(range(PER_ROUND))
        assert all(c.score == r * 1000 + int(c.hash.split("-")[1]) for c in by_round[r])
    assert store.rounds_done(cid) == len(stored)
    assert store.evaluations_count(cid) == len(stored) * PER_ROUND
    if stored:
        assert store.latest_agent_state(cid) == (
            max(stored), {"round": max(stored), "pool": [f"{max(stored)}-{i}" for i in range(PER_ROUND)]})
    return stored


def _spawn(url: str, cid: str, n_rounds: int, mode: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(HERE / "writer_proc.py"), url, cid, str(n_rounds), str(PER_ROUND), mode],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env(),
    )


def test_sigkill_right_after_record_round_loses_nothing(store: Store, storage_url: str) -> None:
    cid = make_campaign(store)
    proc = _spawn(storage_url, cid, 4, "suicide")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, err
    acknowledged = [int(x) for x in out.split()]
    assert acknowledged == [0, 1, 2, 3]
    reopened = Store(storage_url)
    assert _assert_rounds_complete(reopened, cid, acknowledged) == {0, 1, 2, 3}
    reopened.close()


def test_sigkill_mid_write_leaves_whole_rounds_only(store: Store, storage_url: str) -> None:
    """Kill writers at random moments (often inside a transaction); then resume writing."""
    cid = make_campaign(store)
    rng = random.Random(1234)
    acknowledged: list[int] = []
    for _attempt in range(3):
        proc = _spawn(storage_url, cid, 0, "loop")
        # Let it acknowledge at least one round, then kill at a random point in the next ones.
        first = proc.stdout.readline()
        assert first.strip(), proc.stderr.read()
        acknowledged.append(int(first))
        time.sleep(rng.uniform(0.0, 0.3))
        proc.kill()
        out, _ = proc.communicate(timeout=60)
        acknowledged += [int(x) for x in out.split()]
        stored = _assert_rounds_complete(store, cid, acknowledged)
        # The writer resumes from rounds_done: numbers stay contiguous across kills.
        assert stored == set(range(len(stored)))
    if store.engine.dialect.name == "sqlite":
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"


def test_exception_mid_transaction_stores_nothing_of_the_round(store: Store) -> None:
    cid = make_campaign(store)
    before = store.get_campaign(cid).updated_at
    cands = [CandidateIn(f"h{i}", "e1", "code", valid=True, score=float(i), llm_call_index=i)
             for i in range(3)]
    calls = [LLMCallIn("p", f"r{i}") for i in range(3)]

    def fail_on_agent_state(conn, cursor, statement, params, context, executemany):
        # The agent state is the last insert of a round: fail after everything else was sent.
        if statement.lstrip().upper().startswith("INSERT INTO AGENT_STATES"):
            raise RuntimeError("disk full (injected)")

    event.listen(store.engine, "before_cursor_execute", fail_on_agent_state)
    try:
        with pytest.raises(RuntimeError, match="injected"):
            store.record_round(cid, 0, cands, calls, agent_state={"x": 1})
    finally:
        event.remove(store.engine, "before_cursor_execute", fail_on_agent_state)

    assert store.candidates(cid) == [] and store.llm_calls(cid) == []
    assert store.evaluations(cid) == [] and store.rounds_done(cid) == 0
    assert store.latest_agent_state(cid) is None
    assert store.get_campaign(cid).updated_at == before
    # Nothing half-written blocks the retry of the same round.
    store.record_round(cid, 0, cands, calls, agent_state={"x": 1})
    assert len(store.candidates(cid)) == 3 and store.latest_agent_state(cid) == (0, {"x": 1})


def test_writes_are_visible_to_a_new_process_immediately(store: Store, storage_url: str) -> None:
    cid = make_campaign(store)
    store.record_round(cid, 0, [CandidateIn("h", "seed", "c", valid=True, score=2.0)])
    code = (
        "import sys; from optiforge.platform.store import Store; "
        "s = Store(sys.argv[1]); c = s.candidates(sys.argv[2]); "
        "print(len(c), c[0].score)"
    )
    out = subprocess.run([sys.executable, "-c", code, storage_url, cid], capture_output=True,
                         text=True, env=subprocess_env(), timeout=60, check=True).stdout
    assert out.split() == ["1", "2.0"]


def test_racing_writers_of_one_round_exactly_one_wins(store: Store) -> None:
    import threading

    from optiforge.platform.store import ConflictError

    cid = make_campaign(store)
    start = threading.Barrier(6)
    outcomes: list[str] = []

    def write(i: int) -> None:
        cands = [CandidateIn(f"w{i}-{j}", "e1", "c", valid=True, score=float(j)) for j in range(5)]
        start.wait()
        try:
            store.record_round(cid, 0, cands, [], agent_state={"writer": i})
            outcomes.append(f"won {i}")
        except ConflictError:
            outcomes.append("conflict")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [o for o in outcomes if o.startswith("won")]
    assert len(winners) == 1 and outcomes.count("conflict") == 5
    w = int(winners[0].split()[1])
    # Only the winner's round is stored, whole.
    assert sorted(c.hash for c in store.candidates(cid)) == [f"w{w}-{j}" for j in range(5)]
    assert store.latest_agent_state(cid) == (0, {"writer": w})
