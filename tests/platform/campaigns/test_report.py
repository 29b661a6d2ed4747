"""The campaign report's verdict: a discovery is a generated program better on held-out data."""

from __future__ import annotations

import json

from optiforge.platform.campaigns import CampaignReport, report_to_json


def _report(operator: str | None, best_test: float | None, base_test: float | None) -> CampaignReport:
    return CampaignReport(campaign_id="c", task="binpacking", generated=16, best_code="...",
                          best_idea=None, best_train_score=4.0, best_test_score=best_test,
                          baseline="best_fit", baseline_test_score=base_test, best_operator=operator)


def test_the_seed_is_never_a_discovery():
    r = _report("seed", 4.961, 4.961)
    assert not r.discovered
    assert r.verdict().startswith("no discovery") and "4.961" in r.verdict()
    assert json.loads(report_to_json(r))["discovered"] is False


def test_a_generated_program_better_on_test_is_a_discovery_with_both_figures():
    r = _report("tune", 4.5, 4.961)
    assert r.discovered
    v = r.verdict()
    assert v.startswith("discovery") and "4.500" in v and "4.961" in v and "best_fit" in v
    assert json.loads(report_to_json(r))["discovered"] is True


def test_better_on_train_but_not_on_test_is_said_plainly():
    r = _report("injection", 5.2, 4.961)
    assert not r.discovered
    assert r.verdict().startswith("no discovery") and "5.200" in r.verdict()
    missing = _report("injection", None, 4.961)
    assert not missing.discovered and missing.verdict().startswith("no verdict")


def test_a_discovery_no_llm_wrote_says_so():
    grafted, written = _report("graft", 4.5, 4.961).verdict(), _report("injection", 4.5, 4.961).verdict()
    assert grafted.startswith("discovery") and "not written by the LLM" in grafted
    assert "HOLLM" in _report("tune", 4.5, 4.961).verdict()
    assert "not written by the LLM" not in written and "HOLLM" not in written


def test_a_tuned_child_of_an_llm_program_is_credited_to_the_llm():
    r = _report("tune", 4.5, 4.961)
    r.llm_ancestor = "injection"
    v = r.verdict()
    assert v.startswith("discovery") and "on a program the LLM wrote (injection)" in v
    assert r.llm_discovered and json.loads(report_to_json(r))["llm_discovered"] is True
    unowned = _report("tune", 4.5, 4.961)
    assert not unowned.llm_discovered and "no LLM-written program in its lineage" in unowned.verdict()
    written = _report("crossover", 4.5, 4.961)
    written.llm_ancestor = "crossover"
    assert "crossover, written by the LLM" in written.verdict() and written.llm_discovered


def test_lineage_through_tunes_and_grafts_finds_the_llm_or_nothing(tmp_path):
    from optiforge.platform.campaigns.summary import llm_ancestor
    from optiforge.platform.store import CandidateIn, Store

    store = Store(f"sqlite:///{tmp_path / 'o.db'}")
    cid = store.create_campaign(task="binpacking", agent="evolution", llm="smollm2", budget=8, seed=0,
                                executor="local", config={})
    store.record_round(cid, 0, [CandidateIn("s", "seed", "S", valid=True, score=5.0)])
    store.record_round(cid, 1, [
        CandidateIn("g", "graft", "G", parents=["s"], valid=True, score=4.8),
        CandidateIn("copy", "injection", "S", parents=["s"], valid=True, score=5.0),
    ])
    store.record_round(cid, 2, [
        CandidateIn("gt", "tune", "GT", parents=["g"], valid=True, score=4.7),
        CandidateIn("l", "replacement", "L", parents=["s"], valid=True, score=4.6),
    ])
    store.record_round(cid, 3, [CandidateIn("lgt", "tune", "LGT", parents=["lg"], valid=True, score=4.4),
                                CandidateIn("lg", "graft", "LG", parents=["l"], valid=True, score=4.5)])
    by_hash = {c.hash: c for c in store.candidates(cid)}
    assert llm_ancestor(store, cid, by_hash["gt"]) is None  # tune of a graft of a seed
    assert llm_ancestor(store, cid, by_hash["s"]) is None
    assert llm_ancestor(store, cid, by_hash["lgt"]) == "replacement"  # tune <- graft <- LLM
    assert llm_ancestor(store, cid, by_hash["l"]) == "replacement"
