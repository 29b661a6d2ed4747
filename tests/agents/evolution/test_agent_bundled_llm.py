"""End to end with the REAL bundled model (SmolLM2-135M) and the real sandbox.

Skipped only while those platform pieces are not installed; nothing is mocked.
"""

from __future__ import annotations

import pytest

from optiforge.agents.evolution import EvolutionAgent, EvolutionConfig, RewardConfig
from optiforge.heuristics import get_task
from optiforge.types import Evaluation

pytestmark = pytest.mark.slow


def _backends():
    llm_mod = pytest.importorskip("optiforge.platform.llm")
    if not hasattr(llm_mod, "from_spec"):
        pytest.skip("optiforge.platform.llm.from_spec is not available yet")
    sandbox = pytest.importorskip("optiforge.platform.sandbox")
    return llm_mod.from_spec, sandbox


def test_bundled_model_rounds_parse_evaluate_and_reward():
    from_spec, sandbox = _backends()
    import torch

    task = get_task("binpacking")
    # Full precision: bitsandbytes' 4-bit CPU path is several times slower and this test is about
    # the agent pipeline. One thread: on the shared 2-core CI machine, more threads oversubscribe
    # and generation gets ~7x slower (measured).
    llm = from_spec("smollm2:none")
    cfg = EvolutionConfig(samples_per_prompt=2, max_new_tokens=128, temperature=0.8)
    agent = EvolutionAgent(task, llm, cfg, seed=0)
    r = RewardConfig()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _rounds(agent, task, sandbox, r)
    finally:
        torch.set_num_threads(threads)
    assert agent.round == 3 and agent.best is not None


def _rounds(agent, task, sandbox, r):
    with sandbox.Sandbox(workers=1) as sb:
        for _ in range(3):
            p = agent.propose()
            todo = [x.code for x in p.programs if x.code is not None]
            results = iter(sandbox.evaluate_programs(sb, task, todo) if todo else [])
            evs = [next(results) if x.code is not None else Evaluation.invalid(x.error or "?") for x in p.programs]
            rewards = agent.observe(p, evs)
            assert len(rewards) == len(p.programs)
            if p.operator == "seed":
                assert all(e.valid for e in evs)
                continue
            assert len(p.completions) == 2 and all(c.text for c in p.completions)
            for prog, ev, rew in zip(p.programs, evs, rewards, strict=True):
                assert (prog.code is None) == (prog.error is not None)
                if not ev.valid:
                    assert rew == r.invalid
                else:
                    assert rew == r.duplicate or r.duplicate < rew <= 2.0
