"""Where training loops keep their checkpoints: the :class:`Checkpointer` protocol.

A trainer (DEFT's ES in :mod:`optiforge.heuristics.scheduling.train`, LMask's REINFORCE in
:mod:`optiforge.heuristics.routing.train`) serialises its whole state to bytes and hands them
to ``save`` under a name that sorts in training order; on a restart it asks ``latest`` for the
newest state. The trainers know nothing of where the bytes go: the CLI keeps them as
artifacts of a campaign in the store
(:class:`optiforge.platform.store.checkpoints.StoreCheckpointer`), scripts and tests in a
folder (:class:`DirectoryCheckpointer`). Pure Python, so the sandbox-safe layer may hold it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class Checkpointer(Protocol):
    """Keeps training states: ``save`` one per step of progress, ``latest`` the newest (or None).

    Names sort in training order (zero-padded counters), so the newest is the last by name.
    """

    def save(self, name: str, data: bytes) -> None: ...

    def latest(self) -> bytes | None: ...


class DirectoryCheckpointer:
    """Checkpoints as ``*.ckpt`` files in a folder (the CLI keeps them in the store instead).

    Parameters
    ----------
    path : str or Path
        The folder (created if missing).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    def save(self, name: str, data: bytes) -> None:
        """Write ``data`` as ``path / name`` atomically (a crash leaves the previous state)."""
        tmp = self.path / (name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(self.path / name)

    def latest(self) -> bytes | None:
        """The newest state by name, or None when the folder holds none."""
        files = sorted(self.path.glob("*.ckpt"))
        return files[-1].read_bytes() if files else None
