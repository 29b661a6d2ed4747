"""LoRA adapters on the real bundled NF4 model: create, save, load, switch versions."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.slow


def _save_adapter(base_model, path, seed: int) -> None:
    from peft import LoraConfig, get_peft_model

    cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)
    peft_model = get_peft_model(base_model, cfg)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:  # B starts at zero (a no-op adapter); make it matter
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    peft_model.save_pretrained(path)
    peft_model.unload()  # strip the LoRA layers again so the shared base model is untouched


def _logits(llm, prompt: str) -> torch.Tensor:
    llm.model.eval()
    enc = llm.tokenizer(llm.format_prompt(prompt), return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        return llm.model(**enc).logits[0, -1].float()


def test_load_adapter_changes_outputs_and_switches_versions(tmp_path):
    from optiforge.platform.llm import TransformersLLM

    llm = TransformersLLM("smollm2", quantization="int4")
    prompt = "Write a Python function that adds two numbers."
    # Adapters are created on the bundled NF4 model itself, as the RL loop does.
    _save_adapter(llm.model, tmp_path / "a1", seed=1)
    _save_adapter(llm.model, tmp_path / "a2", seed=2)
    base = _logits(llm, prompt)
    base_text = llm.generate([prompt], max_new_tokens=8, temperature=0)[0][0].text

    assert llm.load_adapter(tmp_path / "a1") == "v1"
    l1 = _logits(llm, prompt)
    assert (l1 - base).abs().max() > 0.5
    t1 = llm.generate([prompt], max_new_tokens=8, temperature=0)[0][0].text
    assert t1 != base_text

    assert llm.load_adapter(tmp_path / "a2") == "v2"
    l2 = _logits(llm, prompt)
    assert (l2 - l1).abs().max() > 0.5
    assert list(llm.model.peft_config) == ["v2"]  # the previous version was dropped
    assert llm.adapter == str(tmp_path / "a2")

    with pytest.raises(FileNotFoundError, match="^adapter:"):
        llm.load_adapter(tmp_path / "missing")
