"""Artifacts: files and folders kept for a campaign (LoRA adapter versions, exports)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from optiforge import validation as v
from optiforge.files import fsync_tree
from optiforge.platform import config
from optiforge.platform.store.base import StoreBase
from optiforge.platform.store.errors import ConflictError
from optiforge.platform.store.models import ArtifactRow, utcnow
from optiforge.platform.store.records import Artifact


def _artifact(r: ArtifactRow) -> Artifact:
    return Artifact(
        id=r.id, campaign_id=r.campaign_id, kind=r.kind, name=r.name, path=Path(r.path),
        sha256=r.sha256, size_bytes=r.size_bytes, meta=r.meta, created_at=r.created_at,
    )


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def digest(path: Path) -> tuple[str, int]:
    """SHA-256 and size of a file, or of a folder (over its sorted relative paths and contents).

    Returns
    -------
    (str, int)
        Hex digest and total size in bytes.
    """
    if path.is_file():
        return _file_sha256(path), path.stat().st_size
    h, size = hashlib.sha256(), 0
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        rel = f.relative_to(path).as_posix()
        h.update(rel.encode() + b"\0" + _file_sha256(f).encode() + b"\n")
        size += f.stat().st_size
    return h.hexdigest(), size


def _make_private(path: Path) -> None:
    """Owner-only modes (files 0600, folders 0700) on a kept artifact: a copy keeps its
    source's mode, and an adapter may hold what was learnt from another owner's data."""
    if path.is_symlink():
        return
    if not path.is_dir():
        os.chmod(path, config.PRIVATE_FILE_MODE)
        return
    os.chmod(path, config.PRIVATE_DIR_MODE)
    for root, dirs, files in os.walk(path):
        for d in dirs:
            if not os.path.islink(os.path.join(root, d)):
                os.chmod(os.path.join(root, d), config.PRIVATE_DIR_MODE)
        for f in files:
            if not os.path.islink(os.path.join(root, f)):
                os.chmod(os.path.join(root, f), config.PRIVATE_FILE_MODE)


def _check_name(name: Any) -> str:
    name = v.text(name, "name", max_len=255)
    if name in (".", "..") or "/" in name or "\\" in name or "\0" in name or name.startswith("."):
        raise ValueError(f"name: must be a plain file name (no path separators or leading dot), got {name!r}")
    return name


class ArtifactsMixin(StoreBase):
    def artifact_dir(self, campaign_id: str) -> Path:
        """The folder where ``campaign_id``'s artifacts live (created on demand)."""
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
        if self._artifacts_root is not None:
            return config.make_private_dir(config.make_private_dir(self._artifacts_root) / cid)
        return config.artifacts_dir(cid)

    def add_artifact(
        self,
        campaign_id: str,
        kind: str,
        name: str,
        path_or_bytes: str | os.PathLike | bytes,
        meta: dict[str, Any] | None = None,
    ) -> Artifact:
        """Keep a file, a folder or raw bytes as an artifact of the campaign.

        The content is copied to ``artifact_dir(campaign_id) / name`` (a path already there is
        recorded in place), flushed to disk, hashed (SHA-256), and then recorded.

        Parameters
        ----------
        kind : str
            What it is, e.g. ``"adapter"`` or ``"export"``.
        name : str
            A plain file name, unique per (campaign, kind).
        path_or_bytes : path or bytes
            Source file/folder, or the content itself.
        meta : dict, optional
            JSON metadata (e.g. RL step, mean reward, KL).

        Raises
        ------
        NotFoundError
            Unknown campaign.
        ConflictError
            An artifact with this kind and name exists, or another file occupies the name.
        ValueError / TypeError
            Missing source path, unsafe name, non-JSON meta.
        """
        kind = v.text(kind, "kind", max_len=64)
        name = _check_name(name)
        meta = v.json_dict(meta, "meta", optional=True)
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            data: bytes | None = bytes(path_or_bytes)
            src = None
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            data = None
            src = Path(path_or_bytes).expanduser().resolve()
            if not src.exists():
                raise ValueError(f"path_or_bytes: no such file or folder: {src}")
        else:
            raise TypeError(
                f"path_or_bytes: expected a path or bytes, got {type(path_or_bytes).__name__}"
            )
        directory = self.artifact_dir(campaign_id)
        dest = directory / name
        copied = False
        if src is None or src != dest.resolve():
            if dest.exists() or dest.is_symlink():
                if self._recorded(dest):
                    raise ConflictError(f"name: {dest} already exists")
                # No row records it: a process killed between the rename below and the
                # commit left it. It holds nothing the store knows of, so this add replaces it
                # (otherwise a resumed run could never save that checkpoint name again).
                (shutil.rmtree if dest.is_dir() and not dest.is_symlink() else os.unlink)(dest)
            # Write next to the destination, then rename: a crash never leaves half a file
            # under the final name.
            tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=directory)) / name
            if data is not None:
                tmp.write_bytes(data)
            elif src.is_dir():
                shutil.copytree(src, tmp)
            else:
                shutil.copy2(src, tmp)
            _make_private(tmp)
            fsync_tree(tmp)
            os.replace(tmp, dest)
            shutil.rmtree(tmp.parent, ignore_errors=True)
            copied = True
        else:
            _make_private(dest)
            fsync_tree(dest)
        sha, size = digest(dest)
        row = ArtifactRow(kind=kind, name=name, path=str(dest), sha256=sha, size_bytes=size,
                          meta=meta, created_at=utcnow())
        try:
            with self._write() as s:
                row.campaign_id = self._campaign_row(s, campaign_id).id
                s.add(row)
                s.flush()
        except IntegrityError as exc:
            if copied:
                (shutil.rmtree if dest.is_dir() else os.unlink)(dest)
            raise ConflictError(
                f"name: campaign {campaign_id} already has a {kind!r} artifact named {name!r}"
            ) from exc
        return _artifact(row)

    def _recorded(self, path: Path) -> bool:
        with self._read() as s:
            return s.scalar(select(ArtifactRow.id).where(ArtifactRow.path == str(path)).limit(1)) is not None

    def artifacts(self, campaign_id: str, kind: str | None = None) -> list[Artifact]:
        """The campaign's artifacts, oldest first (so ``[-1]`` is the newest)."""
        with self._read() as s:
            cid = self._campaign_row(s, campaign_id).id
            q = select(ArtifactRow).where(ArtifactRow.campaign_id == cid)
            if kind is not None:
                q = q.where(ArtifactRow.kind == v.text(kind, "kind", max_len=64))
            return [_artifact(r) for r in s.scalars(q.order_by(ArtifactRow.id))]
