"""Writing results into a user's folder without ever destroying what is already there.

The rules (``campaign export`` follows them; anything else that writes a folder for the user
should too):

- a folder that already holds files is written into only when the user says so (``force``);
- a symbolic link is never followed nor replaced, whether it is the folder or a name in it;
- nothing is deleted that this code did not create: a folder of the same name is never
  replaced; only plain files of the same name are, and only with ``force``;
- every file appears whole or not at all: it is written to a temporary name in the same
  folder, flushed, and renamed over the final name (``os.replace`` replaces the directory
  entry and never writes through it);
- everything is checked before the first byte is written, so a refused export changes nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from optiforge.files import fsync_paths
from optiforge.platform import config
from optiforge.platform.store.artifacts import digest


def _os_error(path: Path, exc: OSError) -> ValueError:
    return ValueError(f"out: cannot write to {path}: {exc.strerror or exc}")


def prepare_folder(path: Path, *, force: bool) -> Path:
    """Check (or create, 0700) the folder ``path`` that results will be written into.

    Raises
    ------
    ValueError
        Naming ``out``: ``path`` is a symbolic link, is not a folder, holds files and
        ``force`` is off, or cannot be created.
    """
    if path.is_symlink():
        raise ValueError(f"out: {path} is a symbolic link; give the real folder")
    try:
        if not path.exists():
            try:
                config.make_private_dir(path)
            except ValueError as exc:  # a parent is a file
                raise ValueError(f"out: cannot create {path}: {exc}") from None
            return path
        if not path.is_dir():
            raise ValueError(f"out: {path} exists and is not a folder")
        if not force and any(path.iterdir()):
            raise ValueError(f"out: {path} is not empty; use --force to write into it (files "
                             "of the same names are replaced, nothing else is touched)")
    except OSError as exc:
        raise _os_error(path, exc) from None
    return path


def check_names(folder: Path, files: Iterable[str], folders: dict[str, Path] | None = None) -> set[str]:
    """Refuse names whose current occupant must not be replaced; return folders to skip.

    Parameters
    ----------
    files : iterable of str
        Names of plain files to be written: each may be absent or an existing plain file.
    folders : dict, optional
        Name -> source of folders (or files) to be copied in. An occupant with the same
        content as its source is kept as it is (the name is returned, to be skipped); any
        other occupant is refused, never deleted.

    Raises
    ------
    ValueError
        Naming ``out`` and the first name that is occupied by something else.
    """
    skip: set[str] = set()
    for name in files:
        target = folder / name
        if target.is_symlink():
            raise ValueError(f"out: {target} is a symbolic link; it is never followed or replaced")
        if target.exists() and not target.is_file():
            raise ValueError(f"out: {target} exists and is not a plain file; it is never replaced")
    for name, source in (folders or {}).items():
        target = folder / name
        if target.is_symlink():
            raise ValueError(f"out: {target} is a symbolic link; it is never followed or replaced")
        if not target.exists():
            continue
        if digest(target)[0] != digest(source)[0]:
            raise ValueError(f"out: {target} already exists with other content; it is never "
                             "deleted: move it away or export to a new folder")
        skip.add(name)
    return skip


def write_file(folder: Path, name: str, data: bytes) -> None:
    """Write ``folder/name`` atomically (owner-only, 0600): whole or not at all."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise _os_error(folder, exc) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, folder / name)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _os_error(folder / name, exc) from None
        raise
    fsync_paths(folder)  # the rename is durable once the folder's entry is on disk


def copy_in(folder: Path, name: str, source: Path) -> None:
    """Copy a file or folder to ``folder/name`` under a temporary name, then rename it in.

    The name must be free (see :func:`check_names`); a rename never replaces a folder that
    holds anything, so a folder that appeared meanwhile is refused, not merged or deleted.
    """
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=folder))
    except OSError as exc:
        raise _os_error(folder, exc) from None
    try:
        copied = staging / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, copied)
        if (folder / name).exists() or (folder / name).is_symlink():
            raise ValueError(f"out: {folder / name} appeared during the export; it is never replaced")
        os.rename(copied, folder / name)
    except OSError as exc:
        raise _os_error(folder / name, exc) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    fsync_paths(folder)  # the rename is durable once the folder's entry is on disk
