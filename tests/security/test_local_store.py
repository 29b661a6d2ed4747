"""The local store is private to the user who runs optiforge.

``OPTIFORGE_HOME`` holds every owner's studies, campaigns and adapters; the HTTP service's
per-owner isolation means nothing if any local account can read the SQLite file. The home
and the folders optiforge creates are 0700, the database and its ``-wal``/``-shm`` files and
every kept artifact 0600, whatever the umask; an existing home that others can access is
used as it is, with one warning.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_security_helpers import cli_env, run_cli, world_traversable_dir

from optiforge.platform import config
from optiforge.platform.config import InsecurePermissionsWarning
from optiforge.platform.store import Store

NOBODY = 65534


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def umask_000() -> Iterator[None]:
    """The most permissive umask a user could have: nothing optiforge creates may rely on it."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "project" / ".optiforge"
    monkeypatch.setenv("OPTIFORGE_HOME", str(home))
    monkeypatch.delenv("OPTIFORGE_DB", raising=False)
    return home


def _write_a_campaign(store: Store) -> str:
    cid = store.create_campaign(task="binpacking", agent="evolution", llm="replay:x", budget=2,
                                seed=0, executor="local")
    store.add_artifact(cid, "export", "blob.bin", b"secret")
    return cid


def test_home_database_wal_and_shm_are_private(fresh_home: Path, umask_000: None) -> None:
    store = Store()
    _write_a_campaign(store)
    with store.engine.connect():  # an open connection keeps -wal and -shm on disk
        files = {name: fresh_home / name for name in
                 ("optiforge.db", "optiforge.db-wal", "optiforge.db-shm")}
        assert all(p.exists() for p in files.values()), sorted(os.listdir(fresh_home))
        assert _mode(fresh_home) == 0o700
        assert {name: oct(_mode(p)) for name, p in files.items()} == dict.fromkeys(files, "0o600")
    store.close()


def test_database_file_at_a_custom_path_is_private(tmp_path: Path, umask_000: None) -> None:
    db = tmp_path / "new-folder" / "custom.db"
    store = Store(f"sqlite:///{db}")
    store.create_token("alice")
    assert _mode(db) == 0o600
    assert _mode(db.parent) == 0o700  # a folder optiforge created for the file
    store.close()


def test_artifacts_are_private_files_and_folders(fresh_home: Path, tmp_path: Path,
                                                 umask_000: None) -> None:
    store = Store()
    cid = _write_a_campaign(store)
    source = tmp_path / "adapter-src"
    (source / "sub").mkdir(parents=True)
    (source / "weights.bin").write_bytes(b"w")
    (source / "sub" / "config.json").write_text("{}")
    for p in (source, source / "sub"):
        p.chmod(0o777)
    for p in (source / "weights.bin", source / "sub" / "config.json"):
        p.chmod(0o666)
    single = tmp_path / "notes.txt"
    single.write_text("n")
    single.chmod(0o644)
    folder = store.add_artifact(cid, "adapter", "adapter-0001", source)
    one = store.add_artifact(cid, "export", "notes.txt", single)
    kept = [folder.path, *folder.path.rglob("*"), one.path, *store.artifacts(cid, "export")[0].path.parent.iterdir()]
    modes = {str(p): oct(_mode(p)) for p in kept}
    assert modes == {str(p): ("0o700" if p.is_dir() else "0o600") for p in kept}
    artifacts_root = fresh_home / "artifacts"
    assert _mode(artifacts_root) == 0o700 and _mode(artifacts_root / cid) == 0o700
    store.close()


def test_artifact_recorded_in_place_is_made_private(fresh_home: Path, umask_000: None) -> None:
    store = Store()
    cid = _write_a_campaign(store)
    inside = store.artifact_dir(cid) / "adapter-0002"
    inside.mkdir()
    (inside / "w.bin").write_bytes(b"w")  # 0666 under umask 0, as a library would leave it
    store.add_artifact(cid, "adapter", "adapter-0002", inside)
    assert _mode(inside) == 0o700 and _mode(inside / "w.bin") == 0o600
    store.close()


def test_custom_artifacts_root_is_private(tmp_path: Path, umask_000: None) -> None:
    store = Store(f"sqlite:///{tmp_path / 's.db'}", artifacts_root=tmp_path / "arts")
    cid = _write_a_campaign(store)
    assert _mode(tmp_path / "arts") == 0o700 and _mode(tmp_path / "arts" / cid) == 0o700
    assert _mode(tmp_path / "arts" / cid / "blob.bin") == 0o600
    store.close()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="reading as another local user needs root and setpriv (as in CI)")
def test_another_local_user_cannot_read_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    with world_traversable_dir() as parent:
        fresh_home = parent / ".optiforge"
        monkeypatch.setenv("OPTIFORGE_HOME", str(fresh_home))
        monkeypatch.delenv("OPTIFORGE_DB", raising=False)
        _check_unreadable_by_nobody(fresh_home)


def _check_unreadable_by_nobody(fresh_home: Path) -> None:
    store = Store()
    cid = _write_a_campaign(store)
    control = fresh_home.parent / "control.txt"
    control.write_text("readable")
    control.chmod(0o644)
    targets = [fresh_home / "optiforge.db", fresh_home / "artifacts" / cid / "blob.bin"]

    def cat_as_nobody(path: Path) -> subprocess.CompletedProcess:
        return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                               "--clear-groups", "cat", str(path)], capture_output=True)

    assert cat_as_nobody(control).returncode == 0  # the test can see that folder at all
    for path in targets:
        got = cat_as_nobody(path)
        assert got.returncode != 0 and b"Permission denied" in got.stderr, path
    store.close()


def test_existing_shared_home_warns_once_and_is_left_alone(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "shared-home"
    home.mkdir()
    home.chmod(0o750)
    monkeypatch.setenv("OPTIFORGE_HOME", str(home))
    with pytest.warns(InsecurePermissionsWarning, match=r"other local users.*chmod -R go-rwx"):
        assert config.home() == home.resolve()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config.home()  # once per process
    assert _mode(home) == 0o750  # perhaps shared on purpose: never changed behind the user's back


def test_private_home_does_not_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "private-home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("OPTIFORGE_HOME", str(home))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config.home()
        Store().close()


def test_existing_shared_database_file_warns(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    Store(f"sqlite:///{db}").close()
    db.chmod(0o644)  # as an earlier optiforge left it
    with pytest.warns(InsecurePermissionsWarning, match="old.db"):
        Store(f"sqlite:///{db}").close()
    assert _mode(db) == 0o644


def test_home_that_is_a_file_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "not-a-folder").write_text("x")
    monkeypatch.setenv("OPTIFORGE_HOME", str(tmp_path / "not-a-folder"))
    with pytest.raises(ValueError, match="OPTIFORGE_HOME.*not a folder"):
        config.home()


def test_cli_creates_a_private_store(fresh_home: Path) -> None:
    done = run_cli(cli_env(fresh_home), "token", "create", "--owner", "alice")
    assert done.returncode == 0, done.stderr
    assert _mode(fresh_home) == 0o700 and _mode(fresh_home / "optiforge.db") == 0o600
