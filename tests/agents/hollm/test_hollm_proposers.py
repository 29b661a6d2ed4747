import functools
import json
import re

import numpy as np
import pytest

from optiforge.agents.hollm.partition import Region
from optiforge.agents.hollm.proposers import (
    CMAProposer,
    GaussianProposer,
    LLMProposer,
    MixtureProposer,
    ProposalContext,
    SobolProposer,
    ThompsonGPProposer,
    make_proposer,
)

NAMES = ["a", "b"]


def _ctx(seed=0):
    X = np.array([[0.1, 0.1], [0.2, 0.8], [0.7, 0.3]])
    return ProposalContext(NAMES, X, np.array([3.0, 1.0, 2.0]), np.random.default_rng(seed))


REGIONS = [
    Region(np.array([0.0, 0.0]), np.array([0.5, 1.0]), np.array([0, 1])),
    Region(np.array([0.5, 0.0]), np.array([1.0, 1.0]), np.array([2])),
]


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
    return {
        n: (float(lo), float(hi))
        for n, lo, hi in re.findall(r"- (\w+): \[([\d.]+), ([\d.]+)\]", prompt)
    }


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
    assert "\n0.200,0.800,1\n" in llm.calls[0][0]  # evaluated points are in the prompt (a,b,value)
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


class _ConstrainedScriptedLLM:
    """An LLM that decodes under the constraints it is given: each answer walks its language,
    taking a random allowed character at each step (what sampling under a mask does)."""

    supports_constraints = True

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], list]] = []

    def generate(self, prompts, n=1, *, max_new_tokens=256, temperature=0.8, top_p=1.0, seed=None,
                 system=None, constraints=None):
        from optiforge.types import Completion

        self.calls.append((list(prompts), list(constraints)))
        rng = np.random.default_rng(seed)
        out = []
        for lang in constraints:
            state, text = lang.start(), ""
            while not lang.accepts(state):
                options = [(ch, s) for ch in lang.alphabet if (s := lang.advance(state, ch)) is not None]
                ch, state = options[rng.integers(len(options))]
                text += ch
            out.append([Completion(text, finish_reason="stop")] * n)
        return out


def test_llm_proposer_decodes_under_the_region_constraint():
    llm = _ConstrainedScriptedLLM()
    ctx = _ctx()
    proposer = LLMProposer(llm, retries=2)
    assert proposer.constrained  # chosen because the LLM supports it
    out = proposer.propose(REGIONS, 3, ctx)
    prompts, constraints = llm.calls[0]
    assert [c.k for c in constraints] == [3, 3] and [c.d for c in constraints] == [2, 2]
    assert np.allclose(constraints[1]._lo_units, [500, 0]) and np.allclose(constraints[1]._hi_units, [1000, 1000])
    assert "without a value" in prompts[0] and "predicted value" not in prompts[0]
    assert [len(g) for g in out] == [3, 3] and ctx.stats["llm_candidates"] == 6
    for i, group in enumerate(out):
        assert all(REGIONS[i].contains(c.u, tol=0.0)[0] and c.predicted is None for c in group)
    # Every answer parsed and every point was in its region; a retry round (if any) only
    # replaced duplicates (a random walk writes 1.000 for half of the b's).
    assert "llm_outside_region" not in ctx.stats and "llm_unparsable" not in ctx.stats
    assert ctx.stats["llm_prompts"] - 2 <= ctx.stats.get("llm_duplicates", 0)


def test_llm_proposer_constrained_needs_a_capable_llm(scripted_llm):
    plain = scripted_llm(lambda p, c: "")
    assert not LLMProposer(plain).constrained
    with pytest.raises(ValueError, match="constrained: ScriptedLLM cannot decode under a constraint"):
        LLMProposer(plain, constrained=True)
    with pytest.raises(TypeError, match="constrained: expected a bool"):
        LLMProposer(plain, constrained="yes")
    assert not LLMProposer(_ConstrainedScriptedLLM(), constrained=False).constrained


def test_make_proposer_errors():
    with pytest.raises(ValueError, match="proposer: unknown proposer 'bayes'"):
        make_proposer("bayes")
    with pytest.raises(ValueError, match="llm: the 'llm' proposer needs an LLM"):
        make_proposer("llm", None)


# ---------------------------------------------------------------- model-based LLM-free proposers


def _big_ctx(seed=0, n=40, d=3):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.sum((X - 0.3) ** 2, axis=1)
    return ProposalContext([f"x{i}" for i in range(d)], X, y, np.random.default_rng(seed + 1))


def _leaves(ctx):
    from optiforge.agents.hollm.partition import kd_partition

    return kd_partition(ctx.X, 4)


@pytest.mark.parametrize(
    "proposer", [ThompsonGPProposer(pool=64), CMAProposer(), MixtureProposer()]
)
def test_model_proposers_stay_inside_their_region(proposer):
    ctx = _big_ctx()
    regions = _leaves(ctx)[:5]
    out = proposer.propose(regions, 5, ctx)
    assert [len(g) for g in out] == [5] * 5
    for i, group in enumerate(out):
        for c in group:
            assert c.region == i and regions[i].contains(c.u, tol=0.0)[0]
        assert len({tuple(c.u) for c in group}) == 5


def test_thompson_gp_prefers_the_low_corner_of_a_region():
    # The region spans the minimiser's neighbourhood (0.3, 0.3, 0.3) and the far corner; the
    # posterior samples' argmins should sit near the minimiser, not anywhere in the box.
    ctx = _big_ctx(n=60)
    region = Region(np.zeros(3), np.ones(3), np.arange(60))
    out = ThompsonGPProposer(pool=256).propose([region], 8, ctx)[0]
    dist = [np.linalg.norm(c.u - 0.3) for c in out]
    assert np.median(dist) < 0.2  # uniform points in the cube: median distance ~0.5


def test_thompson_gp_fit_is_reused_by_the_gp_predictor(monkeypatch):
    import optiforge.agents.hollm.gp as gp_module
    from optiforge.agents.hollm.predictors import GPPredictor

    fits, builds = [], []
    real_fit, real_gp = gp_module.fit_hyperparameters, gp_module.LocalGP
    monkeypatch.setattr(
        gp_module, "fit_hyperparameters", lambda *a, **k: fits.append(1) or real_fit(*a, **k)
    )
    monkeypatch.setattr(gp_module, "LocalGP", lambda *a, **k: builds.append(1) or real_gp(*a, **k))
    ctx = _big_ctx()
    regions = _leaves(ctx)[:3]
    cands = [c for g in ThompsonGPProposer(pool=32).propose(regions, 3, ctx) for c in g]
    GPPredictor().predict(cands, ctx, np.concatenate([r.indices for r in regions]))
    assert len(fits) == 1 and len(builds) == 1


def test_cma_proposer_moves_along_the_descent_direction():
    # Points on a line: values fall towards x = 1; the offspring mean lies beyond the
    # neighbourhood mean in that direction (weighted recombination of the better half).
    X = np.column_stack([np.linspace(0.1, 0.6, 12), np.full(12, 0.5)])
    y = -X[:, 0]
    ctx = ProposalContext(["a", "b"], X, y, np.random.default_rng(0))
    region = Region(np.zeros(2), np.ones(2), np.arange(12))
    out = CMAProposer(sigma0=0.05).propose([region], 200, ctx)[0]
    mean = np.mean([c.u for c in out], axis=0)
    assert mean[0] > X[:, 0].mean() + 0.1 and abs(mean[1] - 0.5) < 0.05


def test_model_proposers_validate_their_options():
    with pytest.raises(ValueError, match="pool"):
        ThompsonGPProposer(pool=0)
    with pytest.raises(ValueError, match="sigma0"):
        CMAProposer(sigma0=0)
    with pytest.raises(ValueError, match="neighbours"):
        CMAProposer(neighbours=1)


@functools.cache
def _hollm_regret(proposer, seed, budget=40):
    from optiforge.agents.hollm import HOLLMAgent
    from optiforge.blackbox import get_blackbox_task

    task = get_blackbox_task("rosenbrock-3")
    agent = HOLLMAgent(task.space, {"proposer": proposer, "budget": budget}, seed=seed)
    best, n = np.inf, 0
    while n < budget:
        for p in agent.ask(min(4, budget - n)):
            v = task(p)
            agent.tell(p, v)
            best, n = min(best, v), n + 1
    return best - task.optimum


@pytest.mark.parametrize("proposer", ["gp-ts", "cmaes", "mix"])
def test_model_proposers_beat_the_sobol_proposer_over_seeds(proposer):
    # Rosenbrock-3, 40 evaluations, 5 seeds, paired by seed: better median regret and better
    # on at least 4 of the 5 seeds than the default LLM-free proposer (uniform in the region).
    new = np.array([_hollm_regret(proposer, s) for s in range(5)])
    base = np.array([_hollm_regret("sobol", s) for s in range(5)])
    assert np.median(new) < np.median(base)
    assert np.sum(new < base) >= 4, (new, base)


def test_agent_option_constrained_reaches_the_proposer():
    from optiforge.agents.hollm import HOLLMAgent
    from optiforge.agents.hollm.agent import HOLLMConfig

    space = {"x": {"type": "float", "low": 0, "high": 1}}
    assert HOLLMAgent(space, llm=_ConstrainedScriptedLLM()).proposer.constrained
    assert not HOLLMAgent(space, {"constrained": False}, llm=_ConstrainedScriptedLLM()).proposer.constrained
    with pytest.raises(TypeError, match="agent_options.constrained"):
        HOLLMConfig.from_options({"constrained": "yes"})
