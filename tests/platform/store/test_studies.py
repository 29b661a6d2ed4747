"""Studies and trials: ownership, trial life cycle, atomic numbering under concurrency."""

from __future__ import annotations

import random
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from store_helpers import create_trials_worker, run_at_once

from optiforge.platform.store import ConflictError, NotFoundError, Store

SPACE = {"x": {"type": "float", "low": -5.0, "high": 10.0, "log": False},
         "opt": {"type": "categorical", "choices": ["adam", "sgd"]}}


def _study(store: Store, owner: str = "alice", **kw) -> str:
    return store.create_study(owner, SPACE, kw.pop("direction", "minimize"), "hollm",
                              {"proposer": "sobol", "m": 4}, **kw)


def test_study_round_trip_and_ownership(store: Store) -> None:
    sid = _study(store, name="tune")
    s = store.get_study(sid)
    assert (s.id, s.owner, s.name, s.space, s.direction, s.agent, s.agent_options, s.n_trials) == (
        sid, "alice", "tune", SPACE, "minimize", "hollm", {"proposer": "sobol", "m": 4}, 0)
    assert store.get_study(sid, owner="alice") == s
    with pytest.raises(NotFoundError) as other:
        store.get_study(sid, owner="mallory")
    with pytest.raises(NotFoundError) as missing:
        store.get_study("ffffffffffff", owner="mallory")
    # Someone else's study is indistinguishable from a missing one (apart from the id echoed).
    assert str(other.value).replace(sid, "ID") == str(missing.value).replace("ffffffffffff", "ID")


def test_list_studies_by_owner_newest_first(store: Store) -> None:
    alice, bob = f"alice-{uuid.uuid4().hex}", f"bob-{uuid.uuid4().hex}"  # PG db is shared
    a1, b1, a2 = _study(store, alice), _study(store, bob), _study(store, alice)
    assert [s.id for s in store.list_studies(alice)] == [a2, a1]
    assert [s.id for s in store.list_studies(bob)] == [b1]
    every = [s.id for s in store.list_studies()]
    assert {a1, b1, a2} <= set(every)


def test_trial_life_cycle(store: Store) -> None:
    sid = _study(store)
    t0, t1, t2 = store.create_trials(sid, [{"x": 1.0, "opt": "adam"}, {"x": 2.0, "opt": "sgd"},
                                           {"x": 3.0, "opt": "adam"}])
    assert [t.number for t in (t0, t1, t2)] == [0, 1, 2]
    assert all(t.state == "running" and t.value is None and t.finished_at is None for t in (t0, t1))
    done = store.finish_trial(sid, t0.number, 0.25, "complete")
    assert (done.state, done.value, done.params) == ("complete", 0.25, {"x": 1.0, "opt": "adam"})
    assert done.finished_at is not None and done.finished_at >= done.created_at
    failed = store.finish_trial(sid, t1.number, None, "failed")
    assert (failed.state, failed.value) == ("failed", None)
    ext = store.add_trial(sid, {"x": 9.0, "opt": "sgd"}, -1.5)
    assert (ext.number, ext.state, ext.value) == (3, "complete", -1.5)
    assert [t.number for t in store.trials(sid, states=["running"])] == [2]
    assert [t.number for t in store.trials(sid, states=["complete", "failed"])] == [0, 1, 3]
    assert [t.number for t in store.trials(sid)] == [0, 1, 2, 3]
    assert store.get_study(sid).n_trials == 4
    assert store.get_trial(sid, t0.number) == done
    with pytest.raises(NotFoundError, match="trial_id"):
        store.get_trial(_study(store), t0.number)


def test_finishing_twice_conflicts_and_keeps_first_value(store: Store) -> None:
    sid = _study(store)
    (t,) = store.create_trials(sid, [{"x": 0.0, "opt": "adam"}])
    store.finish_trial(sid, t.number, 1.0)
    with pytest.raises(ConflictError, match="trial_id"):
        store.finish_trial(sid, t.number, 2.0)
    with pytest.raises(ConflictError):
        store.finish_trial(sid, t.number, None, "failed")
    assert store.trials(sid)[0].value == 1.0


def test_unknown_or_foreign_trial_is_not_found(store: Store) -> None:
    sid, other = _study(store), _study(store)
    (t,) = store.create_trials(other, [{"x": 0.0, "opt": "adam"}])
    with pytest.raises(NotFoundError, match="trial_id"):
        store.finish_trial(sid, t.number, 1.0)  # exists, but in another study
    with pytest.raises(NotFoundError, match="trial_id"):
        store.finish_trial(sid, 10**9, 1.0)
    with pytest.raises(NotFoundError, match="study_id"):
        store.create_trials("ffffffffffff", [{"x": 1}])
    with pytest.raises(NotFoundError, match="study_id"):
        store.create_trials("ffffffffffff", [])
    with pytest.raises(NotFoundError, match="study_id"):
        store.trials("ffffffffffff")
    with pytest.raises(NotFoundError, match="study_id"):
        store.add_trial("ffffffffffff", {"x": 1}, 1.0)
    assert store.trials(other)[0].state == "running"


@pytest.mark.parametrize(
    ("call", "exc", "arg"),
    [
        (lambda s, sid: s.create_study("", SPACE), ValueError, "owner"),
        (lambda s, sid: s.create_study("a", {}), ValueError, "space"),
        (lambda s, sid: s.create_study("a", [1]), TypeError, "space"),
        (lambda s, sid: s.create_study("a", SPACE, "minimise"), ValueError, "direction"),
        (lambda s, sid: s.create_study("a", SPACE, agent_options="x"), TypeError, "agent_options"),
        (lambda s, sid: s.create_trials(sid, {"x": 1}), TypeError, "params_list"),
        (lambda s, sid: s.create_trials(sid, [{"x": 1}, 3]), TypeError, r"params_list\[1\]"),
        (lambda s, sid: s.create_trials(sid, [{"x": float("nan")}]), ValueError, r"params_list\[0\]"),
        (lambda s, sid: s.create_trials(sid, [{"x": 1}], state="complete"), ValueError, "state"),
        (lambda s, sid: s.finish_trial(sid, 1, None, "complete"), ValueError, "value"),
        (lambda s, sid: s.finish_trial(sid, 1, float("inf")), ValueError, "value"),
        (lambda s, sid: s.finish_trial(sid, 1, "1.0"), TypeError, "value"),
        (lambda s, sid: s.finish_trial(sid, "1", 1.0), TypeError, "trial_id"),
        (lambda s, sid: s.finish_trial(sid, 1, 1.0, "running"), ValueError, "state"),
        (lambda s, sid: s.add_trial(sid, {"x": 1}, None), ValueError, "value"),
        (lambda s, sid: s.trials(sid, states=["done"]), ValueError, "states"),
        (lambda s, sid: s.get_study(7), TypeError, "study_id"),
    ],
)
def test_study_bad_input(store: Store, call, exc, arg) -> None:
    sid = _study(store)
    with pytest.raises(exc, match=arg):
        call(store, sid)
    assert store.get_study(sid).n_trials == 0


def _check_numbering(store: Store, sid: str, per_worker: dict[int, list[int]]) -> None:
    returned = sorted(n for nums in per_worker.values() for n in nums)
    stored = store.trials(sid)
    assert returned == list(range(len(returned))), "numbers must be 0..N-1 exactly once"
    assert [t.number for t in stored] == returned
    assert store.get_study(sid).n_trials == len(returned)
    # Each worker's batch got a contiguous block, and params landed with their numbers.
    for t in stored:
        assert t.number in per_worker[t.params["worker"]]


def test_concurrent_threads_number_trials_without_gaps_or_duplicates(store: Store) -> None:
    sid = _study(store)
    rng = random.Random(0)
    plans = {w: [rng.randint(1, 3) for _ in range(12)] for w in range(8)}
    start = threading.Barrier(8)

    def work(w: int) -> list[int]:
        start.wait()
        out = []
        for j, size in enumerate(plans[w]):
            trials = store.create_trials(sid, [{"worker": w, "batch": j, "k": k} for k in range(size)])
            assert [t.number for t in trials] == list(range(trials[0].number, trials[0].number + size))
            out += [t.number for t in trials]
        return out

    with ThreadPoolExecutor(8) as pool:
        results = dict(zip(plans, pool.map(work, plans), strict=True))
    _check_numbering(store, sid, results)
    assert len(store.trials(sid)) == sum(map(sum, plans.values()))


def test_concurrent_processes_number_trials_without_gaps_or_duplicates(store: Store, storage_url: str) -> None:
    sid = _study(store)
    rng = random.Random(1)
    plans = {w: [rng.randint(1, 3) for _ in range(10)] for w in range(8)}
    reports, exitcodes = run_at_once(create_trials_worker,
                                     [(storage_url, sid, w, plans[w]) for w in plans], timeout=180)
    got = dict(reports)
    assert exitcodes == [0] * len(plans)
    errors = {w: r for w, r in got.items() if isinstance(r, str)}
    assert not errors, errors
    _check_numbering(store, sid, got)
    assert len(store.trials(sid)) == sum(map(sum, plans.values()))


def test_concurrent_tells_of_one_trial_exactly_one_wins(store: Store) -> None:
    sid = _study(store)
    (t,) = store.create_trials(sid, [{"x": 0.0, "opt": "adam"}])
    start = threading.Barrier(8)

    def tell(i: int) -> str:
        start.wait()
        try:
            store.finish_trial(sid, t.number, float(i))
            return "won"
        except ConflictError:
            return "conflict"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(tell, range(8)))
    assert outcomes.count("won") == 1 and outcomes.count("conflict") == 7
    final = store.trials(sid)[0]
    assert final.state == "complete" and final.value == float(outcomes.index("won"))
