"""Discovery campaigns end to end: real store, real sandbox, replayed LLM responses."""

from __future__ import annotations

from pathlib import Path

import pytest

from optiforge.heuristics.base import get_task
from optiforge.heuristics.inprocess import evaluate_in_process
from optiforge.platform.orchestrator import create_campaign, run_campaign
from optiforge.platform.store import Store


def test_campaign_runs_to_budget_and_stores_everything(home, replay_file):
    store = Store()
    cid = create_campaign(store, task="binpacking", budget=8, llm=f"replay:{replay_file}", seed=0)
    seen = []
    report = run_campaign(store, cid, lambda done, total, best: seen.append((done, total, best)))

    assert store.get_campaign(cid).status == "finished"
    assert seen[-1][0] >= 8 and all(t == 8 for _, t, _ in seen)
    cands = store.candidates(cid)
    generated = [c for c in cands if c.operator != "seed"]
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


def test_bad_campaign_settings_name_the_argument(home, replay_file):
    store = Store()
    spec = f"replay:{replay_file}"
    for kwargs, word in [
        ({"task": "nope", "budget": 3, "llm": spec}, "task"),
        ({"task": "binpacking", "budget": 0, "llm": spec}, "budget"),
        ({"task": "binpacking", "budget": 3, "llm": "nonsense"}, "llm"),
        ({"task": "binpacking", "budget": 3, "llm": spec, "executor": "slurm"}, "executor"),
        ({"task": "binpacking", "budget": 3, "llm": spec, "agent": "x"}, "agent"),
        ({"task": "binpacking", "budget": 3, "llm": spec, "rl": "ppo"}, "rl"),
    ]:
        with pytest.raises(ValueError, match=word):
            create_campaign(store, **kwargs)
    assert store.list_campaigns() == []


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


def test_hollm_campaign_resumes_from_its_stored_state(home):
    from optiforge.blackbox import get_blackbox_task
    from optiforge.platform.blackbox_campaign import BlackboxCampaign

    store = Store()
    cid = create_campaign(store, task="branin", agent="hollm", budget=12, seed=1,
                          config={"agent_options": {"proposer": "sobol", "b": 4}})
    assert store.get_campaign(cid).llm == "none"
    campaign = BlackboxCampaign(store, cid)
    campaign.campaign = store.get_campaign(cid)
    # run the first 8 evaluations, then start over from the store as a resumed process would
    object.__setattr__(campaign.campaign, "budget", 8)
    campaign.run()
    first = [(c.hash, c.score) for c in store.candidates(cid)]
    assert len(first) == 8
    report = run_campaign(store, cid)
    rows = store.candidates(cid)
    assert len(rows) == 12 and [(c.hash, c.score) for c in rows[:8]] == first
    task = get_blackbox_task("branin")
    assert report.best_train_score == min(c.score for c in rows)
    assert report.gap_vs_baseline == pytest.approx(report.best_train_score - task.optimum)
    # stored values are the true objective at the stored points
    import json
    for c in rows:
        assert c.score == pytest.approx(task(json.loads(c.code)))



@pytest.mark.slow
def test_grpo_campaign_versions_adapters_and_resumes_from_the_last(home):
    """--rl grpo on the bundled NF4 model: an adapter version per RL step, restored on resume."""
    from optiforge.agents.evolution.grpo import GRPOLearner
    from optiforge.platform.cli.campaign import campaign_summary
    from optiforge.platform.executors import make_executor
    from optiforge.platform.llm import clear_cache, from_spec
    from optiforge.platform.orchestrator import EvolutionCampaign

    store = Store()
    config = {"agent": {"samples_per_prompt": 4, "max_new_tokens": 24}, "rl_every": 1}
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
    with make_executor("local", workers=1) as ex:
        campaign = EvolutionCampaign(store, cid, llm, ex, learner)
        assert campaign._restore()
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
