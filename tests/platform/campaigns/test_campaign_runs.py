"""Discovery campaigns end to end: real store, real sandbox, replayed LLM responses."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from optiforge.heuristics import get_task
from optiforge.heuristics.inprocess import evaluate_in_process
from optiforge.platform.campaigns import campaign_summary, create_campaign, run_campaign, runner
from optiforge.platform.campaigns.summary import NOT_LLM_WRITTEN
from optiforge.platform.store import Store
from optiforge.platform.study import load_study


def test_campaign_runs_to_budget_and_stores_everything(home, replay_file):
    store = Store()
    cid = create_campaign(store, task="binpacking", budget=8, llm=f"replay:{replay_file}", seed=0)
    seen = []
    report = run_campaign(store, cid, lambda done, total, best: seen.append((done, total, best)))

    assert store.get_campaign(cid).status == "finished"
    assert seen[-1][0] >= 8 and all(t == 8 for _, t, _ in seen)
    cands = store.candidates(cid)
    generated = [c for c in cands if c.operator not in NOT_LLM_WRITTEN]  # what the LLM wrote
    assert len(generated) == 8
    # the refusal and the syntax error are stored as invalid, with their reason
    invalid = [c for c in generated if not c.valid]
    assert invalid and all(c.error for c in invalid)
    # every LLM response is stored with its prompt, and linked to a candidate
    calls = store.llm_calls(cid)
    assert len(calls) == 8 and all(c.prompt for c in calls)
    # the stored train scores are the trusted scores (recomputed here in-process)
    for c in generated:
        if c.valid:
            assert c.score == pytest.approx(evaluate_in_process("binpacking", c.code, "train").score)
    # the report re-scored the best and the baseline on the held-out split
    task = get_task("binpacking")
    base = evaluate_in_process("binpacking", task.seeds[task.baseline], "test")
    assert report.baseline_test_score == pytest.approx(base.score)
    assert report.best_test_score is not None
    assert report.best_train_score == min(c.score for c in cands if c.valid)
    assert report.gap_vs_baseline == pytest.approx(report.best_test_score - base.score)
    # the score per held-out dataset, whose mean is the split's score
    by_dataset = report.test_by_dataset
    assert list(by_dataset) == list(task.split_datasets("test")) and len(by_dataset) > 1
    assert np.mean([v["best"] for v in by_dataset.values()]) == pytest.approx(report.best_test_score)
    assert all(v["baseline"] == pytest.approx(base.metrics[f"{name}/excess_pct"])
               for name, v in by_dataset.items())


def test_bad_campaign_settings_name_the_argument(home, replay_file):
    store = Store()
    spec = f"replay:{replay_file}"
    empty = replay_file.with_name("empty.jsonl")
    empty.write_text("\n")
    for kwargs, word in [
        ({"task": "nope", "budget": 3, "llm": spec}, "task"),
        ({"task": "binpacking", "budget": 0, "llm": spec}, "budget"),
        ({"task": "binpacking", "budget": 3, "llm": "nonsense"}, "llm"),
        ({"task": "binpacking", "budget": 3, "llm": spec, "executor": "slurm"}, "executor"),
        ({"task": "binpacking", "budget": 3, "llm": spec, "agent": "x"}, "agent"),
        ({"task": "binpacking", "budget": 3, "llm": spec, "rl": "ppo"}, "rl"),
        ({"task": "branin", "agent": "hollm", "budget": 3, "rl": "grpo"}, "rl"),
        ({"task": "branin", "agent": "hollm", "budget": 3, "llm": "nonsense"}, "llm"),
        ({"task": "branin", "agent": "hollm", "budget": 3,
          "config": {"agent_options": {"m": 0}}}, r"agent_options\.m"),
        ({"task": "branin", "agent": "random", "budget": 3,
          "config": {"agent_options": {"m": 3}}}, "agent_options"),
        ({"task": "binpacking", "agent": "hollm", "budget": 3}, "task"),
        ({"task": "branin", "agent": "evolution", "budget": 3, "llm": spec}, "task"),
        # Local files the LLM spec names are looked at now, not when the campaign runs.
        ({"task": "binpacking", "budget": 3, "llm": f"replay:{empty}"}, "llm: replay file .* holds no responses"),
        ({"task": "binpacking", "budget": 3, "llm": f"replay:{home}/none.jsonl"}, "llm: no replay file"),
        ({"task": "binpacking", "budget": 3, "llm": "replay:/dev/null"}, "llm: no replay file"),
        ({"task": "binpacking", "budget": 3, "llm": f"llamacpp:{home}/none.gguf"}, "llm: no GGUF file"),
        ({"task": "branin", "agent": "hollm", "budget": 3, "llm": "replay:/dev/null"}, "llm"),
    ]:
        with pytest.raises(ValueError, match=word):
            create_campaign(store, **kwargs)
    assert store.list_campaigns() == []
    assert store.list_studies() == []  # a refused black-box campaign leaves no study behind


@pytest.mark.slow
def test_same_results_on_local_and_ray_executors(home, replay_file):
    store = Store()
    results = {}
    for executor in ("local", "ray"):
        cid = create_campaign(store, task="binpacking", budget=8, llm=f"replay:{replay_file}",
                              seed=3, executor=executor)
        run_campaign(store, cid)
        results[executor] = [(c.hash, c.valid, c.score, c.error) for c in store.candidates(cid)]
    assert results["local"] == results["ray"]


def _interrupt_after(n: int):
    """A progress callback that presses Ctrl-C once ``n`` units of budget are used."""

    def progress(done: int, total: int, best: float | None) -> None:
        if done >= n:
            raise KeyboardInterrupt

    return progress


def test_hollm_campaign_is_a_study_and_resumes_exactly(home):
    """A black-box campaign's evaluations are its study's trials; an interrupted campaign
    resumes from them and spends exactly its budget, keeping every stored evaluation."""
    from optiforge.blackbox import get_blackbox_task

    store = Store()
    cid = create_campaign(store, task="branin", agent="hollm", budget=12, seed=1,
                          config={"agent_options": {"proposer": "sobol", "b": 4}})
    assert store.get_campaign(cid).llm == "none"
    with pytest.raises(KeyboardInterrupt):
        run_campaign(store, cid, _interrupt_after(8))
    assert store.get_campaign(cid).status == "interrupted"
    study = load_study(store.get_campaign(cid).config["study_id"], storage=store)
    first = [(t.params, t.value) for t in study.trials]
    assert len(first) == 8
    # A process killed between asking and telling leaves running trials: resume evaluates them.
    left_running = study.ask(2)
    report = run_campaign(store, cid)
    trials = study.trials
    assert len(trials) == 12 and all(t.state == "complete" for t in trials)
    assert [(t.params, t.value) for t in trials[:8]] == first
    assert [t.params for t in trials[8:10]] == [t.params for t in left_running]
    task = get_blackbox_task("branin")
    assert all(t.value == pytest.approx(task(t.params)) for t in trials)  # the true objective
    assert report.best_train_score == min(t.value for t in trials)
    assert report.gap_vs_baseline == pytest.approx(report.best_train_score - task.optimum)
    summary = campaign_summary(store, cid)
    assert summary["evaluations"] == 12 and summary["best"][0]["value"] == report.best_train_score
    assert store.candidates(cid) == []  # one storage path for points: trials only


def _time_up_after(n: int, monkeypatch):
    """A progress callback that moves this run's clock past any deadline once ``n`` units of
    budget are used (the runner's clock only: the sandbox's timeouts keep real time)."""

    def progress(done: int, total: int, best: float | None) -> None:
        if done >= n:
            monkeypatch.setattr(runner, "time", SimpleNamespace(monotonic=lambda: math.inf))

    return progress


def test_timeout_ends_the_run_at_a_round_boundary_and_resume_spends_the_rest(home, replay_file,
                                                                            monkeypatch):
    store = Store()
    cid = create_campaign(store, task="binpacking", budget=8, llm=f"replay:{replay_file}", seed=0,
                          config={"agent_options": {"samples_per_prompt": 2}})
    report = run_campaign(store, cid, _time_up_after(1, monkeypatch), timeout=3600)
    generated = [c for c in store.candidates(cid) if c.operator not in NOT_LLM_WRITTEN]
    # The round under way when time ran out (G = 2 programs) finished; no other round started.
    assert len(generated) == 2
    assert report.timed_out and report.generated == 2
    assert report.best_train_score == min(c.score for c in store.candidates(cid) if c.valid)
    assert report.best_test_score is not None  # the best so far is still re-scored on test
    assert store.get_campaign(cid).status == "interrupted"  # budget left: resumable

    monkeypatch.undo()
    before = {(c.id, c.hash, c.score) for c in store.candidates(cid)}
    report = run_campaign(store, cid, timeout=3600)
    assert not report.timed_out and store.get_campaign(cid).status == "finished"
    assert before <= {(c.id, c.hash, c.score) for c in store.candidates(cid)}
    assert sum(c.operator not in NOT_LLM_WRITTEN for c in store.candidates(cid)) == 8


def test_timeout_counts_from_the_call_and_must_be_positive(home):
    store = Store()
    cid = create_campaign(store, task="branin", agent="hollm", budget=12, seed=1,
                          config={"agent_options": {"proposer": "sobol", "b": 4}})
    for bad, error in [(0, ValueError), (-1.0, ValueError), (math.nan, ValueError), ("60", TypeError)]:
        with pytest.raises(error, match="timeout"):
            run_campaign(store, cid, timeout=bad)
    assert store.get_campaign(cid).status == "created"  # a refused timeout runs nothing
    # Time already up at the first check: the start is committed, then nothing more.
    report = run_campaign(store, cid, timeout=1e-9)
    assert report.timed_out and store.get_campaign(cid).status == "interrupted"
    assert campaign_summary(store, cid)["evaluations"] < 12


@pytest.mark.parametrize(("agent", "task", "budget", "options"), [
    ("hollm", "hartmann-3", 10, {"proposer": "gaussian", "b": 2, "n_initial": 4}),
    ("zo-riemannian", "branin", 16, {"eta": 0.5, "mu": 0.5}),
])
def test_resumed_campaign_proposes_what_an_uninterrupted_one_does(home, agent, task, budget, options):
    store = Store()
    opts = {"agent_options": options}
    whole = create_campaign(store, task=task, agent=agent, budget=budget, seed=5, config=opts)
    split = create_campaign(store, task=task, agent=agent, budget=budget, seed=5, config=opts)
    run_campaign(store, whole)
    with pytest.raises(KeyboardInterrupt):
        run_campaign(store, split, _interrupt_after(6))
    run_campaign(store, split)
    points = [[t.params for t in store.trials(store.get_campaign(c).config["study_id"])]
              for c in (whole, split)]
    assert points[0] == points[1] and len(points[0]) == budget


@pytest.mark.slow
def test_grpo_campaign_versions_adapters_and_resumes_from_the_last(home):
    """--rl grpo on the bundled NF4 model: an adapter version per RL step, restored on resume."""
    from optiforge.agents.evolution.grpo import GRPOLearner
    from optiforge.agents.registry import get_agent
    from optiforge.platform.campaigns.program import ProgramCampaign
    from optiforge.platform.executors import make_executor
    from optiforge.platform.llm import clear_cache, from_spec

    store = Store()
    config = {"agent_options": {"samples_per_prompt": 4, "max_new_tokens": 24}, "rl_every": 1}
    cid = create_campaign(store, task="binpacking", budget=8, llm="smollm2", rl="grpo",
                          config=config, seed=0)
    run_campaign(store, cid)
    adapters = store.artifacts(cid, kind="adapter")
    assert [a.meta["step"] for a in adapters] == [1.0, 2.0]
    assert all({"mean_reward", "kl", "loss"} <= set(a.meta) for a in adapters)
    # Only the newest version keeps its optimizer state; the older keeps adapter and step.
    old_state, new_state = (torch_load(Path(a.path) / "learner_state.pt") for a in adapters)
    assert "optimizer" not in old_state and old_state["step"] == 1
    assert "optimizer" in new_state and (Path(adapters[0].path) / "adapter_model.safetensors").is_file()
    summary = campaign_summary(store, cid)
    assert summary["rl_steps"] == 2 and len(summary["reward_trend"]) == 2
    trained = {n: p.detach().clone() for n, p in from_spec("smollm2").model.named_parameters()
               if "lora_" in n}

    # What a resumed process does: a fresh model, a fresh learner, then the stored state.
    clear_cache()
    llm = from_spec("smollm2")
    learner = GRPOLearner(llm, seed=0)
    campaign = store.get_campaign(cid)
    task = get_task("binpacking")
    agent = get_agent("evolution").factory(task, campaign.config["agent_options"], llm, 0)
    with make_executor("local", workers=1) as ex:
        step = ProgramCampaign(store, campaign, task, agent, ex, learner=learner, llm=llm, rl_every=1)
        assert step.restore()
    assert learner.step_count == 2
    restored = {n: p.detach() for n, p in llm.model.named_parameters() if "lora_" in n}
    assert restored.keys() == trained.keys() and trained
    assert all(torch_equal(restored[n], trained[n]) for n in trained)


def torch_load(path):
    import torch

    return torch.load(path, weights_only=True)


def torch_equal(a, b) -> bool:
    import torch

    return bool(torch.equal(a, b))


def test_rl_auto_means_grpo_only_where_the_model_trains_in_process(home, replay_file):
    store = Store()
    local = create_campaign(store, task="binpacking", budget=4, llm="smollm2", rl="auto")
    remote = create_campaign(store, task="binpacking", budget=4,
                             llm="openai:http://127.0.0.1:9/v1#m", rl="auto")
    replay = create_campaign(store, task="binpacking", budget=4, llm=f"replay:{replay_file}",
                             rl="auto")
    hollm = create_campaign(store, task="branin", agent="hollm", budget=4, rl="auto")
    rl = {cid: store.get_campaign(cid).config["rl"] for cid in (local, remote, replay, hollm)}
    assert rl == {local: "grpo", remote: "none", replay: "none", hollm: "none"}
