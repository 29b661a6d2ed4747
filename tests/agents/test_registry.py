"""The agent registry is the one place that knows agent names; every agent satisfies its protocol."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.agents.protocols import BlackboxAgent
from optiforge.agents.random_search import RandomSearchAgent
from optiforge.agents.registry import agent_names, get_agent, make_blackbox_agent, validate_options
from optiforge.agents.replay import replay_trial
from optiforge.blackbox import Space

SPACE = Space({"x": {"type": "float", "low": -1.0, "high": 1.0},
               "k": {"type": "categorical", "choices": ["a", "b"]}})


def test_names_and_kinds() -> None:
    assert {"hollm", "random"} <= set(agent_names("blackbox"))
    assert "evolution" in agent_names("program") and "evolution" not in agent_names("blackbox")
    with pytest.raises(ValueError, match="agent: unknown agent 'nope'; choose one of"):
        get_agent("nope")
    with pytest.raises(ValueError, match="agent: unknown agent 'evolution'"):
        get_agent("evolution", "blackbox")  # a program agent cannot drive a study


@pytest.mark.parametrize("name", ["hollm", "random"])
def test_every_blackbox_agent_satisfies_the_protocol_and_resumes(name: str) -> None:
    agent = make_blackbox_agent(name, SPACE, {}, seed=4)
    assert isinstance(agent, BlackboxAgent)
    for p in agent.ask(6):
        agent.tell(p, float(p["x"] ** 2))
    pending = agent.ask(2)
    clone = make_blackbox_agent(name, SPACE, {}, seed=4)
    clone.load_state_dict(agent.state_dict())
    assert clone.ask(3) == agent.ask(3)  # state_dict holds everything the next ask depends on
    assert len(pending) == 2


def test_options_are_validated_by_the_agent_naming_the_key() -> None:
    assert validate_options("hollm", {"m": 3}) == {"m": 3}
    with pytest.raises(ValueError, match=r"agent_options\.m"):
        validate_options("hollm", {"m": 0})
    with pytest.raises(ValueError, match="agent_options: the random agent takes no options"):
        validate_options("random", {"m": 3})
    with pytest.raises(TypeError, match="agent_options: expected an object"):
        validate_options("hollm", [1, 2])
    with pytest.raises(ValueError, match="samples_per_prompt"):
        validate_options("evolution", {"samples_per_prompt": 0})


def test_hollm_wants_an_llm_only_when_it_uses_one() -> None:
    info = get_agent("hollm")
    assert not info.wants_llm({}) and not info.wants_llm({"proposer": "sobol", "llm": "smollm2"})
    assert info.wants_llm({"proposer": "llm"}) and info.wants_llm({"llm": "smollm2"})
    assert info.llm_ref({"llm": "smollm2"}) == "smollm2"
    assert info.budget_defaults(50) == {"budget": 50} and info.batch_size({"b": 3}) == 3


def test_replay_maps_states_and_negates_for_maximisation() -> None:
    agent = make_blackbox_agent("hollm", SPACE, {"n_initial": 2}, seed=0)
    pts = SPACE.sample(np.random.default_rng(0), 3)
    replay_trial(agent, pts[0], "complete", 2.0, maximize=True)
    replay_trial(agent, pts[1], "failed", None)
    replay_trial(agent, pts[2], "running", None)
    assert agent.best is not None and agent.best[1] == -2.0
    assert agent.n_observed == 1 and agent.n_total == 3


def test_random_agent_depends_only_on_seed_and_trial_count() -> None:
    a, b = RandomSearchAgent(SPACE, seed=9), RandomSearchAgent(SPACE, seed=9)
    first = a.ask(2)
    for p in first:
        b.add_pending(p)  # another process's running trials
    assert a.ask(2) == b.ask(2)
    assert a.ask(1) != RandomSearchAgent(SPACE, seed=10).ask(1)
