"""The ``tune`` operator: a stored HOLLM study over a program's constants, scored in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from optiforge.agents.evolution import EvolutionAgent, EvolutionConfig, PoolEntry, TuneRequest
from optiforge.agents.evolution.graft import Term
from optiforge.heuristics import get_task
from optiforge.heuristics.inprocess import evaluate_in_process
from optiforge.platform.campaigns import create_campaign, run_campaign
from optiforge.platform.campaigns.tune import tune_constants
from optiforge.platform.executors import make_executor
from optiforge.platform.store import Store
from optiforge.platform.study import load_study

# Worse than best fit: +1.5 * bins turns best fit into worst fit. Any weight below 1 (inside the
# tune box 0.375 .. 6) gives best fit back, so a short study must find a better variant.
WORST_FIT_WEIGHTED = '''import numpy as np


def priority(item, bins):
    """Best fit, spoiled by a weight on the free space."""
    return -(bins - item) + 1.5 * bins
'''

# The same program with a side effect that this process would see if it ever ran the program:
# numpy is one module object per process, so an in-process run leaves the attribute behind.
MARKED = WORST_FIT_WEIGHTED.replace(
    "def priority", "np.optiforge_tune_ran_here = True\n\n\ndef priority")


class CountingEvaluator:
    """The sandbox, recording every program it is handed (what else could have run them?)."""

    def __init__(self, inner) -> None:
        self.inner, self.programs = inner, []

    def evaluate(self, task, programs, split="train"):
        assert split == "train"
        self.programs += list(programs)
        return self.inner.evaluate(task, programs, split)


def _request(code: str, score: float, budget: int = 8) -> TuneRequest:
    parent = PoolEntry("parent-hash-0001", code, "weighted best fit", score, "replacement", [], 1)
    return TuneRequest(parent, budget=budget, batch=4, max_constants=6, seed=0)


@pytest.fixture(scope="module")
def sandbox():
    with make_executor("local", workers=2) as ex:
        yield ex


def test_tuned_child_beats_its_parent_on_train_and_its_study_is_stored(home, sandbox):
    task = get_task("binpacking")
    parent_score = evaluate_in_process(task, WORST_FIT_WEIGHTED, "train").score
    store = Store()
    result = tune_constants(store, sandbox, task, _request(WORST_FIT_WEIGHTED, parent_score),
                            owner="local", label="t")
    assert result.code is not None and result.evaluation is not None
    assert result.evaluation.score < parent_score
    # the stored score is the trusted score of the child's code, recomputed here
    again = evaluate_in_process(task, result.code, "train")
    assert again.score == pytest.approx(result.evaluation.score)
    assert f"{result.constants['c0']!r}"[:5] in result.code and result.parent_constants == {"c0": 1.5}
    assert 0.375 <= result.constants["c0"] < 1.0  # inside the box, on the best-fit side
    # the study is a stored HOLLM study: the parent's point first, then the budget
    study = load_study(result.study_id, store)
    trials = study.trials
    assert study.agent_name == "hollm" and len(trials) == 8 == result.evaluations
    assert trials[0].params == {"c0": 1.5} and trials[0].value == pytest.approx(parent_score)
    assert study.best_trial.value == pytest.approx(result.evaluation.score)


def test_no_constants_no_study_and_a_good_parent_gets_no_child(home, sandbox):
    task = get_task("binpacking")
    store = Store()
    best_fit = task.seeds["best_fit"]
    assert tune_constants(store, sandbox, task, _request(best_fit, 4.0), "local").study_id is None
    # Best fit written with a neutral weight: no weight in the box beats it on train.
    neutral = best_fit.replace("return -(bins - item)", "return -(bins - item) * 2.0")
    score = evaluate_in_process(task, neutral, "train").score
    result = tune_constants(store, sandbox, task, _request(neutral, score, budget=5), "local")
    assert result.study_id is not None and result.code is None and result.evaluation is None


def test_tune_never_runs_the_program_outside_the_sandbox(home, sandbox):
    task = get_task("binpacking")
    counting = CountingEvaluator(sandbox)
    sandboxed = sandbox.evaluate(task, [MARKED], "train")[0]
    assert sandboxed.valid  # the side effect does not stop it from running (in the sandbox)
    assert not hasattr(np, "optiforge_tune_ran_here")
    result = tune_constants(Store(), counting, task, _request(MARKED, sandboxed.score), "local")
    assert result.code is not None and "optiforge_tune_ran_here" in result.code
    # every variant went to the sandbox, and none ran here
    assert len(counting.programs) == result.evaluations - 1 == 7
    assert not hasattr(np, "optiforge_tune_ran_here")
    # nor did the agent's side of the operator (it parses the code to choose the target)
    agent = EvolutionAgent(task, llm=_NoLLM(), config=EvolutionConfig(tune_every=1))
    agent.population.add(PoolEntry("m", MARKED, "marked", sandboxed.score, "replacement", [], 0))
    agent.seeded = True
    request = agent.tune_target()
    assert request is not None and request.parent.hash == "m"
    agent.observe(agent.tune_proposal(request, result.code), [result.evaluation])
    assert not hasattr(np, "optiforge_tune_ran_here")


class _NoLLM:
    def generate(self, *args, **kwargs):  # the tune operator never asks the LLM
        raise AssertionError("the tune operator called the LLM")


def test_campaign_stores_the_tuned_child_with_its_constants_and_study(home, tmp_path: Path):
    response = ("{The idea of the algorithm is to weigh the free space.}\n```python\n"
                "def priority(item, bins):\n    return -(bins - item) + 1.5 * bins\n```")
    replay = tmp_path / "r.jsonl"
    replay.write_text(json.dumps({"text": response}) + "\n")
    store = Store()
    options = {"samples_per_prompt": 2, "tune_every": 2, "tune_budget": 6}
    cid = create_campaign(store, task="binpacking", budget=4, llm=f"replay:{replay}", seed=0,
                          config={"agent_options": options, "workers": 1})
    run_campaign(store, cid)
    cands = store.candidates(cid)
    by_op = {}
    for c in cands:
        by_op.setdefault(c.operator, []).append(c)
    llm_written = [c for c in cands if c.operator not in ("seed", "tune")]
    assert len(llm_written) == 4  # the budget counts what the LLM wrote, not the tuned child
    (child,) = by_op["tune"]
    (parent,) = [c for c in llm_written if c.hash == child.parents[0]][:1]
    assert child.valid and child.score < parent.score
    assert child.metrics["tune"]["parent_constants"] == {"c0": 1.5}
    study = load_study(child.metrics["tune"]["study_id"], store)
    assert len(study.trials) == 6 and study.best_trial.value == pytest.approx(child.score)


def test_a_graft_study_runs_in_the_sandbox_and_its_child_must_beat_the_parent(home, sandbox):
    task = get_task("binpacking")
    best_fit = task.seeds["best_fit"]
    score = evaluate_in_process(task, best_fit, "train").score
    parent = PoolEntry("best-fit-hash", MARKED.replace("+ 1.5 * bins", ""), "best fit", score, "seed", [], 0)
    counting = CountingEvaluator(sandbox)
    # Penalising a small leftover space is a term that can beat best fit once tuned (docs/benchmarks/discovery.md)
    term = Term("bins - item", "band", -1.0)
    request = TuneRequest(parent, budget=12, batch=4, max_constants=6, seed=0, term=term)
    result = tune_constants(Store(), counting, task, request, "local")
    assert len(counting.programs) == result.evaluations == 12  # the grafted start point too
    assert not hasattr(np, "optiforge_tune_ran_here")  # every variant ran in the sandbox only
    assert result.code is not None and result.evaluation.score < score
    assert evaluate_in_process(task, result.code, "train").score == pytest.approx(result.evaluation.score)
    assert result.record()["term"] == {"feature": "bins - item", "shape": "band", "sign": -1.0}
    # the term's constants were searched first: the weight, the band's lower end, its threshold
    assert list(result.parent_constants.values()) == [-10.0, 0.0, 10.0]
    # a term the program cannot take (two returns) makes no study
    two = PoolEntry("two", "def priority(item, bins):\n    if item:\n        return bins\n    return -bins\n",
                    None, score, "seed", [], 0)
    assert tune_constants(Store(), counting, task, TuneRequest(two, 12, 4, 6, 0, term=term), "local").study_id is None


def test_a_campaign_without_llm_programs_to_tune_grafts_and_stores_the_terms(home, tmp_path: Path):
    replay = tmp_path / "r.jsonl"
    replay.write_text(json.dumps({"text": "no code in this answer"}) + "\n")
    store = Store()
    options = {"samples_per_prompt": 2, "tune_every": 2, "tune_budget": 8, "graft_terms": 2}
    cid = create_campaign(store, task="binpacking", budget=4, llm=f"replay:{replay}", seed=0,
                          config={"agent_options": options, "workers": 1})
    report = run_campaign(store, cid)
    cands = store.candidates(cid)
    grafted = [c for c in cands if c.operator == "graft"]
    assert len([c for c in cands if c.operator not in ("seed", "tune", "graft")]) == 4  # the budget
    assert grafted, "a tune round with nothing to tune grafts"
    by_hash = {c.hash: c for c in cands if c.valid}
    for child in grafted:
        (parent_hash,) = child.parents
        assert child.valid and child.score < by_hash[parent_hash].score  # kept only if it beats the parent
        record = child.metrics["tune"]
        assert set(record["term"]) == {"feature", "shape", "sign"}
        assert load_study(record["study_id"], store).best_trial.value == pytest.approx(child.score)
    assert report.best_operator in ("graft", "seed")
