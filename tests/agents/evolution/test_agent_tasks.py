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
    code_hash,
)
from optiforge.agents.evolution.population import scores_equal
from optiforge.heuristics import get_task
from optiforge.heuristics.binpacking.seeds import BEST_FIT, FIRST_FIT
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
    # A verbatim copy of the best-fit seed (the parser prepends `import math` before numpy's
    # import, which the seed has after it) is the seed: no reward for copying, whoever the parent.
    best_fit = agent.population.seed_hashes[0]
    assert p.programs[1].duplicate_of == best_fit and p.programs[1].hash == best_fit
    assert rewards[1] == R.duplicate
    assert evs[2].score > base and R.duplicate < rewards[2] < 0
    assert rewards[3] == R.invalid
    assert agent.best.hash == p.programs[0].hash


def fenced(code: str) -> str:
    """A response that carries a whole program, imports included."""
    return f"{{{{The idea of the algorithm is to try this}}}}\n```python\n{code}```\n"


SMOOTH = """import numpy as np
import math


def priority(item, bins):
    waste = bins - item
    fit = np.array([math.exp(-w / item) for w in waste])
    return fit - 0.01 * waste
"""
# Rewrites of the seeds and of SMOOTH that Python ignores: (the program it copies, response).
COPIES = {
    "seed verbatim": (BEST_FIT, fenced(BEST_FIT)),
    "no math import (the parser prepends it first)": (
        BEST_FIT, fenced(BEST_FIT.replace("import math\n", ""))),
    "imports reordered": (FIRST_FIT, fenced(FIRST_FIT.replace(
        "import numpy as np\nimport math", "import math\nimport numpy as np"))),
    "imports on one line, repeated": (FIRST_FIT, fenced(FIRST_FIT.replace(
        "import numpy as np\nimport math", "import numpy as np, math\nimport math"))),
    "blank lines and comments": (BEST_FIT, fenced(BEST_FIT.replace(
        "    return", "    # the tightest bin wins\n\n\n    return").replace("item)\n", "item)  # done\n"))),
    "docstring changed, annotations dropped": (FIRST_FIT, respond(
        "take the first bin", '    """Lowest index first."""\n    return -np.arange(len(bins), dtype=float)')),
    "bare code, no fence, a main block": (BEST_FIT, "def priority(item, bins):\n    return -(bins - item)\n\n"
                                          "if __name__ == '__main__':\n    print(priority(1, [2]))\n"),
    "locals renamed": (SMOOTH, fenced(SMOOTH.replace("waste", "room").replace("fit", "score")
                                      .replace(" w ", " r ").replace("(-w", "(-r"))),
    "locals renamed, imports swapped, commented": (SMOOTH, fenced(
        SMOOTH.replace("waste", "slack").replace("import numpy as np\nimport math", "import math\nimport numpy as np")
        .replace("    return", "    # blend\n    return"))),
}
# Programs that differ from the seeds and SMOOTH: none may be merged with anything.
DIFFERENT = {
    "best fit, changed constant": "    return -(bins - 0.9 * item)",
    "best fit, changed operator": "    return -(bins + item)",
    "best fit, sign flipped": "    return bins - item",
    "first fit, changed constant": "    return -np.arange(len(bins), dtype=float) * 2.0",
    "first fit, changed operator": "    return -np.arange(len(bins), dtype=float) + item",
    "smooth, changed constant": SMOOTH.split(":\n", 1)[1].replace("0.01", "0.02").rstrip(),
    "smooth, changed operator": SMOOTH.split(":\n", 1)[1].replace("fit - 0.01", "fit + 0.01").rstrip(),
}


def evaluated_round(agent, task, known):
    """One round, scored like the orchestrator: a duplicate reuses the stored evaluation."""
    p = agent.propose()
    evs = []
    for x in p.programs:
        if x.code is None:
            evs.append(Evaluation.invalid(x.error))
            continue
        if x.hash not in known:
            known[x.hash] = evaluate_in_process(task, x.code)
        evs.append(known[x.hash])
    return p, evs, agent.observe(p, evs)


def test_semantic_copies_get_the_duplicate_reward_and_different_programs_do_not():
    task = get_task("binpacking")
    new = [fenced(SMOOTH), *(respond("vary", body) for body in DIFFERENT.values())]
    copies = [response for _, response in COPIES.values()]
    llm = ScriptedLLM(new + copies)
    config = EvolutionConfig(operator_weights={"replacement": 1.0}, samples_per_prompt=len(new))
    agent = EvolutionAgent(task, llm, config, seed=3)
    known: dict = {}
    evaluated_round(agent, task, known)
    seeds = set(agent.population.seed_hashes)

    p, evs, rewards = evaluated_round(agent, task, known)
    hashes = [x.hash for x in p.programs]
    assert None not in hashes and len(set(hashes)) == len(new) and not set(hashes) & seeds
    assert [x.duplicate_of for x in p.programs] == [None] * len(new)
    for ev, reward in zip(evs, rewards, strict=True):
        assert ev.valid
        if not any(scores_equal(ev.score, s) for s in p.parent_scores):
            assert reward != R.duplicate
    assert hashes[0] == code_hash(SMOOTH)

    agent.config.samples_per_prompt = len(copies)
    p, _, rewards = evaluated_round(agent, task, known)
    expected = {BEST_FIT: code_hash(BEST_FIT), FIRST_FIT: code_hash(FIRST_FIT), SMOOTH: code_hash(SMOOTH)}
    for (name, (original, _)), prog, reward in zip(COPIES.items(), p.programs, rewards, strict=True):
        assert prog.code is not None, name
        assert prog.duplicate_of == expected[original], name
        assert reward == R.duplicate, name


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


@pytest.mark.parametrize("name", ["binpacking", "tsp"])
def test_every_term_of_a_task_with_features_runs_on_its_seeds(name):
    # The features are the task author's code: a typo in one would make every graft invalid.
    from optiforge.agents.evolution.graft import GraftableTask, all_terms, graft, graftable

    task = get_task(name)
    assert isinstance(task, GraftableTask)
    seeds = [code for code in task.seeds.values() if graftable(code, task.entry_point)]
    assert seeds, "a seed the graft operator can start from"
    for code in seeds:
        for term in all_terms(task):
            child = graft(code, task, term)
            ev = evaluate_in_process(task, child)  # trusted: the task's seed and its own features
            assert ev.valid, (term, ev.error)
