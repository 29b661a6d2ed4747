"""Artifacts: copied under the campaign's folder, hashed, listed oldest first."""

from __future__ import annotations

import hashlib

import pytest
from store_helpers import make_campaign

from optiforge.platform.store import ConflictError, NotFoundError, Store


def test_bytes_file_and_folder_artifacts(store: Store, tmp_path) -> None:
    cid = make_campaign(store)
    a = store.add_artifact(cid, "export", "best.py", b"def priority(): pass\n", meta={"rank": 1})
    assert a.path == store.artifact_dir(cid) / "best.py"
    assert a.path.read_bytes() == b"def priority(): pass\n"
    assert a.sha256 == hashlib.sha256(b"def priority(): pass\n").hexdigest()
    assert (a.kind, a.name, a.size_bytes, a.meta) == ("export", "best.py", 21, {"rank": 1})

    src = tmp_path / "report.json"
    src.write_text('{"ok": true}')
    f = store.add_artifact(cid, "export", "report.json", src)
    src.write_text("changed later")  # the artifact is a copy
    assert f.path.read_text() == '{"ok": true}' and f.path != src

    adapter = tmp_path / "adapter-src"
    (adapter / "sub").mkdir(parents=True)
    (adapter / "adapter_model.safetensors").write_bytes(b"\x00" * 100)
    (adapter / "sub" / "cfg.json").write_text("{}")
    d = store.add_artifact(cid, "adapter", "adapter-0001", adapter, meta={"step": 1, "kl": 0.01})
    assert (d.path / "sub" / "cfg.json").read_text() == "{}" and d.size_bytes == 102
    assert [x.name for x in store.artifacts(cid)] == ["best.py", "report.json", "adapter-0001"]
    assert [x.name for x in store.artifacts(cid, kind="adapter")] == ["adapter-0001"]
    assert store.artifacts(cid, kind="adapter")[-1].meta == {"step": 1, "kl": 0.01}


def test_folder_digest_depends_on_content_and_names(store: Store, tmp_path) -> None:
    cid = make_campaign(store)
    digests = []
    for i, (name, content) in enumerate([("a.bin", b"1"), ("a.bin", b"2"), ("b.bin", b"1")]):
        src = tmp_path / f"d{i}"
        src.mkdir()
        (src / name).write_bytes(content)
        digests.append(store.add_artifact(cid, "adapter", f"v{i}", src).sha256)
    assert len(set(digests)) == 3


def test_artifact_written_in_place_is_recorded_not_copied(store: Store) -> None:
    # The orchestrator saves adapters straight into artifact_dir(cid) and then records them.
    cid = make_campaign(store)
    target = store.artifact_dir(cid) / "adapter-0002"
    target.mkdir()
    (target / "w.bin").write_bytes(b"abc")
    a = store.add_artifact(cid, "adapter", target.name, target)
    assert a.path == target and (target / "w.bin").read_bytes() == b"abc"


def test_artifact_conflicts_and_bad_input(store: Store, tmp_path) -> None:
    cid = make_campaign(store)
    store.add_artifact(cid, "export", "x.txt", b"1")
    with pytest.raises(ConflictError, match="name"):
        store.add_artifact(cid, "export", "x.txt", b"2")
    assert (store.artifact_dir(cid) / "x.txt").read_bytes() == b"1"
    for bad in ("../escape", "a/b", ".hidden", ""):
        with pytest.raises(ValueError, match="name"):
            store.add_artifact(cid, "export", bad, b"1")
    assert not (store.artifact_dir(cid).parent / "escape").exists()
    with pytest.raises(ValueError, match="path_or_bytes"):
        store.add_artifact(cid, "export", "y", tmp_path / "missing")
    with pytest.raises(TypeError, match="path_or_bytes"):
        store.add_artifact(cid, "export", "y", 42)
    with pytest.raises(ValueError, match="meta"):
        store.add_artifact(cid, "export", "z", b"1", meta={"x": float("nan")})
    with pytest.raises(NotFoundError, match="campaign_id"):
        store.add_artifact("000000000000", "export", "y", b"1")
    assert [a.name for a in store.artifacts(cid)] == ["x.txt"]


def test_a_file_left_by_a_kill_before_the_commit_does_not_block_the_name(store: Store) -> None:
    # A process killed between renaming the content into place and committing its row leaves
    # a file no row records; the resumed run must still be able to save that name.
    cid = make_campaign(store)
    (store.artifact_dir(cid) / "epoch-000001.ckpt").write_bytes(b"half of an old run")
    (store.artifact_dir(cid) / "adapter-1").mkdir()
    (store.artifact_dir(cid) / "adapter-1" / "w.bin").write_bytes(b"old")
    a = store.add_artifact(cid, "checkpoint", "epoch-000001.ckpt", b"new")
    b = store.add_artifact(cid, "adapter", "adapter-1", b"folder replaced by a file")
    assert (store.artifact_dir(cid) / "epoch-000001.ckpt").read_bytes() == b"new"
    assert a.sha256 == hashlib.sha256(b"new").hexdigest() and b.name == "adapter-1"
    with pytest.raises(ConflictError, match="name"):  # once recorded, the name is taken
        store.add_artifact(cid, "checkpoint", "epoch-000001.ckpt", b"newer")
