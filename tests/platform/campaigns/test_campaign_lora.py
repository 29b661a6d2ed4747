"""`--lora bilora`: the campaign's rl_options reach the learner; bad values are refused up front.

The command line's bad `--lora` values (exit 2, one `error:` line) are in
tests/platform/cli/test_campaign_cli.py::test_bad_input_exits_2_with_one_line.
"""

from __future__ import annotations

import pytest

from optiforge.platform.campaigns import create_campaign
from optiforge.platform.campaigns.runner import _make_learner
from optiforge.platform.store import Store


def test_lora_option_is_stored_and_validated(home, replay_file):
    store = Store()
    cid = create_campaign(store, task="binpacking", budget=4, llm="smollm2", rl="auto",
                          config={"rl_options": {"lora": "bilora"}})
    cfg = store.get_campaign(cid).config
    assert cfg["rl"] == "grpo" and cfg["rl_options"] == {"lora": "bilora"}
    before = len(store.list_campaigns())
    with pytest.raises(ValueError, match="lora"):
        create_campaign(store, task="binpacking", budget=4, llm="smollm2", rl="grpo",
                        config={"rl_options": {"lora": "dora"}})
    with pytest.raises(ValueError, match="lora"):   # no RL: nothing to apply it to
        create_campaign(store, task="binpacking", budget=4, llm=f"replay:{replay_file}",
                        config={"rl_options": {"lora": "bilora"}})
    with pytest.raises(TypeError, match="rl_options"):
        create_campaign(store, task="binpacking", budget=4, llm="smollm2", config={"rl_options": "bilora"})
    assert len(store.list_campaigns()) == before


def test_rl_options_reach_the_learner(monkeypatch):
    import optiforge.agents.evolution.grpo as grpo

    seen = {}

    class Recorder:
        def __init__(self, llm, **options):
            seen.update(options, llm=llm)

    monkeypatch.setitem(grpo.LEARNERS, "bilora", Recorder)
    learner = _make_learner("the-llm", 3, {"temperature": 0.5, "max_new_tokens": 32},
                            {"lora": "bilora", "rho": 0.1})
    assert type(learner) is Recorder
    # the campaign's memory defaults (one sequence per backward, recomputed activations) ride along
    assert seen == {"llm": "the-llm", "seed": 3, "temperature": 0.5, "max_completion_tokens": 32, "rho": 0.1,
                    "micro_batch_size": 1, "gradient_checkpointing": True}
    seen.clear()
    _make_learner("the-llm", 3, {}, {"lora": "bilora", "micro_batch_size": 4, "gradient_checkpointing": False})
    assert seen["micro_batch_size"] == 4 and seen["gradient_checkpointing"] is False   # rl_options win

