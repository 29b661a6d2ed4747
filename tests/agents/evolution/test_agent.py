import json

import numpy as np
import pytest
from evo_helpers import (
    BEST_FIT,
    FIRST_FIT,
    WORST_FIT,
    ScriptedLLM,
    TinyBinPacking,
    evaluate_code,
    respond,
)

from optiforge.agents.evolution import (
    EvolutionAgent,
    EvolutionConfig,
    Proposal,
    RewardConfig,
    relative_delta,
)
from optiforge.agents.evolution.canonical import code_hash
from optiforge.types import Evaluation

R = RewardConfig()
IMPROVE = respond("prefer the bin left tightest", "    return -(bins - item)")
SYNTAX = "{{The idea of the algorithm is to break}}\n```python\ndef priority(item, bins)\n    return bins\n```"
WORST_COPY = "{{The idea of the algorithm is to copy}}\n```python\ndef priority(item, bins):\n    # a comment\n    return bins - item\n```"
SAME_SCORE = respond("rank by capacity", "    return bins")
WORSE_THAN_BF = respond("leave 20 units of slack", "    return -np.abs(bins - item - 20)")


def run_round(agent: EvolutionAgent, task) -> tuple[Proposal, list[Evaluation], list[float]]:
    """The caller's part of a round: evaluate (reusing stored results for duplicates)."""
    p = agent.propose()
    evs = [evaluate_code(task, prog.code) for prog in p.programs]
    return p, evs, agent.observe(p, evs)


def worst_seed_task() -> TinyBinPacking:
    return TinyBinPacking(seeds={"worst_fit": WORST_FIT}, baseline="worst_fit")


def test_seed_proposal_fills_pool_without_llm(task):
    llm = ScriptedLLM([IMPROVE])
    agent = EvolutionAgent(task, llm)
    assert agent.best is None
    p = agent.propose()
    assert p.operator == "seed" and p.round == 0 and not llm.calls
    assert [prog.code for prog in p.programs] == [BEST_FIT, FIRST_FIT]
    assert p.programs[0].idea.startswith("Score each feasible bin")  # from the seed's docstring
    _, evs, rewards = None, [evaluate_code(task, x.code) for x in p.programs], None
    rewards = agent.observe(p, evs)
    assert rewards == [0.0, 0.0]
    assert len(agent.population) == 2 and agent.round == 1
    assert agent.best.score == min(e.score for e in evs)
    assert [agent.population.get(h).seed_name for h in agent.population.seed_hashes] == ["best_fit", "first_fit"]


def test_round_rewards_on_every_tier_and_llm_call():
    task = worst_seed_task()
    llm = ScriptedLLM([IMPROVE, SYNTAX, WORST_COPY, SAME_SCORE])
    agent = EvolutionAgent(task, llm, EvolutionConfig(operator_weights={"injection": 1.0}, temperature=0.7))
    run_round(agent, task)
    p, evs, rewards = run_round(agent, task)
    call = llm.calls[0]
    assert call["n"] == 4 and len(call["prompts"]) == 1 and call["temperature"] == 0.7
    assert isinstance(call["seed"], int) and call["seed"] == p.llm_seed
    assert p.operator == "injection" and p.parents == [code_hash(WORST_FIT)]
    assert p.baseline_score == pytest.approx(evaluate_code(task, WORST_FIT).score)
    improve, syntax, copy, same = p.programs
    assert improve.code is not None and improve.duplicate_of is None
    assert syntax.code is None and "syntax error" in syntax.error
    assert copy.duplicate_of == code_hash(WORST_FIT)
    assert same.duplicate_of is None
    # Best fit vs worst fit: Δ clips to 1 -> reward 2; the rest are tiers.
    assert rewards == [pytest.approx(2.0), R.invalid, R.duplicate, R.duplicate]
    assert agent.best.hash == improve.hash and agent.counter == 0
    assert improve.hash in agent.population and same.hash not in agent.population


def test_worse_rewards_negative_and_counter_grows():
    # Best fit is the only seed, so the replacement prompt's parent (h_base) is best fit.
    task = TinyBinPacking(seeds={"best_fit": BEST_FIT})
    slack_30 = WORSE_THAN_BF.replace("- 20", "- 30")
    llm = ScriptedLLM([WORSE_THAN_BF, slack_30])
    cfg = EvolutionConfig(samples_per_prompt=1, operator_weights={"replacement": 1.0}, collapse_C=100, delta0=0.0)
    agent = EvolutionAgent(task, llm, cfg)
    run_round(agent, task)
    best_fit = evaluate_code(task, BEST_FIT).score
    p, evs, rewards = run_round(agent, task)
    assert p.parents == [code_hash(BEST_FIT)] and p.baseline_score == best_fit
    assert evs[0].valid and evs[0].score > best_fit
    assert R.duplicate < rewards[0] < 0
    assert rewards[0] == pytest.approx(-R.worse_weight * relative_delta(evs[0].score, best_fit))
    assert agent.counter == 1
    run_round(agent, task)  # worse than best fit again, whichever parent: no new best
    assert agent.counter == 2 and agent.best.hash == code_hash(BEST_FIT)


def test_batch_and_history_duplicates(task):
    llm = ScriptedLLM([WORSE_THAN_BF, WORSE_THAN_BF.replace("slack", "room")])
    agent = EvolutionAgent(task, llm, EvolutionConfig(samples_per_prompt=2, collapse_C=100))
    run_round(agent, task)
    p, _, rewards = run_round(agent, task)
    assert p.programs[0].duplicate_of is None and p.programs[1].duplicate_of == p.programs[0].hash
    assert rewards[1] == R.duplicate
    p, _, rewards = run_round(agent, task)  # seen in an earlier round
    assert all(prog.duplicate_of == prog.hash for prog in p.programs)
    assert rewards == [R.duplicate, R.duplicate]


def test_injection_component_library_shown_in_later_prompts(task):
    llm = ScriptedLLM([respond("add a waste term", "    return -(bins - item) - 0.01 * (bins - item) ** 2", component="quadratic waste penalty")])
    agent = EvolutionAgent(task, llm, EvolutionConfig(samples_per_prompt=1, operator_weights={"injection": 1.0}, collapse_C=100))
    run_round(agent, task)
    p1, _, _ = run_round(agent, task)
    assert "(none yet)" in p1.prompt
    assert [c.description for c in agent.population.library] == ["quadratic waste penalty"]
    p2 = agent.propose()
    assert "- quadratic waste penalty" in p2.prompt


def test_collapse_after_C_stagnant_rounds():
    # Slack 5 beats the worst-fit seed, each later slack is worse: one new best, then 3 stagnant rounds.
    task = worst_seed_task()
    variants = [respond(f"slack {k}", f"    return -np.abs(bins - item - {k})") for k in range(5, 60, 5)]
    llm = ScriptedLLM(variants)
    agent = EvolutionAgent(task, llm, EvolutionConfig(samples_per_prompt=1, operator_weights={"replacement": 1.0}, delta0=0.0, collapse_C=3))
    observed: dict[str, float] = {}
    p, evs, _ = run_round(agent, task)
    seed = p.programs[0].hash
    stagnant = 0
    while not agent.collapse_rounds:
        size_before = len(agent.population)
        prev_best = agent.best.score
        p, evs, _ = run_round(agent, task)
        observed.update({x.hash: ev.score for x, ev in zip(p.programs, evs, strict=True) if ev.valid})
        stagnant = 0 if agent.best.score < prev_best else stagnant + 1
        assert agent.round < 20
    assert stagnant == 3 and agent.counter == 0
    assert size_before == 4  # the seed and all three LLM programs, before the collapse
    # The collapse keeps the seed and the best program ever observed (here an LLM's, not the seed).
    best = min(observed, key=observed.get)
    assert best != seed and observed[best] < evaluate_code(task, WORST_FIT).score
    assert set(agent.population.entries) == {seed, best}
    assert agent.best.hash == best


def test_state_dict_round_trip_gives_identical_next_proposals(task):
    def script(prompt: str, i: int) -> str:
        k = (i * 7) % 23
        return respond(f"variant {k}", f"    return -(bins - item) - {k / 100} * bins")

    cfg = EvolutionConfig(samples_per_prompt=2, collapse_C=4, delta0=0.05)
    a = EvolutionAgent(task, ScriptedLLM(script), cfg, seed=3)
    for _ in range(4):
        run_round(a, task)
    state = json.loads(json.dumps(a.state_dict()))
    b = EvolutionAgent(task, ScriptedLLM(script), cfg, seed=999)
    b.load_state_dict(state)
    b.llm._i = a.llm._i  # the same LLM outputs from here on
    for _ in range(5):
        pa, pb = a.propose(), b.propose()
        assert (pa.prompt, pa.operator, pa.parents, pa.llm_seed) == (pb.prompt, pb.operator, pb.parents, pb.llm_seed)
        evs = [evaluate_code(task, x.code) for x in pa.programs]
        assert a.observe(pa, evs) == b.observe(pb, evs)
    assert a.state_dict() == b.state_dict()


def test_proposal_serialises(task):
    agent = EvolutionAgent(task, ScriptedLLM([IMPROVE]), EvolutionConfig(samples_per_prompt=1))
    run_round(agent, task)
    p = agent.propose()
    q = Proposal.from_dict(json.loads(json.dumps(p.to_dict())))
    assert q == p


def test_all_seeds_invalid_falls_back_to_scratch_initialization():
    task = TinyBinPacking(seeds={"broken": "def priority(item, bins):\n    return None\n"}, baseline="broken")
    llm = ScriptedLLM([IMPROVE])
    agent = EvolutionAgent(task, llm, EvolutionConfig(samples_per_prompt=1))
    run_round(agent, task)
    assert len(agent.population) == 0
    p, evs, rewards = run_round(agent, task)
    assert p.operator == "initialization" and p.parents == [] and p.baseline_score is None
    assert "from scratch" in p.prompt and rewards == [1.0]
    assert agent.best is not None


def test_scratch_initialization_baseline_is_baseline_seed(task):
    agent = EvolutionAgent(task, ScriptedLLM([IMPROVE]), EvolutionConfig(samples_per_prompt=1, operator_weights={"initialization": 1.0}, init_from_seed_prob=0.0))
    run_round(agent, task)
    p = agent.propose()
    assert p.parents == [] and p.baseline_score == pytest.approx(evaluate_code(task, BEST_FIT).score)


def test_operator_mix_follows_weights(task):
    agent = EvolutionAgent(task, ScriptedLLM([IMPROVE]), EvolutionConfig(samples_per_prompt=1), seed=0)
    run_round(agent, task)
    ops = [agent._choose()[0] for _ in range(2000)]
    freq = {op: ops.count(op) / len(ops) for op in set(ops)}
    for op, w in agent.config.operator_weights.items():
        assert freq[op] == pytest.approx(w, abs=0.04)


def test_observe_validation(task):
    agent = EvolutionAgent(task, ScriptedLLM([IMPROVE]))
    p = agent.propose()
    with pytest.raises(ValueError, match="evaluations"):
        agent.observe(p, [Evaluation(valid=True, score=1.0)])
    with pytest.raises(TypeError, match="evaluations"):
        agent.observe(p, [1.0, 2.0])  # type: ignore[list-item]
    agent.observe(p, [evaluate_code(task, x.code) for x in p.programs])
    with pytest.raises(ValueError, match="round"):
        agent.observe(p, [evaluate_code(task, x.code) for x in p.programs])
    with pytest.raises(TypeError, match="proposal"):
        agent.observe("p", [])  # type: ignore[arg-type]


def test_state_dict_validation(task):
    agent = EvolutionAgent(task, ScriptedLLM([IMPROVE]))
    state = agent.state_dict()
    with pytest.raises(ValueError, match="state"):
        EvolutionAgent(worst_seed_task().__class__(name="other"), ScriptedLLM([IMPROVE])).load_state_dict(state)
    with pytest.raises(ValueError, match="state"):
        agent.load_state_dict({"version": 0})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"samples_per_prompt": 0}, "samples_per_prompt"),
        ({"pool_size": 2.5}, "pool_size"),
        ({"delta0": 1.5}, "delta0"),
        ({"collapse_C": 0}, "collapse_C"),
        ({"temperature": -1}, "temperature"),
        ({"operator_weights": {"mutate": 1.0}}, "operator_weights"),
        ({"operator_weights": {"injection": -1.0}}, "operator_weights"),
        ({"operator_weights": {"injection": 0.0}}, "operator_weights"),
        ({"operator_sampling": {"mutate": {"temperature": 0.5}}}, "operator_sampling"),
        ({"operator_sampling": {"tweak": {"seed": 1}}}, r"operator_sampling\['tweak'\]"),
        ({"operator_sampling": {"tweak": {"top_p": 1.5}}}, r"operator_sampling\['tweak'\]\.top_p"),
        ({"tune_every": -1}, "tune_every"),
        ({"tune_budget": 1}, "tune_budget"),
    ],
)
def test_config_validation(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):  # wrong type: TypeError
        EvolutionConfig(**kwargs)


def test_config_dict_round_trip_and_unknown_field():
    cfg = EvolutionConfig(pool_size=8)
    assert EvolutionConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ValueError, match="unknown"):
        EvolutionConfig.from_dict({"bogus": 1})


def test_agent_argument_validation(task):
    with pytest.raises(TypeError, match="task"):
        EvolutionAgent(object(), ScriptedLLM([IMPROVE]))
    with pytest.raises(TypeError, match="llm"):
        EvolutionAgent(task, object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="task"):
        EvolutionAgent(TinyBinPacking(seeds={}), ScriptedLLM([IMPROVE]))
    with pytest.raises(TypeError, match="seed"):
        EvolutionAgent(task, ScriptedLLM([IMPROVE]), seed="1")  # type: ignore[arg-type]


def test_end_to_end_search_improves_on_seeds():
    """A scripted 'LLM' that proposes parametric variants: the loop must find the better ones."""
    task = worst_seed_task()
    def script(prompt: str, i: int) -> str:
        rng = np.random.default_rng(i)
        a, b = rng.uniform(0, 2, size=2).round(3)
        if i % 5 == 4:
            return "Sure! " + script(prompt, i + 1001)[:40]  # truncated garbage -> invalid
        return respond(f"mix slack {a} with index {b}", f"    return -(bins - item) ** {1 + a} - {b} * np.arange(len(bins))")

    agent = EvolutionAgent(task, ScriptedLLM(script), EvolutionConfig(pool_size=6), seed=0)
    run_round(agent, task)
    seed_best = agent.best.score
    all_rewards = []
    for _ in range(12):
        p, evs, rewards = run_round(agent, task)
        all_rewards += rewards
        assert len(agent.population) <= 6 + 2
        for prog, ev, r in zip(p.programs, evs, rewards, strict=True):
            if prog.code is None or not ev.valid:
                assert r == R.invalid
            elif r not in (R.duplicate,):
                assert (r > 1.0) == (ev.score < p.baseline_score)
    assert agent.best.score < 0.2 * seed_best
    assert agent.best.operator != "seed"
    assert R.invalid in all_rewards and any(r > 1.0 for r in all_rewards)


TWEAKED = respond("add a small weight on the free space", "    return -(bins - item) + 0.05 * bins")


def test_tweak_uses_its_own_sampling_and_shows_pool_examples(task):
    cfg = EvolutionConfig(samples_per_prompt=2, operator_weights={"tweak": 1.0},
                          operator_sampling={"tweak": {"temperature": 0.3, "top_p": 0.9}})
    llm = ScriptedLLM([TWEAKED])
    agent = EvolutionAgent(task, llm, cfg, seed=0)
    run_round(agent, task)  # the seeds
    p, _, _ = run_round(agent, task)
    assert p.operator == "tweak" and llm.calls[-1]["temperature"] == 0.3
    assert cfg.sampling("tweak") == (0.3, 0.9) and cfg.sampling("injection") == (cfg.temperature, cfg.top_p)
    # the edited heuristic first, then the other pool heuristics as examples
    assert len(p.parents) == len(task.seeds) and "Example 1" in p.prompt


WEIGHTED = respond("weigh the free space", "    return -(bins - item) + 2.0 * bins")  # worst fit


def test_tune_target_every_k_rounds_best_untuned_program_with_constants(task):
    cfg = EvolutionConfig(samples_per_prompt=1, tune_every=2, tune_budget=10, tune_batch=3)
    agent = EvolutionAgent(task, ScriptedLLM([WEIGHTED]), cfg, seed=0)
    assert agent.tune_target() is None  # before the seeds
    run_round(agent, task)
    assert agent.round == 1 and agent.tune_target() is None  # not a tune round
    run_round(agent, task)  # an LLM round: the weighted program joins the pool
    request = agent.tune_target()
    assert request is not None and "2.0 * bins" in request.parent.code  # the seeds have no constants
    assert (request.budget, request.batch) == (10, 3)
    child = request.parent.code.replace("2.0", "0.5")
    p = agent.tune_proposal(request, child)
    assert p.operator == "tune" and p.parents == [request.parent.hash] and p.completions == []
    ev = evaluate_code(task, child)
    agent.observe(p, [ev])
    assert agent.round == 3
    agent.round = 4  # the next tune round: parent and child are both marked as tuned
    assert agent.tune_target() is None
    restored = EvolutionAgent(task, ScriptedLLM([TWEAKED]), cfg, seed=1)
    restored.load_state_dict(json.loads(json.dumps(agent.state_dict())))
    restored.round = 4
    assert restored.tune_target() is None
    assert EvolutionAgent(task, ScriptedLLM([TWEAKED]), EvolutionConfig(tune_every=0)).config.tune_every == 0
