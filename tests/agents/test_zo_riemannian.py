"""The zo-riemannian agent through Study and a kill: on the manifold, and resumable (its campaign
resume test is in tests/platform/campaigns/test_campaign_runs.py)."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge import create_study, load_study
from optiforge.agents.registry import make_blackbox_agent
from optiforge.agents.zo_riemannian import ZORiemannianAgent
from optiforge.blackbox import Space
from optiforge.platform.store import Store

SPACE = {"w": {"type": "simplex", "dim": 4}, "u": {"type": "sphere", "dim": 3},
         "S": {"type": "spd", "n": 2}, "x": {"type": "float", "low": -2.0, "high": 3.0}}
Q = np.array([0.4, 0.3, 0.2, 0.1])
TARGET_S = np.array([[2.0, 0.3], [0.3, 0.5]])


def objective(p):
    w, u, S = np.array(p["w"]), np.array(p["u"]), np.array(p["S"])
    return float(np.sum((w - Q) ** 2) + u @ np.diag([3.0, 2.0, 1.0]) @ u
                 + np.sum((S - TARGET_S) ** 2) + (p["x"] - 1.0) ** 2)


OPTS = {"budget": 400, "eta": 0.3, "mu": 0.05, "schedule": "constant", "barrier": 0.01}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTIFORGE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("OPTIFORGE_DB", raising=False)
    return tmp_path / "home"


@pytest.fixture
def store(storage_url):
    """SQLite, and PostgreSQL when configured: replay matches points after a JSONB round trip."""
    return Store(storage_url)


def _drive(study, steps, n=2):
    for _ in range(steps):
        for t in study.ask(n):
            study.tell(t.id, objective(t.params))


def test_every_asked_point_is_on_its_manifold_and_the_objective_drops(store):
    study = create_study(SPACE, agent="zo-riemannian", agent_options=OPTS, storage=store, seed=3)
    _drive(study, 150)
    space = Space(SPACE)
    for t in study.trials:
        assert space.validate(t.params)  # sum 1, norm 1, symmetric positive definite, in range
        assert min(t.params["w"]) > 0  # strictly inside the open simplex: the barrier metric
    values = [t.value for t in study.trials]
    assert np.mean(values[-20:]) < 0.5 * np.mean(values[:20])


def test_a_killed_study_resumes_exactly(store):
    whole = create_study(SPACE, agent="zo-riemannian", agent_options=OPTS, storage=store, seed=7)
    _drive(whole, 12)
    split = create_study(SPACE, agent="zo-riemannian", agent_options=OPTS, storage=store, seed=7)
    _drive(split, 5)
    running = split.ask(1)  # killed after asking, before telling: a running trial
    sid = split.id
    del split
    again = load_study(sid, storage=store)  # a fresh agent, fed the stored trials
    again.tell(running[0].id, objective(running[0].params))
    for t in again.ask(1):  # the fresh agent replays the trials and asks the pair's other point
        again.tell(t.id, objective(t.params))
    _drive(again, 6)
    assert [t.params for t in again.trials] == [t.params for t in whole.trials]


def test_parallel_askers_get_extra_directions_and_replay_agrees():
    agent = ZORiemannianAgent(SPACE, OPTS, seed=1)
    first, second = agent.ask(2), agent.ask(2)  # the second ask opens another direction
    keys = {repr(p) for p in first + second}
    assert len(keys) == 4
    for p in second + first:  # told out of order
        agent.tell(p, objective(p))
    nxt = agent.ask(2)
    fresh = make_blackbox_agent("zo-riemannian", Space(SPACE), OPTS, seed=1)
    for p in first + second:  # a replay sees trials in ask order
        fresh.tell(p, objective(p))
    assert fresh.ask(2) == nxt
    assert agent.step_index == 1


def test_state_dict_round_trip():
    agent = ZORiemannianAgent(SPACE, OPTS, seed=2)
    pts = agent.ask(3)
    agent.tell(pts[0], objective(pts[0]))
    clone = ZORiemannianAgent(SPACE, OPTS, seed=2)
    clone.load_state_dict(agent.state_dict())
    assert clone.ask(3) == agent.ask(3)


def test_hollm_refuses_manifold_parameters_and_zo_refuses_discrete_ones(store):
    with pytest.raises(ValueError, match=r"space\.w: the hollm agent searches box parameters"):
        create_study(SPACE, agent="hollm", storage=store)
    with pytest.raises(ValueError, match=r"space\.n: .*'n' is a int parameter"):
        create_study({"n": {"type": "int", "low": 0, "high": 3}}, agent="zo-riemannian", storage=store)
    with pytest.raises(ValueError, match=r"agent_options\.sampler"):
        create_study(SPACE, agent="zo-riemannian", agent_options={"sampler": "gauss"}, storage=store)
    with pytest.raises(ValueError, match=r"agent_options: unknown option\(s\) \['b'\]"):
        create_study(SPACE, agent="zo-riemannian", agent_options={"b": 4}, storage=store)
    # random search samples manifold parameters too
    study = create_study(SPACE, agent="random", storage=store, seed=0)
    assert all(Space(SPACE).validate(t.params) for t in study.ask(5))
