"""Durable file writes shared by every layer (a leaf module, like :mod:`optiforge.types`)."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_paths(*paths: str | os.PathLike[str]) -> None:
    """Flush files or directories to disk, so that a rename after it publishes durable data."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def fsync_tree(path: str | os.PathLike[str]) -> None:
    """:func:`fsync_paths` on a file, or on every file below a directory."""
    root = Path(path)
    fsync_paths(*([root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]))
