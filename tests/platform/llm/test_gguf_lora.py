"""PEFT -> GGUF LoRA export: names, the q/k row permutation, the file llama.cpp reads."""

from __future__ import annotations

import json

import numpy as np
import pytest

from optiforge.platform.llm.gguf_lora import (
    gguf_tensor_name,
    peft_dir_deltas,
    permute_rows,
    write_gguf_lora,
)


def test_tensor_names():
    assert gguf_tensor_name("base_model.model.model.layers.3.self_attn.q_proj") == "blk.3.attn_q.weight"
    assert gguf_tensor_name("model.layers.12.mlp.down_proj") == "blk.12.ffn_down.weight"
    with pytest.raises(ValueError, match="^adapter: module 'lm_head'"):
        gguf_tensor_name("lm_head")


def test_permutation_interleaves_rotary_halves_per_head():
    # One head of dimension 4: HF rows (x0, x1 | y0, y1) pair x_i with y_i; GGUF interleaves.
    w = np.arange(8, dtype=np.float32).reshape(8, 1)  # two heads
    assert permute_rows(w, 2)[:, 0].tolist() == [0, 2, 1, 3, 4, 6, 5, 7]


def test_written_file_has_adapter_metadata_and_scaled_b(tmp_path):
    import gguf

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 6)).astype(np.float32), rng.normal(size=(4, 2)).astype(np.float32)
    path = write_gguf_lora(tmp_path / "x.gguf", iter([("model.layers.0.self_attn.v_proj", a, b)]),
                           architecture="llama", n_head=2, n_head_kv=2)
    reader = gguf.GGUFReader(str(path))
    fields = {k: f for k, f in reader.fields.items()}
    assert bytes(fields["general.type"].parts[-1]).decode() == "adapter"
    assert float(fields["adapter.lora.alpha"].parts[-1][0]) == 0.0
    tensors = {t.name: np.asarray(t.data) for t in reader.tensors}
    np.testing.assert_array_equal(tensors["blk.0.attn_v.weight.lora_a"], a)
    np.testing.assert_array_equal(tensors["blk.0.attn_v.weight.lora_b"], b)
    with pytest.raises(ValueError, match="^adapter: it has no LoRA layers"):
        write_gguf_lora(tmp_path / "y.gguf", iter([]), architecture="llama", n_head=2, n_head_kv=2)
    assert not (tmp_path / "y.gguf").exists()


@pytest.mark.parametrize(("architecture", "permuted"), [("llama", True), ("qwen2", False)])
def test_q_rows_are_permuted_only_for_the_llama_layout(tmp_path, architecture, permuted):
    import gguf

    a, b = np.ones((2, 6), np.float32), np.arange(16, dtype=np.float32).reshape(8, 2)
    path = write_gguf_lora(tmp_path / "q.gguf", iter([("model.layers.0.self_attn.q_proj", a, b)]),
                           architecture=architecture, n_head=2, n_head_kv=2)
    written = {t.name: np.asarray(t.data) for t in gguf.GGUFReader(str(path)).tensors}
    np.testing.assert_array_equal(written["blk.0.attn_q.weight.lora_b"], permute_rows(b, 2) if permuted else b)


def test_peft_directory_scaling(tmp_path):
    from safetensors.numpy import save_file

    a, b = np.ones((4, 3), np.float32), np.ones((5, 4), np.float32)
    save_file({"base_model.model.model.layers.0.mlp.up_proj.lora_A.weight": a,
               "base_model.model.model.layers.0.mlp.up_proj.lora_B.weight": b},
              str(tmp_path / "adapter_model.safetensors"))
    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 4, "lora_alpha": 8}))
    [(name, a2, b2)] = list(peft_dir_deltas(tmp_path))
    assert name.endswith("layers.0.mlp.up_proj")
    np.testing.assert_array_equal(a2, a)
    np.testing.assert_allclose(b2, 2.0 * b)  # alpha / r
    (tmp_path / "adapter_config.json").write_text(json.dumps({"r": 4, "lora_alpha": 8, "use_rslora": True}))
    np.testing.assert_allclose(list(peft_dir_deltas(tmp_path))[0][2], 4.0 * b)  # alpha / sqrt(r)
