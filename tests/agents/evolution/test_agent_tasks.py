"""The agent on the project's real heuristic tasks, scored by the tasks' trusted in-process helper."""

from __future__ import annotations

import pytest
from evo_helpers import ScriptedLLM, respond

from optiforge.agents.evolution import (
    OPERATORS,
    EvolutionAgent,
    EvolutionConfig,
    RewardConfig,
    build_prompt,
)
from optiforge.heuristics import get_task
from optiforge.heuristics.inprocess import evaluate_in_process
from optiforge.types import Evaluation

R = RewardConfig()

# FunSearch-style Weibull heuristic (Romera-Paredes et al. 2024): known to beat best fit.
FUNSEARCH_LIKE = """    max_cap = max(bins)
    score = (bins - max_cap) ** 2 / item + bins ** 2 / (item ** 2)
    score += bins ** 2 / item ** 3
    score[bins > item] = -score[bins > item]
    score[1:] -= score[:-1]
    return score"""
BEST_FIT_COPY = respond("put the item in the fullest bin", "    return -(bins - item)")
WORSE = respond("prefer bins with a middle amount of space", "    return -np.abs(bins - item - 30)")


def run_round(agent, task):
    p = agent.propose()
    evs = [evaluate_in_process(task, x.code) if x.code else Evaluation.invalid(x.error) for x in p.programs]
    return p, evs, agent.observe(p, evs)


def test_binpacking_round_tiers():
    task = get_task("binpacking")
    llm = ScriptedLLM([
        respond("amplify differences between bins relative to item size", FUNSEARCH_LIKE),
        BEST_FIT_COPY,
        WORSE,
        "{{The idea of the algorithm is to}}\n```python\ndef priority(item, bins):\n    return bins[\n```",
    ])
    agent = EvolutionAgent(task, llm, EvolutionConfig(operator_weights={"replacement": 1.0}), seed=1)
    run_round(agent, task)
    assert agent.best.seed_name == "best_fit"
    p, evs, rewards = run_round(agent, task)
    # The task's missing import (math) is prepended; numpy, already imported, is not repeated.
    assert all(x.code is None or (x.code.startswith("import math\n") and x.code.count("import numpy") == 1)
               for x in p.programs)
    base = p.baseline_score
    assert evs[0].score < base and rewards[0] > 1.0
    assert rewards[1] == R.duplicate or p.parents != [agent.population.seed_hashes[0]]
    assert evs[2].score > base and R.duplicate < rewards[2] < 0
    assert rewards[3] == R.invalid
    assert agent.best.hash == p.programs[0].hash


def test_tsp_round():
    task = get_task("tsp")
    farthest = (
        "{{The idea of the algorithm is to look ahead to the destination}}\n```python\n"
        "def select_next_node(current_node, destination_node, unvisited_nodes, distance_matrix):\n"
        "    d = distance_matrix[current_node, unvisited_nodes] + 0.3 * distance_matrix[unvisited_nodes, destination_node]\n"
        "    return int(unvisited_nodes[np.argmin(d)])\n```"
    )
    wrong = "```python\ndef select_next_node(node, unvisited):\n    return unvisited[0]\n```"
    agent = EvolutionAgent(task, ScriptedLLM([farthest, wrong]), EvolutionConfig(samples_per_prompt=2), seed=0)
    run_round(agent, task)
    p, evs, rewards = run_round(agent, task)
    assert p.programs[0].code is not None and evs[0].valid
    assert p.programs[1].code is None and "select_next_node" in p.programs[1].error
    assert rewards[1] == R.invalid
    assert rewards[0] != R.invalid


@pytest.mark.parametrize("name", ["binpacking", "tsp"])
@pytest.mark.parametrize("operator", OPERATORS)
def test_real_task_prompts_fit_default_budget(name, operator):
    task = get_task(name)
    agent = EvolutionAgent(task, ScriptedLLM(["x"]))
    run_round(agent, task)
    seeds = agent.population.ranked()
    parents = {"initialization": seeds[:1], "crossover": (seeds * 2)[:2]}.get(operator, seeds[:1])
    library = [f"component {i}: a penalty on the remaining capacity" for i in range(20)]
    prompt = build_prompt(operator, task, parents, library, agent.config.max_prompt_chars)
    assert len(prompt) <= agent.config.max_prompt_chars
    assert task.entry_point in prompt
