"""Where optiforge keeps its files and which database it talks to.

Environment variables:

``OPTIFORGE_HOME``
    Folder for the default SQLite database and campaign artifacts (default ``./.optiforge``).
``OPTIFORGE_DB``
    SQLAlchemy URL of the store, e.g. ``postgresql+psycopg://user:pw@host:5432/db``
    (default: the SQLite file ``<home>/optiforge.db``). A bare file path is read as SQLite.
``OPTIFORGE_CACHE``
    Folder for re-creatable caches such as converted model weights (default
    ``~/.cache/optiforge``); shared by every home so a model is converted once per machine.
``OPTIFORGE_SQLITE_SYNCHRONOUS``
    ``NORMAL`` (default) or ``FULL``. With SQLite's WAL journal both survive a killed process
    (nothing committed is lost); ``FULL`` also survives power loss / an OS crash, at the price
    of one fsync per commit (see docs/benchmarks/store.md).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def cache_dir() -> Path:
    """Re-creatable caches (``$OPTIFORGE_CACHE`` or ``~/.cache/optiforge``), created on demand."""
    path = Path(os.environ.get("OPTIFORGE_CACHE") or Path.home() / ".cache" / "optiforge")
    path = path.expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def home() -> Path:
    """The optiforge home folder (``$OPTIFORGE_HOME`` or ``./.optiforge``), created on demand.

    Returns
    -------
    Path
        Absolute path, so paths stored in the database stay valid from any working directory.
    """
    path = Path(os.environ.get("OPTIFORGE_HOME") or ".optiforge").expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def database_url() -> str:
    """SQLAlchemy URL of the store: ``$OPTIFORGE_DB`` or ``sqlite:///<home>/optiforge.db``."""
    url = os.environ.get("OPTIFORGE_DB", "").strip()
    if not url:
        return f"sqlite:///{home() / 'optiforge.db'}"
    if "://" not in url:
        return f"sqlite:///{Path(url).expanduser().resolve()}"
    return url


def sqlite_synchronous() -> str:
    """SQLite ``PRAGMA synchronous`` level: ``$OPTIFORGE_SQLITE_SYNCHRONOUS`` or ``NORMAL``.

    Raises
    ------
    ValueError
        If the variable holds anything but ``NORMAL`` or ``FULL`` (any case).
    """
    value = os.environ.get("OPTIFORGE_SQLITE_SYNCHRONOUS", "").strip().upper() or "NORMAL"
    if value not in ("NORMAL", "FULL"):
        raise ValueError(f"OPTIFORGE_SQLITE_SYNCHRONOUS: must be NORMAL or FULL, got {value!r}")
    return value


def artifacts_dir(campaign_id: str) -> Path:
    """Folder holding the artifacts (adapters, exports) of one campaign, created on demand.

    Raises
    ------
    ValueError
        If ``campaign_id`` could escape the artifacts folder (path separators, ``..``).
    """
    if not isinstance(campaign_id, str) or not _SAFE_ID.match(campaign_id) or ".." in campaign_id:
        raise ValueError(f"campaign_id: not a valid campaign id: {campaign_id!r}")
    path = home() / "artifacts" / campaign_id
    path.mkdir(parents=True, exist_ok=True)
    return path
