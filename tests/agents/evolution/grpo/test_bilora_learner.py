"""--lora bilora: the GRPO learner with peft's second adapter, on a tiny random Llama (no download).

The bundled-model tests cover the 4-bit path of the shared base class; here the plumbing is
what is under test: both adapters in the update's forward, primary descends, auxiliary ascends
and is clipped, only the primary is active afterwards and on disk, and a version reloads.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

pytest.importorskip("peft")
transformers = pytest.importorskip("transformers")

from optiforge.agents.evolution.grpo import (  # noqa: E402
    LORA_VARIANTS,
    BiLoRAGRPOLearner,
    GRPOLearner,
    make_learner,
)
from optiforge.agents.evolution.grpo.bilora import AUX_ADAPTER  # noqa: E402
from optiforge.agents.evolution.grpo.checkpoint import ADAPTER_CONFIG, ADAPTER_WEIGHTS, STATE_FILE  # noqa: E402


class ByteTokenizer:
    eos_token_id = 1
    pad_token_id = 0

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [2 + (b % 60) for b in text.encode()]}


class TinyLLM:
    """A TrainableLLM over a randomly initialised 1-layer Llama."""

    def __init__(self, seed: int = 0) -> None:
        cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                       num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128)
        torch.manual_seed(seed)
        self.model = transformers.LlamaForCausalLM(cfg)
        self.tokenizer = ByteTokenizer()

    def generate(self, prompts, n=1, *, max_new_tokens=256, temperature=0.8, top_p=1.0, seed=None, system=None):
        raise NotImplementedError

    def format_prompt(self, prompt, system=None):
        return prompt

    def prepare_for_training(self):
        return self.model


GROUPS = [("def f(x):", ["return x", "return 2 * x + 1", "pass"], [1.0, 0.2, -0.5])]


def _factors(learner, name):
    return {n: p.detach().clone() for n, p in learner.model.named_parameters() if f".{name}." in n and "lora_" in n}


def test_make_learner_dispatches_on_lora():
    assert LORA_VARIANTS == ("lora", "bilora")
    assert type(make_learner(TinyLLM(), lora="lora")) is GRPOLearner
    assert type(make_learner(TinyLLM(), lora="bilora", target_modules=["q_proj", "v_proj"])) is BiLoRAGRPOLearner
    with pytest.raises(ValueError, match="lora"):
        make_learner(TinyLLM(), lora="dora")
    for kwargs, name in [({"rho": 0.0}, "rho"), ({"clip": "x"}, "clip"), ({"aux_optimizer": "x"}, "aux_optimizer"),
                         ({"aux_lr": -1.0}, "aux_lr")]:
        with pytest.raises(ValueError, match=name):
            BiLoRAGRPOLearner(TinyLLM(), **kwargs)


def test_update_descends_primary_ascends_auxiliary_and_clips(tmp_path):
    llm = TinyLLM()
    # the whole group in one micro-batch, so the spy below sees exactly one forward
    learner = BiLoRAGRPOLearner(llm, lora_r=4, lora_alpha=8, lr=1e-2, rho=1e-3, beta=0.0,
                                target_modules=["q_proj", "v_proj", "up_proj"], seed=0,
                                micro_batch_size=len(GROUPS[0][1]))
    primary = learner.adapter_name
    layers = learner.model.base_model.model.model.layers[0]
    assert set(layers.self_attn.q_proj.lora_A) == {primary, AUX_ADAPTER}
    assert layers.self_attn.q_proj.active_adapters == [primary]            # generation: primary only
    assert learner.trainable_parameters() == sum(p.numel() for p in _factors(learner, primary).values())

    # One forward at the merged weights: the update sees both adapters (spy on the layer).
    seen = []
    hook = layers.self_attn.q_proj.register_forward_pre_hook(
        lambda m, a: seen.append(list(m.active_adapters)))
    before_p, before_a = _factors(learner, primary), _factors(learner, AUX_ADAPTER)
    stats = learner.step(GROUPS)
    hook.remove()
    assert seen == [[primary, AUX_ADAPTER]]          # beta = 0: no reference pass; one forward
    assert layers.self_attn.q_proj.active_adapters == [primary]
    after_p, after_a = _factors(learner, primary), _factors(learner, AUX_ADAPTER)
    assert any(not torch.equal(before_p[n], after_p[n]) for n in before_p)
    assert any(not torch.equal(before_a[n], after_a[n]) for n in before_a)
    # Clipped: the global norm of the auxiliary perturbation is at most rho (it starts at zero
    # and Adam moves every B2 entry by aux_lr = 1e-2, far beyond rho = 1e-3).
    assert stats["aux_norm"] == pytest.approx(1e-3, rel=1e-4)
    norms = learner.optimizer.auxiliary_norms()
    assert math.hypot(*norms) == pytest.approx(1e-3, rel=1e-4)

    # Only the primary reaches disk: a standard LoRA adapter directory.
    out = learner.save(tmp_path / "v1")
    config = json.loads((out / ADAPTER_CONFIG).read_text())
    assert config["r"] == 4
    from safetensors.torch import load_file

    keys = load_file(str(out / ADAPTER_WEIGHTS)).keys()
    assert keys and not any(AUX_ADAPTER in k for k in keys)
    state = torch.load(out / STATE_FILE, weights_only=True)
    assert "auxiliary" not in state["optimizer"] and state["hparams"]["lora"] == "bilora"

    # A fresh learner loads it: the primary exactly, the auxiliary restarted at zero.
    other = BiLoRAGRPOLearner(TinyLLM(), lora_r=4, lora_alpha=8, lr=1e-2, rho=1e-3, beta=0.0,
                              target_modules=["q_proj", "v_proj", "up_proj"], seed=5)
    other.load(out)
    for n, t in _factors(other, primary).items():
        torch.testing.assert_close(t, after_p[n])
    assert other.optimizer.auxiliary_norms() == pytest.approx([0.0] * len(norms))
    assert other.step_count == 1
    other.step(GROUPS)  # and it trains on
    assert other.step_count == 2
    # Loading into the live learner also restarts its (non-zero) auxiliary.
    learner.load(out)
    assert learner.optimizer.auxiliary_norms() == pytest.approx([0.0] * len(norms))
    assert not learner.optimizer.aux_optimizer.state


def test_peft_loads_the_saved_version_as_plain_lora(tmp_path):
    from peft import PeftModel

    learner = BiLoRAGRPOLearner(TinyLLM(), lora_r=2, target_modules=["q_proj"], beta=0.0, lr=1e-2, rho=0.5)
    learner.step(GROUPS)
    out = learner.save(tmp_path / "v")
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        expected = learner.model(input_ids=ids).logits      # primary only, outside step()
        plain = PeftModel.from_pretrained(TinyLLM().model, str(out)).eval()
        torch.testing.assert_close(plain(input_ids=ids).logits, expected)
