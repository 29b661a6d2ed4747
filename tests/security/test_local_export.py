"""``campaign export`` never destroys data: the real CLI on a real stored campaign.

One evolution campaign (the ``replay:`` LLM, two programs, the real sandbox) is run once for the
module; an adapter version is kept for it through the Store, as the RL loop does. Each test then
exports it somewhere that must be protected: a folder with the user's files, symlinks planted
where export writes, an ``adapter/`` folder from elsewhere, and targets that are not folders.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from local_security_helpers import CLI, assert_one_error_line, cli_env, run_cli

from optiforge.platform.store import Store

RESPONSES = [
    "{The idea of the algorithm is to prefer the tightest bin.}\n```python\n"
    "def priority(item, bins):\n    return -(bins - item)\n```",
    "{The idea of the algorithm is to square the slack.}\n```python\n"
    "def priority(item, bins):\n    return -(bins - item) ** 2\n```",
]
EXPORT_FILES = {"evaluations.csv", "evaluations.json", "campaign.json", "adapter"}


def _exported(folder: Path) -> set[str]:
    """The names in ``folder``, with every ``best_N.py`` (as many as there are valid programs,
    seeds included) counted as one ``best_N.py``."""
    names = {p.name for p in folder.iterdir()}
    assert "best_1.py" in names
    return {"best_N.py" if n.startswith("best_") and n.endswith(".py") else n for n in names}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return cli_env(tmp_path_factory.mktemp("export-store") / "home")


@pytest.fixture(scope="module")
def campaign(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> str:
    work = tmp_path_factory.mktemp("export-campaign")
    replay = work / "responses.jsonl"
    replay.write_text("".join(json.dumps({"text": t}) + "\n" for t in RESPONSES))
    r = run_cli(env, "campaign", "run", "--task", "binpacking", "--budget", "2", "--samples", "2",
             "--llm", f"replay:{replay}", "--workers", "1", "--rl", "none")
    assert r.returncode == 0, r.stdout + r.stderr
    store = Store(f"sqlite:///{env['OPTIFORGE_HOME']}/optiforge.db")
    [c] = [c for c in store.list_campaigns() if c.agent == "evolution"]
    adapter = work / "adapter-0001"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text('{"r": 16}')
    (adapter / "adapter_model.safetensors").write_bytes(b"weights of step 1")
    store.add_artifact(c.id, "adapter", "adapter-0001", adapter, meta={"step": 1})
    store.close()
    return c.id


def _export(env: dict[str, str], campaign: str, *args: str) -> subprocess.CompletedProcess:
    return run_cli(env, "campaign", "export", campaign, *args)


def _snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under ``folder``: file bytes, or the target of a symlink."""
    out: dict[str, bytes | str] = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = f"-> {os.readlink(p)}" if p.is_symlink() else (p.read_bytes() if p.is_file() else "dir")
    return out


def test_fresh_export_writes_everything_privately(env, campaign, tmp_path: Path) -> None:
    out = tmp_path / "new" / "export"
    r = _export(env, campaign, "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out)
    assert _exported(out) == EXPORT_FILES | {"best_N.py"}
    assert (out / "adapter" / "adapter_model.safetensors").read_bytes() == b"weights of step 1"
    assert len(json.loads((out / "evaluations.json").read_text())) >= 2
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert stat.S_IMODE((out / "evaluations.json").stat().st_mode) == 0o600
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_existing_empty_folder_is_fine(env, campaign, tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    assert _export(env, campaign, "--out", str(out)).returncode == 0
    assert _exported(out) == EXPORT_FILES | {"best_N.py"}


def test_non_empty_folder_is_refused_without_force(env, campaign, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "evaluations.json").write_text("my own notes")
    (out / "thesis.tex").write_text("chapter 1")
    before = _snapshot(out)
    assert_one_error_line(_export(env, campaign, "--out", str(out)), "not empty", "--force")
    assert _snapshot(out) == before


def test_force_replaces_only_its_own_names(env, campaign, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "evaluations.json").write_text("stale export")
    (out / "thesis.tex").write_text("chapter 1")
    (out / "best_99.py").write_text("from an earlier export with --top 99")
    r = _export(env, campaign, "--out", str(out), "--force")
    assert r.returncode == 0, r.stderr
    assert (out / "thesis.tex").read_text() == "chapter 1"
    assert (out / "best_99.py").read_text() == "from an earlier export with --top 99"
    assert json.loads((out / "evaluations.json").read_text())[0]["hash"]


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
def test_symlinked_file_is_never_followed(env, campaign, tmp_path: Path, force: bool) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "evaluations.json").symlink_to(victim)
    before = _snapshot(out)
    r = _export(env, campaign, "--out", str(out), *(["--force"] if force else []))
    assert_one_error_line(r, "symbolic link" if force else "not empty")
    assert victim.read_text() == "precious"
    assert _snapshot(out) == before  # refused before the first byte: nothing else written either


def test_dangling_symlink_is_not_written_through(env, campaign, tmp_path: Path) -> None:
    planted = tmp_path / "elsewhere" / "created-by-export.py"
    planted.parent.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "best_1.py").symlink_to(planted)
    assert_one_error_line(_export(env, campaign, "--out", str(out), "--force"), "symbolic link")
    assert not planted.exists()


def test_symlinked_target_folder_is_refused(env, campaign, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert_one_error_line(_export(env, campaign, "--out", str(link)), "symbolic link")
    assert list(real.iterdir()) == []


def test_existing_adapter_folder_is_never_deleted(env, campaign, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "adapter").mkdir(parents=True)
    (out / "adapter" / "my_finetune.safetensors").write_bytes(b"a week of GPU time")
    before = _snapshot(out)
    assert_one_error_line(_export(env, campaign, "--out", str(out), "--force"), "adapter", "never deleted")
    assert _snapshot(out) == before


def test_re_export_with_force_keeps_the_same_adapter(env, campaign, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _export(env, campaign, "--out", str(out)).returncode == 0
    inode = (out / "adapter").stat().st_ino
    r = _export(env, campaign, "--out", str(out), "--force")
    assert r.returncode == 0, r.stderr
    assert (out / "adapter").stat().st_ino == inode  # identical content: left as it was


def test_adapter_symlink_is_refused(env, campaign, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "adapter").symlink_to(elsewhere)
    assert_one_error_line(_export(env, campaign, "--out", str(out), "--force"), "symbolic link")
    assert list(elsewhere.iterdir()) == []


def test_empty_out_is_rejected(env, campaign, tmp_path: Path) -> None:
    r = run_cli(env, "campaign", "export", campaign, "--out", "", cwd=tmp_path)
    assert_one_error_line(r, "out")
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


@pytest.mark.parametrize("target", ["/dev/null", "file", "under_a_file", "proc"])
def test_targets_that_are_not_writable_folders(env, campaign, tmp_path: Path, target: str) -> None:
    a_file = tmp_path / "a_file.txt"
    a_file.write_text("keep")
    path = {"/dev/null": "/dev/null", "file": str(a_file), "under_a_file": str(a_file / "out"),
            "proc": "/proc/self/optiforge-export"}[target]
    assert_one_error_line(_export(env, campaign, "--out", path), "out")
    assert a_file.read_text() == "keep"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a 0500 folder anyway")
def test_unwritable_folder_as_a_user(env, campaign, tmp_path: Path) -> None:
    out = tmp_path / "locked"
    out.mkdir(mode=0o500)
    assert_one_error_line(_export(env, campaign, "--out", str(out)), "out", "cannot write")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="a read-only bind mount needs root and unshare (as in CI)")
def test_read_only_folder(env, campaign, tmp_path: Path) -> None:
    # Root ignores file modes, so the folder is made unwritable the way a read-only disk is:
    # a read-only bind mount, in a private mount namespace that vanishes with the command.
    out = tmp_path / "read-only"
    out.mkdir()
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                        str(out), *CLI, "campaign", "export", campaign, "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert_one_error_line(r, "out", "Read-only file system")
    assert list(out.iterdir()) == []


def test_unknown_campaign_creates_nothing(env, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert_one_error_line(_export(env, "doesnotexist", "--out", str(out)), "doesnotexist")
    assert not out.exists()


@pytest.mark.parametrize("top", ["0", "-3", str(10**30)])
def test_bad_top_is_one_line(env, campaign, tmp_path: Path, top: str) -> None:
    assert_one_error_line(_export(env, campaign, "--out", str(tmp_path / "o"), "--top", top), "top")


def test_black_box_campaign_export_follows_the_same_rules(env, tmp_path: Path) -> None:
    r = run_cli(env, "campaign", "run", "--task", "branin", "--agent", "random", "--budget", "4")
    assert r.returncode == 0, r.stdout + r.stderr
    store = Store(f"sqlite:///{env['OPTIFORGE_HOME']}/optiforge.db")
    cid = next(c.id for c in store.list_campaigns() if c.agent == "random")
    store.close()
    out = tmp_path / "points"
    out.mkdir()
    (out / "best_1.json").write_text("my own point")
    assert_one_error_line(_export(env, cid, "--out", str(out)), "not empty")
    assert (out / "best_1.json").read_text() == "my own point"
    assert _export(env, cid, "--out", str(out), "--force").returncode == 0
    assert json.loads((out / "best_1.json").read_text())["params"]
    assert stat.S_IMODE((out / "best_1.json").stat().st_mode) == 0o600
