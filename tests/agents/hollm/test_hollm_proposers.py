import json
import re

import numpy as np
import pytest

from optiforge.agents.hollm.partition import Region
from optiforge.agents.hollm.proposers import (
    GaussianProposer,
    LLMProposer,
    ProposalContext,
    SobolProposer,
    make_proposer,
)

NAMES = ["a", "b"]


def _ctx(seed=0):
    X = np.array([[0.1, 0.1], [0.2, 0.8], [0.7, 0.3]])
    return ProposalContext(NAMES, X, np.array([3.0, 1.0, 2.0]), np.random.default_rng(seed))


REGIONS = [Region(np.array([0.0, 0.0]), np.array([0.5, 1.0]), np.array([0, 1])),
           Region(np.array([0.5, 0.0]), np.array([1.0, 1.0]), np.array([2]))]


@pytest.mark.parametrize("proposer", [SobolProposer(), GaussianProposer(0.3)])
def test_non_llm_proposers_stay_inside_their_region(proposer):
    out = proposer.propose(REGIONS, 7, _ctx())
    assert [len(g) for g in out] == [7, 7]
    for i, group in enumerate(out):
        for c in group:
            assert c.region == i and REGIONS[i].contains(c.u, tol=0.0)[0]
    assert len({tuple(c.u) for c in out[0]}) == 7


def test_gaussian_centres_on_the_regions_best_point():
    out = GaussianProposer(0.05).propose(REGIONS, 50, _ctx())
    centre = np.mean([c.u for c in out[0]], axis=0)
    assert np.allclose(centre, [0.2, 0.8], atol=0.05)  # point 1 (value 1.0) is region 0's best


def _ranges(prompt):
    return {n: (float(lo), float(hi)) for n, lo, hi in re.findall(r"- (\w+): \[([\d.]+), ([\d.]+)\]", prompt)}


def test_llm_proposer_one_batched_call_and_filters(scripted_llm):
    def respond(prompt, call):
        r = _ranges(prompt)
        (alo, ahi), (blo, bhi) = r["a"], r["b"]
        mid = {"a": (alo + ahi) / 2, "b": (blo + bhi) / 2, "value": 0.5}
        outside = {"a": ahi + 0.2, "b": blo, "value": 0.1}
        observed = {"a": 0.2, "b": 0.8, "value": 1.0}
        return "Here you go:\n" + json.dumps([mid, mid, outside, observed, {"a": alo, "b": bhi}])

    llm = scripted_llm(respond)
    ctx = _ctx()
    out = LLMProposer(llm, retries=0).propose(REGIONS, 3, ctx)
    assert len(llm.calls) == 1 and len(llm.calls[0]) == 2  # both regions in one batch
    assert "a: [0.0, 0.5]" in llm.calls[0][0] and "a: [0.5, 1.0]" in llm.calls[0][1]
    assert '"value":1.0' in llm.calls[0][0]  # evaluated points are in the prompt
    for i, group in enumerate(out):
        # midpoint kept once (duplicate dropped), outside dropped, observed point dropped.
        assert all(REGIONS[i].contains(c.u, tol=0.0)[0] for c in group)
        assert len({tuple(c.u) for c in group}) == len(group)
    assert [c.predicted for c in out[0]][0] == 0.5
    assert ctx.stats["llm_outside_region"] >= 1 and ctx.stats["llm_duplicates"] >= 2


def test_llm_proposer_retries_only_short_regions(scripted_llm):
    def respond(prompt, call):
        r = _ranges(prompt)
        if call == 0 and r["a"][0] == 0.0:
            return "sorry, I don't know"
        n = int(re.search(r"Suggest (\d+)", prompt).group(1))
        lo, hi = r["a"]
        return json.dumps([{"a": lo + (hi - lo) * (j + 1) / (n + 2), "b": 0.5} for j in range(n)])

    llm = scripted_llm(respond)
    ctx = _ctx()
    out = LLMProposer(llm, retries=2).propose(REGIONS, 2, ctx)
    assert [len(g) for g in out] == [2, 2]
    assert [len(c) for c in llm.calls] == [2, 1]
    assert ctx.stats["llm_unparsable"] == 1


def test_llm_proposer_gives_up_after_retries(scripted_llm):
    llm = scripted_llm(lambda p, c: "nothing useful")
    out = LLMProposer(llm, retries=1).propose(REGIONS, 2, _ctx())
    assert out == [[], []] and len(llm.calls) == 2


def test_make_proposer_errors():
    with pytest.raises(ValueError, match="proposer: unknown proposer 'bayes'"):
        make_proposer("bayes")
    with pytest.raises(ValueError, match="llm: the 'llm' proposer needs an LLM"):
        make_proposer("llm", None)
