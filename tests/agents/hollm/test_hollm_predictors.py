import numpy as np
import pytest

from optiforge.agents.hollm.predictors import (
    ForestPredictor,
    GPPredictor,
    LLMPredictor,
    RandomPredictor,
    make_predictor,
)
from optiforge.agents.hollm.proposers import Candidate, ProposalContext


def _quadratic_ctx(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.sum((X - 0.3) ** 2, axis=1)
    return ProposalContext([f"x{i}" for i in range(d)], X, y, rng)


@pytest.mark.parametrize("predictor", [GPPredictor(), GPPredictor(max_points=20, ard=True), ForestPredictor()])
def test_surrogates_rank_candidates_by_true_value(predictor):
    ctx = _quadratic_ctx()
    cands = [Candidate(np.full(3, v), 0) for v in (0.3, 0.5, 0.7, 0.9)]
    pred = predictor.predict(cands, ctx)
    assert int(np.argmin(pred)) == 0
    assert np.argsort(pred)[-1] == 3


def test_random_predictor_is_a_permutation_free_ranking():
    ctx = _quadratic_ctx()
    cands = [Candidate(np.full(3, 0.5), 0)] * 5
    assert RandomPredictor().predict(cands, ctx).shape == (5,)


def test_llm_predictor_batches_all_candidates_in_one_prompt(scripted_llm):
    llm = scripted_llm(lambda p, c: "Predicted values: [3.0, 1.0, 2.0]")
    ctx = _quadratic_ctx(n=5)
    cands = [Candidate(np.full(3, v), 0) for v in (0.1, 0.2, 0.3)]
    pred = LLMPredictor(llm).predict(cands, ctx)
    assert pred.tolist() == [3.0, 1.0, 2.0]
    assert len(llm.calls) == 1 and llm.calls[0][0].count('"x0"') == 5 + 3


def test_llm_predictor_falls_back_to_proposer_values(scripted_llm):
    llm = scripted_llm(lambda p, c: "I think they are all good")
    ctx = _quadratic_ctx(n=5)
    cands = [Candidate(np.full(3, v), 0, predicted=p) for v, p in ((0.1, 5.0), (0.2, -1.0))]
    pred = LLMPredictor(llm, retries=1).predict(cands, ctx)
    assert pred.tolist() == [5.0, -1.0]
    assert len(llm.calls) == 2 and ctx.stats["surrogate_fallbacks"] == 1


def test_make_predictor_errors():
    with pytest.raises(ValueError, match="predictor: unknown predictor 'nn'"):
        make_predictor("nn")
    with pytest.raises(ValueError, match="llm: the 'llm' predictor needs an LLM"):
        make_predictor("llm")
