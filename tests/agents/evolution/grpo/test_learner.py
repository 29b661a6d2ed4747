"""GRPOLearner: QLoRA updates on the real bundled NF4 SmolLM2, through the TrainableLLM protocol."""

from __future__ import annotations

import math

import pytest
import torch
from grpo_helpers import BAD, GOOD, PROJECTIONS, PROMPT, adapter_weights, moved

from optiforge.agents.evolution.grpo import GRPOLearner
from optiforge.agents.protocols import PolicyLearner
from optiforge.optim.policy_gradient import group_advantages


def test_advantages_keep_the_calm_reward_tiers_in_order() -> None:
    from optiforge.agents.evolution.rewards import calm_reward

    base = 4.0  # best parent's gap %, lower is better
    rewards = [
        calm_reward(None, valid=False, duplicate=False, baseline=base),           # invalid
        calm_reward(4.2, valid=True, duplicate=True, baseline=base),              # duplicate
        calm_reward(4.4, valid=True, duplicate=False, baseline=base),             # new, worse
        calm_reward(3.9, valid=True, duplicate=False, baseline=base),             # improving
    ]
    adv = group_advantages(torch.tensor(rewards))
    assert torch.all(adv[1:] > adv[:-1])
    assert adv[3] > 0 > adv[0]


@pytest.fixture(scope="module")
def llm(fresh_llm):
    return fresh_llm()


@pytest.fixture(scope="module")
def learner(llm):
    with pytest.raises(ValueError, match="target_modules"):
        GRPOLearner(llm, target_modules=["no_such_layer"])
    return GRPOLearner(llm, seed=0)


def test_bad_arguments_raise_errors_naming_them_before_the_model_is_touched(llm, tmp_path) -> None:
    from optiforge.platform.llm import ReplayLLM

    modules = sum(1 for _ in llm.model.modules())
    bad = {
        "lora_r": 0, "lora_alpha": -1.0, "lora_dropout": 1.0, "lr": 0.0, "beta": -0.1,
        "epsilon": 1.5, "max_grad_norm": float("nan"), "num_iterations": 0, "loss_type": "ppo",
        "temperature": 0.0, "max_completion_tokens": 0, "target_modules": [], "seed": -1,
    }
    for name, value in bad.items():
        with pytest.raises(ValueError, match=name):
            GRPOLearner(llm, **{name: value})
    for name, value in {"lora_r": 2.5, "lr": "1e-4", "num_iterations": True}.items():
        with pytest.raises(TypeError, match=name):
            GRPOLearner(llm, **{name: value})
    # Not a TrainableLLM: a spec string, a generator whose weights are not in this process.
    replay = tmp_path / "r.jsonl"
    replay.write_text('{"text": "x"}\n')
    for not_trainable in ("smollm2", ReplayLLM(replay), llm.model):
        with pytest.raises(TypeError, match="llm"):
            GRPOLearner(not_trainable)
    assert sum(1 for _ in llm.model.modules()) == modules  # no adapter was injected


@pytest.mark.slow
def test_qlora_adapter_on_nf4_base_and_bad_groups(llm, learner) -> None:
    from bitsandbytes.nn import Linear4bit

    assert isinstance(learner, PolicyLearner)
    steps = learner.step_count
    # QLoRA: the base stays 4-bit, every projection (7 per block) of every block gets LoRA.
    assert any(isinstance(mod, Linear4bit) for mod in learner.model.modules())
    lora_a = [n for n in adapter_weights(learner) if ".lora_A." in n]
    assert len(lora_a) == PROJECTIONS * llm.model.config.num_hidden_layers
    base_params = sum(p.numel() for p in learner.model.parameters()) - learner.trainable_parameters()
    assert 0 < learner.trainable_parameters() < 0.1 * base_params
    p = llm.format_prompt(PROMPT)
    for groups, match in [
        ([], "groups"),
        ([(p, [GOOD, BAD], [1.0])], "2 completions but 1 rewards"),
        ([(p, [GOOD, BAD], [1.0, float("nan")])], "finite"),
        ([("", [GOOD], [1.0])], "prompt"),
        ([(p, GOOD, [1.0])], "completions"),
    ]:
        with pytest.raises(ValueError, match=match):
            learner.step(groups)
    assert learner.step_count == steps
    with pytest.raises(ValueError, match="directory"):
        learner.load(llm.model.config.name_or_path)


@pytest.mark.slow
def test_one_update_raises_rewarded_over_penalised_logprob(llm, learner) -> None:
    assert learner.step_count == 0
    prompt = llm.format_prompt(PROMPT)
    # Generation runs the NF4 layers in eval mode without grad: where bitsandbytes would pack
    # them for its autograd-less CPU kernel, the update below would leave most layers untrained.
    llm.generate([PROMPT], n=1, max_new_tokens=4, temperature=0.0)
    before = adapter_weights(learner)
    good0, bad0 = learner.sequence_logprob(prompt, GOOD), learner.sequence_logprob(prompt, BAD)
    assert learner.sequence_logprob(prompt, GOOD) == good0  # the measurement itself is deterministic

    stats = learner.step([(prompt, [GOOD, BAD, GOOD, BAD], [1.5, -0.8, 1.2, -0.6])])

    assert stats["step"] == learner.step_count == 1
    assert stats["mean_reward"] == pytest.approx((1.5 - 0.8 + 1.2 - 0.6) / 4)
    # LoRA's B starts at zero: before the first update the policy IS the reference.
    assert stats["kl"] == pytest.approx(0.0, abs=1e-6)
    assert stats["grad_norm"] > 0 and math.isfinite(stats["loss"])
    # B = 0 gives A no gradient on the first step; every B (all 7 projections of every block)
    # must move, which needs gradients to flow back through the frozen NF4 layers.
    assert moved(learner, before) == {n for n in before if ".lora_B." in n}
    good1, bad1 = learner.sequence_logprob(prompt, GOOD), learner.sequence_logprob(prompt, BAD)
    assert (good1 - bad1) - (good0 - bad0) > 0.01
    # The generator shares the model: its next-token distribution has moved too.
    enc = llm.tokenizer(prompt + GOOD, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        live = llm.model(**enc).logits[0, -1]
        with learner.model.disable_adapter():
            base = llm.model(**enc).logits[0, -1]
    assert not torch.allclose(live, base)
    # A second update now measures a positive KL to the (adapter-disabled) reference, and
    # moves A and B of every adapted layer.
    llm.generate([PROMPT], n=1, max_new_tokens=4, temperature=0.0)
    before = adapter_weights(learner)
    stats2 = learner.step([(prompt, [GOOD, BAD], [1.0, -1.0])])
    assert stats2["kl"] > 0 and stats2["step"] == 2
    assert moved(learner, before) == set(before)


@pytest.mark.slow
def test_backend_loading_a_saved_version_serves_it_and_training_continues(llm, learner, tmp_path) -> None:
    # The campaign's cycle: update -> save -> backend.load_adapter(saved) -> sample -> update.
    prompt = llm.format_prompt(PROMPT)
    learner.step([(prompt, [GOOD, BAD], [1.0, -1.0])])
    enc = llm.tokenizer(prompt + GOOD, return_tensors="pt", add_special_tokens=False)

    def last_logits(model) -> torch.Tensor:
        model.eval()
        with torch.no_grad():
            return model(**enc).logits[0, -1].clone()

    current = last_logits(learner.model)
    saved = learner.save(tmp_path / "adapter-v")
    llm.load_adapter(saved)
    # The backend, loading the saved PEFT directory, runs exactly the learner's policy.
    torch.testing.assert_close(last_logits(llm.model), current, rtol=1e-4, atol=1e-4)
    before = adapter_weights(learner)
    assert len(before) == 2 * PROJECTIONS * llm.model.config.num_hidden_layers
    stats = learner.step([(prompt, [GOOD, BAD], [1.0, -1.0])])
    assert stats["grad_norm"] > 0
    assert moved(learner, before) == set(before)  # A and B of every layer moved: our adapter was trained
    # ... and the generator's model now runs the newer weights, not the loaded snapshot.
    assert not torch.allclose(last_logits(llm.model), current, rtol=1e-4, atol=1e-4)
