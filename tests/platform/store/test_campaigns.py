"""Campaigns, rounds, candidates, evaluations, LLM calls and agent states."""

from __future__ import annotations

import datetime as dt

import pytest
from store_helpers import make_campaign

from optiforge.platform.store import (
    CandidateIn,
    ConflictError,
    LLMCallIn,
    NotFoundError,
    Store,
)


def _round(n_calls: int = 2, scores=(3.0, 1.0), prefix: str = "h") -> tuple[list, list]:
    calls = [LLMCallIn(prompt=f"prompt {i}", response=f"resp {i}", prompt_tokens=10 + i,
                       completion_tokens=20 + i, model="smollm2", operator="e1", reward=0.5 * i)
             for i in range(n_calls)]
    cands = [CandidateIn(hash=f"{prefix}{i}", operator="e1", code=f"def priority(): return {i}",
                         idea=f"idea {i}", parents=["p0", "p1"], valid=True, score=s,
                         metrics={"bins": 10 + i, "gap": s}, runtime_s=0.25, reward=0.1 * i,
                         llm_call_index=i % n_calls if n_calls else None)
             for i, s in enumerate(scores)]
    return cands, calls


def test_campaign_round_trip(store: Store) -> None:
    cid = make_campaign(store, name="first")
    assert len(cid) == 12 and int(cid, 16) >= 0
    c = store.get_campaign(cid)
    assert (c.id, c.name, c.task, c.agent, c.llm, c.budget, c.seed, c.executor) == (
        cid, "first", "binpacking", "evolution", "smollm2", 20, 7, "local")
    assert c.config == {"agent": {"samples_per_prompt": 4}}
    assert c.status == "created" and c.finished_at is None
    assert c.created_at.tzinfo is not None
    assert abs(c.created_at - dt.datetime.now(dt.timezone.utc)) < dt.timedelta(minutes=1)


def test_list_campaigns_newest_first(store: Store) -> None:
    ids = [make_campaign(store) for _ in range(3)]
    listed = [c.id for c in store.list_campaigns() if c.id in ids]
    assert listed == ids[::-1]


def test_status_transitions_set_and_clear_finished_at(store: Store) -> None:
    cid = make_campaign(store)
    assert store.set_campaign_status(cid, "running").finished_at is None
    done = store.set_campaign_status(cid, "finished")
    assert done.status == "finished" and done.finished_at is not None
    again = store.set_campaign_status(cid, "running")
    assert again.finished_at is None and store.get_campaign(cid).status == "running"
    with pytest.raises(ValueError, match="status"):
        store.set_campaign_status(cid, "paused")


def test_record_round_stores_everything_linked(store: Store) -> None:
    cid = make_campaign(store)
    cands, calls = _round()
    store.record_round(cid, round=0, candidates=cands, llm_calls=calls, agent_state={"pool": [1, 2]})

    got = store.candidates(cid)
    assert [c.hash for c in got] == ["h0", "h1"]
    for c, given in zip(got, cands, strict=True):
        assert (c.operator, c.code, c.idea, c.split, c.valid, c.score, c.metrics, c.runtime_s,
                c.reward, c.llm_call_index, c.round) == (
            given.operator, given.code, given.idea, "train", True, given.score, given.metrics,
            given.runtime_s, given.reward, given.llm_call_index, 0)
        assert c.parents == ("p0", "p1")
    stored_calls = store.llm_calls(cid)
    assert [(x.index, x.prompt, x.response, x.prompt_tokens, x.completion_tokens, x.reward)
            for x in stored_calls] == [(0, "prompt 0", "resp 0", 10, 20, 0.0),
                                       (1, "prompt 1", "resp 1", 11, 21, 0.5)]
    # Each candidate points at the call it was parsed from.
    assert [c.llm_call_id for c in got] == [x.id for x in stored_calls]
    # ...and at its own row in the one evaluations table.
    evs = {e.id: e for e in store.evaluations(cid)}
    assert {c.evaluation_id for c in got} == set(evs)
    assert all(evs[c.evaluation_id].candidate_hash == c.hash for c in got)
    assert store.latest_agent_state(cid) == (0, {"pool": [1, 2]})
    assert store.rounds_done(cid) == 1 and store.evaluations_count(cid) == 2


def test_rounds_and_latest_state(store: Store) -> None:
    cid = make_campaign(store)
    assert store.latest_agent_state(cid) is None and store.rounds_done(cid) == 0
    for r in range(3):
        cands, calls = _round(prefix=f"r{r}-")
        store.record_round(cid, r, cands, calls, agent_state={"round": r})
    # A round without a state keeps the previous one as the latest.
    store.record_round(cid, 3, [], [], agent_state=None)
    assert store.rounds_done(cid) == 4
    assert store.latest_agent_state(cid) == (2, {"round": 2})


def test_round_recorded_twice_conflicts_and_keeps_first(store: Store) -> None:
    cid = make_campaign(store)
    cands, calls = _round()
    store.record_round(cid, 0, cands, calls, {"v": 1})
    with pytest.raises(ConflictError, match="round"):
        store.record_round(cid, 0, cands, calls, {"v": 2})
    assert len(store.candidates(cid)) == 2 and len(store.llm_calls(cid)) == 2
    assert store.latest_agent_state(cid) == (0, {"v": 1})


def test_filters_and_best_candidates_distinct(store: Store) -> None:
    cid = make_campaign(store)
    store.record_round(cid, 0, [
        CandidateIn("a", "seed", "A", valid=True, score=5.0),
        CandidateIn("b", "seed", "B", valid=True, score=2.0),
        CandidateIn("bad", "seed", "X", valid=False, error="SyntaxError"),
    ])
    store.record_round(cid, 1, [
        CandidateIn("b", "e1", "B", valid=True, score=2.0),  # duplicate program
        CandidateIn("c", "e1", "C", valid=True, score=3.0),
        CandidateIn("v", "e1", "V", split="validation", valid=True, score=0.1),
    ])
    assert [c.hash for c in store.best_candidates(cid, k=10)] == ["b", "c", "a"]
    best = store.best_candidates(cid, k=1)
    assert best[0].hash == "b" and best[0].round == 0  # earliest of the equal duplicates
    assert [c.hash for c in store.best_candidates(cid, k=5, split="validation")] == ["v"]
    assert [c.hash for c in store.candidates(cid, valid=False)] == ["bad"]
    assert store.candidates(cid, valid=False)[0].error == "SyntaxError"
    assert len(store.candidates(cid, split="train")) == 5
    assert store.best_candidates(cid, k=3, split="test") == []


def test_add_evaluation_for_test_split(store: Store) -> None:
    cid = make_campaign(store)
    store.record_round(cid, 0, [CandidateIn("a", "seed", "A", valid=True, score=5.0)])
    e = store.add_evaluation(cid, "a", "test", True, 4.5, {"bins": 3}, None, 0.7)
    store.add_evaluation(cid, "baseline:best_fit", "test", True, 4.9, {}, None, 0.5)
    store.add_evaluation(cid, "broken", "test", False, None, {}, "timeout", 2.0)
    tests = store.evaluations(cid, split="test")
    assert [(x.candidate_hash, x.valid, x.score, x.error) for x in tests] == [
        ("a", True, 4.5, None), ("baseline:best_fit", True, 4.9, None),
        ("broken", False, None, "timeout")]
    assert tests[0] == e
    # Test-split evaluations do not change what the candidate's own (train) record says.
    assert store.candidates(cid)[0].score == 5.0
    assert store.evaluations_count(cid) == 4


def test_campaigns_are_isolated(store: Store) -> None:
    a, b = make_campaign(store), make_campaign(store)
    store.record_round(a, 0, [CandidateIn("x", "seed", "X", valid=True, score=1.0)],
                       agent_state={"a": 1})
    assert store.candidates(b) == [] and store.latest_agent_state(b) is None
    assert store.rounds_done(b) == 0
    store.record_round(b, 0, [])  # same round number, other campaign: no conflict


def test_stored_values_are_copies(store: Store) -> None:
    config = {"agent": {"k": [1, 2]}}
    cid = make_campaign(store, config=config)
    config["agent"]["k"].append(3)
    assert store.get_campaign(cid).config == {"agent": {"k": [1, 2]}}


def test_numpy_values_are_accepted() -> None:
    np = pytest.importorskip("numpy")
    s = Store("sqlite://")
    cid = make_campaign(s, seed=np.int64(3))
    s.record_round(cid, np.int64(0), [CandidateIn("a", "seed", "A", valid=np.bool_(True),
                                                  score=np.float32(1.5),
                                                  metrics={"n": np.int64(4), "g": np.float64(0.5)})])
    c = s.candidates(cid)[0]
    assert (c.valid, c.score, c.metrics) == (True, 1.5, {"n": 4, "g": 0.5})
    assert type(c.metrics["n"]) is int


def test_in_memory_store_is_usable_from_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    s = Store("sqlite://")
    cid = make_campaign(s)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda r: s.record_round(cid, r, [CandidateIn(f"h{r}", "e1", "c")]),
                      range(20)))
    assert s.rounds_done(cid) == 20


# ------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("overrides", "exc", "arg"),
    [
        ({"budget": 0}, ValueError, "budget"),
        ({"budget": 2.5}, TypeError, "budget"),
        ({"budget": True}, TypeError, "budget"),
        ({"task": ""}, ValueError, "task"),
        ({"task": 3}, TypeError, "task"),
        ({"seed": "1"}, TypeError, "seed"),
        ({"seed": 2**70}, ValueError, "seed"),
        ({"config": [1]}, TypeError, "config"),
        ({"config": {"x": float("nan")}}, ValueError, "config"),
        ({"config": {1: "a"}}, TypeError, "config"),
        ({"config": {"f": object()}}, TypeError, "config"),
    ],
)
def test_create_campaign_bad_input(store: Store, overrides, exc, arg) -> None:
    with pytest.raises(exc, match=arg):
        make_campaign(store, **overrides)


def test_unknown_campaign_is_not_found(store: Store) -> None:
    for call in (
        lambda: store.get_campaign("000000000000"),
        lambda: store.candidates("000000000000"),
        lambda: store.best_candidates("000000000000"),
        lambda: store.record_round("000000000000", 0, []),
        lambda: store.add_evaluation("000000000000", "h", "test", False, None),
        lambda: store.latest_agent_state("000000000000"),
        lambda: store.rounds_done("000000000000"),
        lambda: store.set_campaign_status("000000000000", "running"),
        lambda: store.artifacts("000000000000"),
    ):
        with pytest.raises(NotFoundError, match="campaign_id"):
            call()
    with pytest.raises(TypeError, match="campaign_id"):
        store.get_campaign(42)
    assert issubclass(NotFoundError, ValueError) and issubclass(ConflictError, ValueError)


@pytest.mark.parametrize(
    ("kwargs", "exc", "arg"),
    [
        ({"round": -1}, ValueError, "round"),
        ({"round": "0"}, TypeError, "round"),
        ({"candidates": [("h", "op", "code")]}, TypeError, r"candidates\[0\]"),
        ({"candidates": [CandidateIn("h", "op", "c", valid=True)]}, ValueError, r"candidates\[0\]\.score"),
        ({"candidates": [CandidateIn("h", "op", "c", valid=True, score=float("inf"))]}, ValueError,
         r"candidates\[0\]\.score"),
        ({"candidates": [CandidateIn("h", "op", "c", llm_call_index=1)]}, ValueError,
         r"candidates\[0\]\.llm_call_index"),
        ({"candidates": [CandidateIn("h", "op", "c", metrics={"x": float("nan")})]}, ValueError,
         r"candidates\[0\]\.metrics"),
        ({"candidates": [CandidateIn("h", "op", "c", parents="abc")]}, TypeError,
         r"candidates\[0\]\.parents"),
        ({"candidates": [CandidateIn("h", "op", "c", runtime_s=-1.0)]}, ValueError,
         r"candidates\[0\]\.runtime_s"),
        ({"llm_calls": [LLMCallIn("p", "r", prompt_tokens=-1)]}, ValueError,
         r"llm_calls\[0\]\.prompt_tokens"),
        ({"llm_calls": "abc"}, TypeError, "llm_calls"),
        ({"agent_state": [1, 2]}, TypeError, "agent_state"),
    ],
)
def test_record_round_bad_input_stores_nothing(store: Store, kwargs, exc, arg) -> None:
    cid = make_campaign(store)
    call = {"round": 0, "candidates": [], "llm_calls": [LLMCallIn("p", "r")], "agent_state": None}
    call.update(kwargs)
    with pytest.raises(exc, match=arg):
        store.record_round(cid, **call)
    assert store.rounds_done(cid) == 0 and store.candidates(cid) == [] and store.llm_calls(cid) == []


def test_best_candidates_bad_k(store: Store) -> None:
    cid = make_campaign(store)
    with pytest.raises(ValueError, match="k"):
        store.best_candidates(cid, k=0)


@pytest.mark.parametrize("attempt", [1, 2])
def test_each_test_gets_its_own_database(store: Store, attempt: int) -> None:
    # storage_url hands every test a fresh database: the other attempt's campaign is not here.
    assert store.list_campaigns() == []
    make_campaign(store, name=f"attempt {attempt}")
    assert [c.name for c in store.list_campaigns()] == [f"attempt {attempt}"]
