import json
import re

import numpy as np
import pytest

from optiforge.agents.hollm import HOLLMAgent, HOLLMConfig
from optiforge.blackbox import get_blackbox_task

MIXED = {
    "x": {"type": "float", "low": -2, "high": 2},
    "n": {"type": "int", "low": 0, "high": 4},
    "c": {"type": "categorical", "choices": ["a", "b", "c"]},
}


def _objective(p):
    return (p["x"] - 0.5) ** 2 + (p["n"] - 3) ** 2 + (0.0 if p["c"] == "b" else 1.0)


def _run(agent, f, budget, batch=4):
    best = np.inf
    while agent.n_total < budget:
        for p in agent.ask(min(batch, budget - agent.n_total)):
            v = f(p)
            best = min(best, v)
            agent.tell(p, v)
    return best


def test_ask_tell_on_a_mixed_space():
    agent = HOLLMAgent(MIXED, {"n_initial": 5}, seed=1)
    first = agent.ask(5)
    assert len(first) == 5 and all(set(p) == set(MIXED) for p in first)
    assert agent.n_total == 5 and agent.n_observed == 0
    for p in first:
        agent.tell(p, _objective(p))
    assert agent.n_total == 5 and agent.n_observed == 5  # pending resolved by tell
    best = _run(agent, _objective, 40)
    assert best < 0.5  # found n=3, c='b' and x near 0.5
    assert agent.best[1] == best
    assert agent.last_iteration["n_candidates"] >= 4


def test_parallel_asks_never_repeat_a_point():
    # A finite space of 12 points: 12 asks without any tell must cover it exactly once.
    space = {"n": {"type": "int", "low": 0, "high": 3}, "c": {"type": "categorical", "choices": ["a", "b", "c"]}}
    agent = HOLLMAgent(space, {"n_initial": 2}, seed=0)
    agent.tell({"n": 0, "c": "a"}, 1.0)
    agent.tell({"n": 1, "c": "a"}, 2.0)
    seen = {(0, "a"), (1, "a")}
    for _ in range(5):
        for p in agent.ask(2):
            key = (p["n"], p["c"])
            assert key not in seen
            seen.add(key)
    assert len(seen) == 12


def test_pending_points_are_partitioned_and_counted():
    agent = HOLLMAgent({"x": {"type": "float", "low": 0, "high": 1}}, seed=0)
    for p in agent.ask(5):
        agent.tell(p, p["x"])
    pend = agent.ask(3)
    assert agent.n_total == 8 and agent.last_iteration["t"] == 5
    more = agent.ask(3)
    assert agent.last_iteration["t"] == 8
    assert len({p["x"] for p in pend + more}) == 6


def test_failed_trials_are_remembered_not_repeated():
    agent = HOLLMAgent({"x": {"type": "float", "low": 0, "high": 1}}, seed=0)
    ps = agent.ask(5)
    agent.tell(ps[0], None)
    agent.tell(ps[1], float("nan"))
    for p in ps[2:]:
        agent.tell(p, p["x"])
    assert agent.n_observed == 3 and agent.n_total == 5
    assert all(p not in ps for p in agent.ask(4))


def test_state_dict_round_trip_reproduces_the_next_ask():
    a = HOLLMAgent(MIXED, seed=3)
    _run(a, _objective, 17)
    state = json.loads(json.dumps(a.state_dict()))
    b = HOLLMAgent(MIXED, seed=0)
    b.load_state_dict(state)
    assert b.ask(4) == a.ask(4)
    with pytest.raises(ValueError, match="different search space"):
        HOLLMAgent({"y": {"type": "float", "low": 0, "high": 1}}).load_state_dict(state)


def test_same_seed_same_run_different_seed_different_run():
    runs = [[p["x"] for p in HOLLMAgent(MIXED, seed=s).ask(3)] for s in (0, 0, 1)]
    assert runs[0] == runs[1] != runs[2]


@pytest.mark.parametrize(
    ("options", "exc", "match"),
    [
        ({"proposer": "bayes"}, ValueError, r"agent_options\.proposer: unknown proposer 'bayes'"),
        ({"predictor": "nn"}, ValueError, r"agent_options\.predictor"),
        ({"m": 0}, ValueError, r"agent_options\.m: must be >= 1"),
        ({"k": "5"}, TypeError, r"agent_options\.k: expected an integer"),
        ({"alpha_min": 2.0}, ValueError, r"alpha_min \(2\.0\) must be <= alpha_max"),
        ({"alpha_max": float("nan")}, ValueError, r"agent_options\.alpha_max"),
        ({"temperatur": 1}, ValueError, r"unknown option\(s\) \['temperatur'\]"),
        ({"proposer": "llm"}, ValueError, r"llm: the 'llm' proposer needs an LLM"),
    ],
)
def test_bad_options_raise_naming_the_option(options, exc, match):
    with pytest.raises(exc, match=match):
        HOLLMAgent(MIXED, options)


def test_bad_ask_and_tell():
    agent = HOLLMAgent(MIXED)
    with pytest.raises(ValueError, match="n: must be a positive integer"):
        agent.ask(0)
    with pytest.raises(ValueError, match=r"params\.x"):
        agent.tell({"x": 5.0, "n": 1, "c": "a"}, 1.0)
    with pytest.raises(TypeError, match="value: expected a number"):
        agent.tell({"x": 0.0, "n": 1, "c": "a"}, "1.0")
    assert HOLLMConfig.from_options({"k": 3.0}).k == 3


def test_llm_proposer_drives_the_agent(scripted_llm):
    # A scripted "LLM" that proposes the centre of the region it is shown.
    def respond(prompt, call):
        if "surrogate" in prompt:
            return "[]"
        lo, hi = map(float, re.search(r"- x1: \[([\d.]+), ([\d.]+)\]", prompt).groups())
        k = int(re.search(r"Suggest (\d+)", prompt).group(1))
        return json.dumps([{"x1": lo + (hi - lo) * (j + 1) / (k + 1), "value": 0.0} for j in range(k)])

    llm = scripted_llm(respond)
    space = {"x1": {"type": "float", "low": 0, "high": 1}}
    agent = HOLLMAgent(space, {"predictor": "random"}, llm=llm, seed=0)
    assert agent.proposer_name == "llm"
    _run(agent, lambda p: (p["x1"] - 0.3) ** 2, 13)
    assert agent.stats["llm_candidates"] > 0 and agent.stats.get("filled", 0) == 0
    assert all(len(batch) <= 5 for batch in llm.calls)  # one batched call per iteration, M <= 5


def test_beats_random_search_on_multimodal_functions():
    # The paper's headline at small scale: region-partitioned search finds better values than
    # random search with the same budget on multimodal functions (median over seeds).
    for name, budget in (("levy-4", 60), ("hartmann-3", 50)):
        task = get_blackbox_task(name)
        hollm, rand = [], []
        for seed in range(5):
            hollm.append(_run(HOLLMAgent(task.space, {"proposer": "gaussian"}, seed=seed), task, budget))
            rng = np.random.default_rng(100 + seed)
            rand.append(min(task(p) for p in task.space.sample(rng, budget)))
        assert np.median(hollm) < np.median(rand), (name, hollm, rand)
