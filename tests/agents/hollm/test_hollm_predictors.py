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


def test_random_predictor_ranks_uniformly_at_random_from_the_context_rng():
    # The ablation without a surrogate: every ranking equally likely, whatever the candidates
    # and the data say, and reproducible from the context's generator.
    cands = [Candidate(np.full(3, v), 0) for v in (0.3, 0.5, 0.7, 0.9, 0.9)]
    first = RandomPredictor().predict(cands, _quadratic_ctx(seed=4))
    assert first.shape == (5,) and len(set(first.tolist())) == 5
    assert np.array_equal(first, RandomPredictor().predict(cands, _quadratic_ctx(seed=4)))
    ctx = _quadratic_ctx(seed=5)
    best = np.array([int(np.argmin(RandomPredictor().predict(cands, ctx))) for _ in range(5000)])
    # Each candidate is predicted best ~1/5 of the time (binomial sd ~0.006), the true best
    # (0.3, at the optimum) included, and successive calls differ.
    assert np.allclose(np.bincount(best, minlength=5) / 5000, 0.2, atol=0.03)
    assert len(set(best[:20].tolist())) > 1


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
