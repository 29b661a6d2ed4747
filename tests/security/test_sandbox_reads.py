"""A generated program run through the real sandbox cannot read what it has no business reading.

The store (``$OPTIFORGE_HOME/optiforge.db`` and its WAL), a campaign's artifacts, the listing of
the home, and the caller's home are each tried from inside a real program on the real
``binpacking`` task. The home deliberately lies outside ``/tmp`` (which every child sees as a
fresh tmpfs) and outside the caller's home (hidden), in a world-traversable folder, as a
project's ``./.optiforge`` would be. A world-readable control file beside it must stay
readable: that shows the program really can read that part of the disk, so the other reads
fail because of the protections and not because the test looked in the wrong place.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_security_helpers import world_traversable_dir

from optiforge.platform.sandbox import Sandbox, SandboxLimits
from optiforge.platform.store import Store

SECRET = b"optiforge-secret-" + uuid.uuid4().hex.encode()
FAST = dict(timeout_s=20.0, memory_mb=1024, max_stdout_bytes=16384)

READER = """
import os
TARGETS = json_targets
for label, (kind, path) in TARGETS.items():
    try:
        if kind == "dir":
            names = sorted(os.listdir(path))  # an empty listing (a hidden folder) tells nothing
            print("LEAK" if names else "SAFE", label, names)
        else:
            with open(path, "rb") as f:
                print("LEAK", label, f.read(64).hex())
    except BaseException as exc:
        print("SAFE", label, type(exc).__name__)

def priority(item, bins):
    return -(bins - item)
"""


@pytest.fixture
def layout(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, tuple[str, str]]]:
    """A store with a campaign and an artifact, a caller's home, and a control file."""
    with world_traversable_dir() as base:
        home = base / "project" / ".optiforge"
        caller_home = base / "caller-home"
        caller_home.mkdir(mode=0o755)
        (caller_home / "notes.txt").write_bytes(SECRET)
        (caller_home / "notes.txt").chmod(0o644)
        control = base / "control.txt"
        control.write_bytes(b"world-readable control")
        control.chmod(0o644)
        monkeypatch.setenv("OPTIFORGE_HOME", str(home))
        monkeypatch.delenv("OPTIFORGE_DB", raising=False)
        monkeypatch.setenv("HOME", str(caller_home))
        store = Store()
        cid = store.create_campaign(task="binpacking", agent="evolution", llm="replay:x",
                                    budget=1, seed=0, executor="local")
        artifact = store.add_artifact(cid, "export", "secret.bin", SECRET)
        # Keep a connection open so the WAL file exists while the program runs.
        with store.engine.connect():
            targets = {
                "db": ("file", str(home / "optiforge.db")),
                "wal": ("file", str(home / "optiforge.db-wal")),
                "artifact": ("file", str(artifact.path)),
                "artifact_dir": ("dir", str(artifact.path.parent)),
                "home_listing": ("dir", str(home)),
                "caller_home": ("file", str(caller_home / "notes.txt")),
                "control": ("file", str(control)),
            }
            assert all(Path(p).exists() for _, p in targets.values())
            yield targets
        store.close()


# Every protection on (the default); the kernel walls alone (no audit hook); the mount
# namespace alone (no uid drop: file modes do not stop root, so hiding the home must); and the
# uid drop alone (no namespaces, no hook: only the store's file modes stand).
CONFIGS = {
    "all_protections": SandboxLimits(**FAST),
    "kernel_walls_only": SandboxLimits(**FAST, audit_hook=False),
    "mount_namespace_only": SandboxLimits(**FAST, audit_hook=False, drop_privileges=False),
    "file_modes_only": SandboxLimits(**FAST, audit_hook=False, namespaces=False),
}


@pytest.mark.parametrize("config", list(CONFIGS))
def test_program_cannot_read_store_artifacts_or_callers_home(layout, config: str) -> None:
    limits = CONFIGS[config]
    program = READER.replace("json_targets", json.dumps(layout))
    if config == "file_modes_only" and os.geteuid() != 0:
        pytest.skip("the uid drop needs root (as in CI); without it the child is the store's owner")
    with Sandbox(workers=1, limits=limits) as sb:
        if config == "mount_namespace_only" and not sb.protections["mount_namespace"]:
            pytest.skip("no mount namespace on this machine (needs root or user namespaces)")
        if config == "file_modes_only":
            assert not sb.protections["mount_namespace"] and not sb.protections["audit_hook"]
        if config != "mount_namespace_only" and os.geteuid() == 0:
            assert sb.protections["uid_drop"] == limits.sandbox_uid
        result = sb.run(program, "binpacking", "train")
    assert result.ok, result.error
    lines = dict(line.split(" ", 2)[1::-1] for line in result.stdout.splitlines() if line)
    assert lines.get("control") == "LEAK", f"the control file was unreadable: {result.stdout}"
    # Without namespaces and the hook nothing hides the caller's home: its own modes decide.
    allowed = {"control", "caller_home"} if config == "file_modes_only" else {"control"}
    leaked = sorted(label for label, verdict in lines.items() if verdict == "LEAK" and label not in allowed)
    assert leaked == [], f"the program read {leaked}:\n{result.stdout}"
    assert set(lines) == set(layout), result.stdout
    if config != "file_modes_only":
        assert SECRET.hex()[:32] not in result.stdout
