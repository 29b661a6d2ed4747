"""Helpers of the local-side security tests (the store's files, the sandbox, exports)."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


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
