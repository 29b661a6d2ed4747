"""The store's paged, sorted and owner-scoped reads (what the dashboard shows)."""

from __future__ import annotations

import pytest
from store_helpers import make_campaign

from optiforge.platform.store import CandidateIn, LLMCallIn, NotFoundError, Store


def _two_rounds(store: Store, cid: str) -> None:
    seeds = [CandidateIn(hash="s", operator="seed", code="seed", valid=True, score=5.0)]
    store.record_round(cid, 0, seeds)
    calls = [LLMCallIn(prompt=f"p{i}", response=f"r{i}", prompt_tokens=i, completion_tokens=2 * i)
             for i in range(3)]
    cands = [CandidateIn(hash="a", operator="e1", code="a", parents=["s"], valid=True, score=2.0,
                         llm_call_index=0),
             CandidateIn(hash="", operator="e1", code=None, error="no program", llm_call_index=1),
             CandidateIn(hash="b", operator="e2", code="b", parents=["a"], valid=True, score=3.0,
                         llm_call_index=2)]
    store.record_round(cid, 1, cands, calls)


def test_candidates_are_numbered_within_their_campaign_and_page(store: Store) -> None:
    other = make_campaign(store)
    _two_rounds(store, other)  # interleaved row ids must not shift this campaign's numbers
    cid = make_campaign(store)
    _two_rounds(store, cid)
    assert [c.number for c in store.candidates(cid)] == [0, 1, 2, 3]
    assert [c.hash for c in store.candidates(cid, order="score")] == ["a", "b", "s", ""]
    assert [c.hash for c in store.candidates(cid, order="-score")] == ["s", "b", "a", ""]
    assert [c.number for c in store.candidates(cid, order="-number", limit=2, offset=1)] == [2, 1]
    assert [c.number for c in store.candidates(cid, valid=False)] == [2]
    assert store.count_candidates(cid) == 4
    assert store.count_candidates(cid, exclude_operator="seed") == 3
    assert store.count_candidates(cid, exclude_operator=("seed", "e2")) == 2  # e.g. seed and tune
    assert store.count_candidates(cid, valid=False) == 1
    c = store.get_candidate(cid, 3)
    assert (c.hash, c.number, c.round, c.llm_call_index) == ("b", 3, 1, 2)
    assert store.first_candidate_with_hash(cid, "a").number == 1
    assert store.first_candidate_with_hash(cid, "zzz") is None
    call = store.get_llm_call(cid, c.round, c.llm_call_index)
    assert (call.prompt, call.response, call.completion_tokens) == ("p2", "r2", 4)
    for bad in (lambda: store.get_candidate(cid, 4), lambda: store.get_candidate(cid, 2**40),
                lambda: store.get_llm_call(cid, 1, 3)):
        with pytest.raises(NotFoundError):
            bad()
    with pytest.raises(ValueError, match="order"):
        store.candidates(cid, order="code")


def test_campaigns_are_scoped_to_their_owner(store: Store) -> None:
    alice, bob = "alice", "bob"
    mine = [make_campaign(store, owner=alice) for _ in range(3)]
    theirs = make_campaign(store, owner=bob)
    assert store.get_campaign(theirs).owner == bob
    assert [c.id for c in store.list_campaigns(alice)] == mine[::-1]
    assert [c.id for c in store.list_campaigns(alice, limit=2, offset=1)] == mine[::-1][1:]
    assert store.count_campaigns(alice) == 3
    with pytest.raises(NotFoundError) as err:
        store.get_campaign(theirs, owner=alice)
    with pytest.raises(NotFoundError) as missing:
        store.get_campaign("000000000000", owner=alice)
    assert str(err.value).replace(theirs, "X") == str(missing.value).replace("000000000000", "X")


def test_trials_sort_by_value_and_count(store: Store) -> None:
    sid = store.create_study("o", {"x": {"type": "float", "low": 0, "high": 1}})
    for v in (0.5, 0.1, 0.9):
        store.add_trial(sid, {"x": v}, v)
    store.add_trial(sid, {"x": 0.3}, None, "failed")
    store.create_trials(sid, [{"x": 0.2}])
    assert [t.value for t in store.trials(sid, order="value")] == [0.1, 0.5, 0.9, None, None]
    assert [t.value for t in store.trials(sid, order="-value", limit=2)] == [0.9, 0.5]
    assert [t.number for t in store.trials(sid, order="-number", limit=2)] == [4, 3]
    assert store.count_trials(sid) == 5
    assert store.count_trials(sid, ["complete"]) == 3
