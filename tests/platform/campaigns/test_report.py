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
