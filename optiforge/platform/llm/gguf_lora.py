"""Write a PEFT LoRA adapter (in memory or on disk) as a GGUF LoRA file llama.cpp can load.

llama.cpp applies a LoRA to a weight ``W`` (``y = W x``) as ``y += s * B (A x)`` with
``s = scale * alpha / rank``. A GGUF LoRA stores, for each adapted weight ``blk.N.attn_q.weight``,
the tensors ``blk.N.attn_q.weight.lora_a`` (numpy shape ``(r, in)``, PEFT's ``lora_A``) and
``.lora_b`` (shape ``(out, r)``, PEFT's ``lora_B``). PEFT's own scale (``alpha / r``, or
``alpha / sqrt(r)`` for rsLoRA) is folded into ``lora_b`` and the file's alpha is 0, which
llama.cpp reads as "scale 1": the exported delta is exactly PEFT's, whatever its scaling rule.

Two details matter for exactness:

- For the ``llama`` architecture (SmolLM2), llama.cpp's converter permutes the rows of the query and key projections (its RoPE pairs
  neighbouring dimensions, Hugging Face's pairs the two halves), and transformers undoes the
  permutation when it reads a GGUF file. The rows of ``B`` (output dimension) of ``q_proj`` and
  ``k_proj`` get the same permutation; ``A`` is untouched. Architectures whose GGUF keeps
  Hugging Face's layout (``qwen2``: NeoX-style RoPE, converted without a permutation) get none.
- Tensors are written in float32: the adapter is a few MB, and any rounding here would be a
  difference between the policy trained and the policy sampled.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

# Hugging Face module name -> GGUF tensor name (llama-family decoders).
_GGUF_NAMES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.(.+)$")
PERMUTED_ARCHITECTURES = frozenset({"llama"})
"""GGUF architectures whose q/k rows llama.cpp's converter permutes (see the module docstring)."""


def gguf_tensor_name(module_name: str) -> str:
    """The GGUF base-weight name (``blk.3.attn_q.weight``) of a Hugging Face linear module.

    Raises
    ------
    ValueError
        If the module is not a decoder-layer projection llama.cpp can adapt.
    """
    match = _LAYER.search(module_name)
    if match is None or match.group(2) not in _GGUF_NAMES:
        raise ValueError(f"adapter: module {module_name!r} has no llama.cpp LoRA equivalent "
                         f"(supported: {sorted(_GGUF_NAMES)} inside decoder layers)")
    return f"blk.{int(match.group(1))}.{_GGUF_NAMES[match.group(2)]}.weight"


def permute_rows(weight: np.ndarray, n_head: int) -> np.ndarray:
    """Reorder the output rows of a q/k projection from Hugging Face's RoPE layout to GGUF's.

    Within each head, HF keeps the first and second halves of the rotated pairs in two blocks;
    llama.cpp interleaves them. ``n_head`` is the number of heads this projection produces
    (the KV head count for ``k_proj``).
    """
    rows = weight.shape[0]
    return (weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def lora_deltas(peft_model: Any, adapter_name: str | None = None) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """``(module name, A, B * scaling)`` for every LoRA layer of a PEFT model's adapter.

    Parameters
    ----------
    peft_model : peft.PeftModel or torch.nn.Module
        A model with LoRA layers injected (a learner injects them into the base model in
        place, so this need not be the ``PeftModel`` wrapper).
    adapter_name : str, optional
        Which adapter; default: each layer's active one.
    """
    import torch

    with torch.no_grad():
        for module_name, module in peft_model.named_modules():
            lora_a = getattr(module, "lora_A", None)
            if not isinstance(lora_a, torch.nn.ModuleDict) or getattr(module, "disable_adapters", False):
                continue
            active = getattr(module, "active_adapters", None) or []
            name = adapter_name or (active[0] if active else None)
            if name not in lora_a:
                continue
            a = lora_a[name].weight.detach().float().cpu().numpy()
            b = module.lora_B[name].weight.detach().float().cpu().numpy() * float(module.scaling[name])
            yield module_name, a, b


def write_gguf_lora(
    path: str | os.PathLike[str],
    deltas: Iterator[tuple[str, np.ndarray, np.ndarray]],
    *,
    architecture: str,
    n_head: int,
    n_head_kv: int,
) -> Path:
    """Write LoRA factors as a GGUF adapter file.

    Parameters
    ----------
    path : str or path
        The file to write (replaced atomically).
    deltas : iterable of (module name, A, B)
        ``A`` of shape ``(r, in)``, ``B`` of shape ``(out, r)`` with the adapter's scale folded
        in (:func:`lora_deltas`).
    architecture : str
        The base model's ``general.architecture`` (llama.cpp refuses a mismatch).
    n_head, n_head_kv : int
        Attention and key/value head counts (for the q/k row permutation of
        :data:`PERMUTED_ARCHITECTURES`).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    import gguf

    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    writer = gguf.GGUFWriter(str(tmp), architecture)
    writer.add_string("general.type", "adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", 0.0)  # scale already folded into B
    count = 0
    permuted = architecture in PERMUTED_ARCHITECTURES
    for module_name, a, b in deltas:
        base = gguf_tensor_name(module_name)
        if permuted and base.endswith(("attn_q.weight", "attn_k.weight")):
            b = permute_rows(b, n_head if "attn_q" in base else n_head_kv)
        writer.add_tensor(base + ".lora_a", np.ascontiguousarray(a, dtype=np.float32))
        writer.add_tensor(base + ".lora_b", np.ascontiguousarray(b, dtype=np.float32))
        count += 1
    if count == 0:
        writer.close()
        tmp.unlink(missing_ok=True)
        raise ValueError("adapter: it has no LoRA layers to export")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, target)
    return target


def peft_dir_deltas(directory: str | os.PathLike[str]) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """:func:`lora_deltas` for a saved PEFT adapter directory (``adapter_model.safetensors``)."""
    import json

    from safetensors.numpy import load_file

    d = Path(directory)
    config: Mapping[str, Any] = json.loads((d / "adapter_config.json").read_text(encoding="utf-8"))
    weights = load_file(str(d / "adapter_model.safetensors"))
    r = int(config["r"])
    alpha = float(config.get("lora_alpha", r))
    scaling = alpha / (r ** 0.5 if config.get("use_rslora") else r)
    for key, a in sorted(weights.items()):
        if not key.endswith("lora_A.weight"):
            continue
        b = weights[key.replace("lora_A.weight", "lora_B.weight")]
        module = key.removesuffix(".lora_A.weight")
        yield module, a.astype(np.float32), b.astype(np.float32) * scaling
