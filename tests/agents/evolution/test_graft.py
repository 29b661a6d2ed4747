"""The graft operator: one term from the task's features, added to the returned score (text only)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest
from evo_helpers import BEST_FIT, TinyBinPacking, evaluate_code

from optiforge.agents.evolution import EvolutionAgent, EvolutionConfig, find_constants
from optiforge.agents.evolution.graft import (
    SHAPES,
    GraftableTask,
    Term,
    all_terms,
    graft,
    graftable,
    term_first,
)


@dataclass
class GraftableBinPacking(TinyBinPacking):
    features: dict[str, float] = field(default_factory=lambda: {"bins - item": 10.0, "item / bins": 0.5})
    score_scale: float = 10.0


def _run(code: str, item: float, bins: np.ndarray) -> np.ndarray:
    ns: dict = {}
    exec(compile(code, "<test>", "exec"), ns)  # trusted test code: graft's own output on a seed
    return np.asarray(ns["priority"](item, bins))


def test_every_term_adds_its_shape_to_the_returned_value_and_nothing_else():
    task = GraftableBinPacking()
    assert isinstance(task, GraftableTask) and not isinstance(TinyBinPacking(), GraftableTask)
    terms = all_terms(task)
    assert len(terms) == len(task.features) * len(SHAPES) * 2 == len(set(terms))
    bins, item = np.array([12.0, 30.0, 55.0, 100.0]), 10.0
    r = bins - item
    expected = {  # the term's value at its starting constants, by hand
        "linear": -1.0 * r, "square": -0.1 * r**2, "below": -10.0 * (r < 10.0),
        "band": -10.0 * ((r > 0) & (r < 10.0)), "decay": -10.0 * np.exp(-r / 10.0),
    }
    for shape, want in expected.items():
        child = graft(BEST_FIT, task, Term("bins - item", shape, -1.0))
        assert child is not None and child.startswith(BEST_FIT.split("    return")[0])  # docstring kept
        np.testing.assert_allclose(_run(child, item, bins), -r + want)
    # a positive sign rewards, and the term's constants are found (what tune will search)
    child = graft(BEST_FIT, task, Term("item / bins", "band", 1.0))
    np.testing.assert_allclose(_run(child, item, bins), -r + 10.0 * ((item / bins > 0) & (item / bins < 0.5)))
    assert [c.value for c in find_constants(child)] == [10.0, 0.0, 0.5]


def test_only_programs_with_one_return_are_grafted_and_the_terms_constants_come_first():
    task = GraftableBinPacking()
    two_returns = "def priority(item, bins):\n    if item > 50:\n        return -bins\n    return bins\n"
    nested = ("def priority(item, bins):\n    def helper(x):\n        return 2.5 * x\n"
              "    return -helper(\n        bins - item)\n")
    assert not graftable(two_returns, "priority") and graft(two_returns, task, all_terms(task)[0]) is None
    assert graft("def priority(:\n", task, all_terms(task)[0]) is None
    assert graft("def other(item, bins):\n    return bins\n", task, all_terms(task)[0]) is None
    child = graft(nested, task, Term("bins - item", "below", -1.0))  # the helper's return is not the entry's
    assert child is not None and "return 2.5 * x\n" in child
    np.testing.assert_allclose(_run(child, 10.0, np.array([15.0, 40.0])), [-12.5 - 10.0, -75.0])
    ordered = term_first(child, "priority", find_constants(child))
    assert [c.value for c in ordered] == [-10.0, 10.0, 2.5]  # the term's, then the parent's
    with pytest.raises(ValueError, match="feature"):
        graft(BEST_FIT, task, Term("bins * 2", "linear", 1.0))
    with pytest.raises(ValueError, match="shape"):
        graft(BEST_FIT, task, Term("bins - item", "cubic", 1.0))


def _seeded_agent(task, cfg: EvolutionConfig) -> EvolutionAgent:
    agent = EvolutionAgent(task, llm=_NoLLM(), config=cfg, seed=3)
    p = agent.propose()
    agent.observe(p, [evaluate_code(task, prog.code) for prog in p.programs])
    return agent


class _NoLLM:
    def generate(self, *args, **kwargs):
        raise AssertionError("a graft round called the LLM")


def test_graft_rounds_come_when_nothing_is_left_to_tune_and_never_repeat_a_term():
    task = GraftableBinPacking()
    cfg = EvolutionConfig(tune_every=1, graft_terms=3, tune_budget=5)
    agent = _seeded_agent(task, cfg)
    assert agent.tune_target() is None  # the seeds have no constants
    seen = set()
    for _ in range(4):
        requests = agent.graft_targets()
        assert len(requests) == 3 and len({r.parent.hash for r in requests}) == 1
        assert all(r.budget == 5 and r.term is not None for r in requests)
        parent = requests[0].parent
        keys = {(parent.hash, r.term) for r in requests}
        assert not keys & seen  # a term is never tried twice on the same parent
        seen |= keys
        codes = [graft(parent.code, task, r.term) for r in requests]
        codes[1] = None  # that study found nothing better than the parent
        p = agent.graft_proposal(requests, codes)
        assert p.operator == "graft" and p.completions == [] and len(p.programs) == 2
        assert all("Plus a term that" in prog.idea for prog in p.programs)
        agent.observe(p, [evaluate_code(task, prog.code) for prog in p.programs])
        # grafted children had their constants set: the next tune round does not tune them
        assert agent.tune_target() is None
    restored = EvolutionAgent(task, llm=_NoLLM(), config=cfg, seed=0)
    restored.load_state_dict(json.loads(json.dumps(agent.state_dict())))
    assert restored._grafted == agent._grafted and len(restored._grafted) == 12
    # no graft for a task without features, with graft_terms = 0, or off the tune schedule
    assert _seeded_agent(TinyBinPacking(), cfg).graft_targets() == []
    assert _seeded_agent(task, EvolutionConfig(tune_every=1, graft_terms=0)).graft_targets() == []
    off = _seeded_agent(task, EvolutionConfig(tune_every=2))
    assert off.round == 1 and off.graft_targets() == []
    with pytest.raises(ValueError, match="graft_terms"):
        EvolutionConfig(graft_terms=-1)
    with pytest.raises(ValueError, match="requests"):
        agent.graft_proposal([], [])


def test_every_parent_term_pair_is_tried_once_then_grafting_stops():
    task = GraftableBinPacking(seeds={"best_fit": BEST_FIT})
    agent = _seeded_agent(task, EvolutionConfig(tune_every=1, graft_terms=7))
    total = 0
    while requests := agent.graft_targets():
        total += len(requests)
        agent.observe(agent.graft_proposal(requests, [None] * len(requests)), [])
    assert total == len(all_terms(task))  # the only parent, every term once


@dataclass
class _Chooser:
    """A task whose entry point picks a node with an argmin over distances (TSP-like)."""

    entry_point: str = "select_next_node"
    features: dict[str, float] = field(default_factory=lambda: {"d[nodes, 0]": 0.5})
    score_scale: float = 0.1


def test_a_choice_by_argmin_gets_the_term_inside_the_scores_it_picks_from():
    task = _Chooser()
    nearest = "def select_next_node(c, nodes, d):\n    return int(nodes[np.argmin(d[c, nodes])])\n"
    child = graft(nearest, task, Term("d[nodes, 0]", "linear", 1.0))
    assert child == ("def select_next_node(c, nodes, d):\n"
                     "    return int(nodes[np.argmin(((d[c, nodes]) + 0.2 * (d[nodes, 0])))])\n")
    d = np.array([[0.0, 0.3, 0.4], [0.3, 0.0, 0.9], [0.4, 0.9, 0.0]])
    ns: dict = {"np": np}
    exec(compile(child, "<test>", "exec"), ns)  # trusted test code
    # nearest neighbour picks node 1 (0.3 < 0.4); far from node 0 costs 0.2 * 0.3 vs 0.2 * 0.4: still 1,
    # and a weight that makes distance-to-0 dominate flips it
    assert ns["select_next_node"](0, np.array([1, 2]), d) == 1
    flipped = child.replace("0.2 *", "-2.0 *")
    exec(compile(flipped, "<test>", "exec"), ns)
    assert ns["select_next_node"](0, np.array([1, 2]), d) == 2
    method = "def select_next_node(c, nodes, d):\n    return nodes[d[c, nodes].argmin()]\n"
    assert "((d[c, nodes]) + 0.2 * (d[nodes, 0])).argmin()" in graft(method, task, Term("d[nodes, 0]", "linear", 1.0))
    two = "def select_next_node(c, nodes, d):\n    return nodes[np.argmin(d[c])] + np.argmax(d[c])\n"
    assert not graftable(two, "select_next_node")
