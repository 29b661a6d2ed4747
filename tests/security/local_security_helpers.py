"""Helpers of the local-side security tests (the store's files, the sandbox, exports)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "optiforge.platform.cli"]


def cli_env(home: Path) -> dict[str, str]:
    """The environment of a CLI run on the store in ``home`` (this checkout first on the path)."""
    env = {**os.environ, "OPTIFORGE_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("OPTIFORGE_DB", None)
    return env


def run_cli(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``optiforge ARGS`` as a user would: a real process, text output captured."""
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=600)


def assert_one_error_line(r: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2, no traceback, and stderr is one ``error: ...`` line containing every word."""
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr[-2000:]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _world_traversable(path: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in (path, *path.parents))


@contextmanager
def world_traversable_dir() -> Iterator[Path]:
    """A fresh 0755 folder that every local user can reach, outside /tmp and any home.

    pytest's ``tmp_path`` sits under a 0700 folder and inside the sandbox's private /tmp, so a
    test that lets another user (or a sandboxed program) look for a file there would pass
    without proving anything. A project folder such as the repository is what a real
    ``./.optiforge`` lives in.
    """
    for candidate in (REPO, Path.cwd(), Path("/var/lib"), Path("/opt"), Path("/srv")):
        if candidate.is_dir() and os.access(candidate, os.W_OK) and _world_traversable(candidate):
            base = Path(tempfile.mkdtemp(prefix=".optiforge-security-test-", dir=candidate))
            break
    else:
        pytest.skip("no world-traversable writable folder outside /tmp to hold a store")
    try:
        base.chmod(0o755)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)
