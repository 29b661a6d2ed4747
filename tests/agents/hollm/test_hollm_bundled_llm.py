"""HOLLM with the real bundled model (slow: loads SmolLM2 and generates on the CPU)."""

import pytest
import torch

from optiforge.agents.hollm import HOLLMAgent
from optiforge.blackbox import get_blackbox_task


@pytest.mark.slow
def test_llm_proposer_with_the_bundled_model():
    from optiforge.platform.llm import from_spec

    llm = from_spec("smollm2")  # the NF4 default that users run
    task = get_blackbox_task("branin")
    agent = HOLLMAgent(task.space, {"n_initial": 3, "m": 2, "k": 2, "b": 2, "retries": 0,
                                    "context_points": 8}, llm=llm, seed=0)
    assert agent.proposer_name == "llm"
    seen = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a 135M model on a shared 2-core machine: threads only contend
    try:
        while agent.n_total < 5:
            for p in agent.ask(3 if agent.n_observed == 0 else 2):
                seen.append(p)
                agent.tell(p, task(p))
    finally:
        torch.set_num_threads(threads)
    stats = agent.stats
    # One iteration: one batched generate call with one prompt per chosen region.
    assert stats["llm_calls"] == 1 and stats["llm_prompts"] <= 2
    # Whatever the small model wrote, every point is valid and new; what it got right was used,
    # what it got wrong was dropped (counted) and replaced from the region.
    assert len({tuple(p.values()) for p in seen}) == 5
    assert all(task.space.validate(p) == p for p in seen)
    accounted = sum(stats.get(k, 0) for k in ("llm_candidates", "llm_unparsable",
                                               "llm_outside_region", "llm_duplicates"))
    assert accounted > 0
    assert stats.get("llm_candidates", 0) + stats.get("filled", 0) >= 2
