"""The on-disk format of one adapter version: a PEFT LoRA adapter plus the learner's state.

A version directory holds::

    adapter_config.json          PEFT adapter config      } loadable by PeftModel.from_pretrained
    adapter_model.safetensors    LoRA weights             } and by vLLM's LoRA serving
    learner_state.pt             {"optimizer": AdamW state (newest version only), "step", "hparams"}
    learner_info.json            step, last statistics, settings (for people and dashboards)

Writes are atomic: a version is written beside its final place and renamed into it, and
:func:`drop_optimizer_state` replaces the state file by rename, so a crash leaves the old or
the new content, never a mix.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from optiforge.files import fsync_paths

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
STATE_FILE = "learner_state.pt"
INFO_FILE = "learner_info.json"


def _check_directory(directory: Any) -> Path:
    if not isinstance(directory, (str, os.PathLike)) or not str(directory):
        raise TypeError(f"directory: expected a path, got {type(directory).__name__}")
    return Path(directory).expanduser()


def save_checkpoint(
    directory: str | os.PathLike[str],
    model: Any,
    adapter_name: str,
    *,
    state: Mapping[str, Any],
    info: Mapping[str, Any],
) -> Path:
    """Write adapter ``adapter_name`` of ``model`` and the learner's ``state`` and ``info``.

    Parameters
    ----------
    directory : str or path
        The version directory; its parent is created if needed. An existing version of that
        name is replaced (it stays on disk under a hidden name until the new one is in place).
    model : peft.PeftModel
        The model holding the adapter; only ``adapter_name`` is written (any other adapter,
        e.g. an auxiliary one used only during training, is left out).
    adapter_name : str
        The adapter to save.
    state : mapping
        ``torch.save``-able learner state (``"optimizer"``, ``"step"``, ``"hparams"``).
    info : mapping
        JSON-able summary.

    Returns
    -------
    pathlib.Path
        The resolved version directory.
    """
    target = _check_directory(directory).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    aside: Path | None = None
    try:
        model.save_pretrained(str(tmp), selected_adapters=[adapter_name])
        # PEFT writes a non-default adapter into a sub-folder; keep one flat layout.
        sub = tmp / adapter_name
        if adapter_name != "default" and sub.is_dir():
            for f in sub.iterdir():
                shutil.move(str(f), tmp / f.name)
            sub.rmdir()
        torch.save(dict(state), tmp / STATE_FILE)
        (tmp / INFO_FILE).write_text(json.dumps(dict(info), indent=2), encoding="utf-8")
        fsync_paths(*tmp.iterdir(), tmp)
        if target.exists():
            # A directory cannot be renamed onto a non-empty one: move the old version aside.
            aside = Path(tempfile.mkdtemp(prefix=f".{target.name}-old-", dir=target.parent))
            os.replace(target, aside / target.name)
        try:
            os.replace(tmp, target)
        except BaseException:
            if aside is not None:  # put the previous version back
                os.replace(aside / target.name, target)
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
    return target


def load_checkpoint(directory: str | os.PathLike[str], model: Any, adapter_name: str) -> dict[str, Any]:
    """Load a version's LoRA weights into adapter ``adapter_name`` of ``model``; return its state.

    Parameters
    ----------
    directory : str or path
        A directory written by :func:`save_checkpoint`.
    model : peft.PeftModel
        The model whose adapter is overwritten (same rank and layers as the saved one).
    adapter_name : str
        The adapter to load into.

    Returns
    -------
    dict
        The learner state (``"step"``, ``"hparams"``, and ``"optimizer"`` unless it was
        dropped), its tensors on the adapter's device.

    Raises
    ------
    TypeError
        If ``directory`` is not a path.
    ValueError
        If ``directory`` is not a saved version, or its adapter's rank or layers differ from
        ``model``'s (checked before any weight is changed).
    """
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    d = _check_directory(directory)
    if not all((d / f).is_file() for f in (ADAPTER_CONFIG, ADAPTER_WEIGHTS, STATE_FILE)):
        raise ValueError(f"directory: {str(directory)!r} holds no saved GRPOLearner state")
    saved = json.loads((d / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    ours = model.peft_config[adapter_name]
    if int(saved.get("r", -1)) != int(ours.r):
        raise ValueError(f"directory: adapter rank {saved.get('r')} differs from this learner's {ours.r}")
    device = next(p.device for n, p in model.named_parameters() if f".{adapter_name}." in n)
    tensors = load_file(str(d / ADAPTER_WEIGHTS), device=str(device))
    # Saved keys carry no adapter name ("...q_proj.lora_A.weight"); ours do ("lora_A.<name>.weight").
    expected = {n.replace(f".{adapter_name}.", ".") for n, _ in model.named_parameters()
                if "lora_" in n and f".{adapter_name}." in n}
    stripped = {k.removeprefix("base_model.model.") for k in tensors}
    ours_stripped = {k.removeprefix("base_model.model.") for k in expected}
    if stripped != ours_stripped:
        extra, missing = sorted(stripped - ours_stripped), sorted(ours_stripped - stripped)
        example = (extra or missing)[0]
        raise ValueError(f"directory: the saved adapter's layers differ from this model's "
                         f"({len(extra)} extra, {len(missing)} missing, e.g. {example})")
    set_peft_model_state_dict(model, tensors, adapter_name=adapter_name)
    return torch.load(d / STATE_FILE, map_location=device, weights_only=True)


def drop_optimizer_state(directory: str | os.PathLike[str]) -> int:
    """Remove the optimizer state from a saved version; keep its adapter, step and info.

    Only the newest version is needed to resume, and the AdamW moments are twice the size of
    the adapter itself; campaigns call this on every older version. The state file is
    replaced atomically, so a crash leaves either the old or the new one.

    Parameters
    ----------
    directory : str or path
        A directory written by :func:`save_checkpoint`.

    Returns
    -------
    int
        Bytes freed (0 when there was no optimizer state left to drop).

    Raises
    ------
    ValueError
        If ``directory`` holds no learner state.
    """
    state_file = _check_directory(directory) / STATE_FILE
    if not state_file.is_file():
        raise ValueError(f"directory: {str(directory)!r} holds no saved GRPOLearner state")
    state = torch.load(state_file, map_location="cpu", weights_only=True)
    if "optimizer" not in state:
        return 0
    before = state_file.stat().st_size
    tmp = state_file.with_name(f".{STATE_FILE}.tmp")
    torch.save({k: v for k, v in state.items() if k != "optimizer"}, tmp)
    fsync_paths(tmp)
    os.replace(tmp, state_file)
    return before - state_file.stat().st_size
