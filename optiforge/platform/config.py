"""Where optiforge keeps its files and which database it talks to.

Environment variables:

``OPTIFORGE_HOME``
    Folder for the default SQLite database and campaign artifacts (default ``./.optiforge``).
    It holds every owner's studies and campaigns, so optiforge creates it (and everything in
    it) private to the user running it: folders 0700, files 0600. An existing home that group
    or other users can access is used as it is, with an :class:`InsecurePermissionsWarning`.
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
import stat
import threading
import warnings
from pathlib import Path

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

_warned: set[Path] = set()
_warned_lock = threading.Lock()


class InsecurePermissionsWarning(UserWarning):
    """An existing optiforge folder or database file that other local users can access."""


def make_private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) with the new folder itself private (0700).

    An existing folder keeps its mode: it may be shared on purpose, and changing a user's
    permissions silently is not ours to do (:func:`home` warns about a shared home instead).
    Parents created on the way get the default mode, like ``mkdir -p``.

    Returns
    -------
    Path
        ``path``, now an existing folder.

    Raises
    ------
    ValueError
        If ``path`` exists and is not a folder.
    OSError
        If the folder cannot be created (permissions, read-only file system).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ValueError(f"{path.parent} exists and is not a folder") from None
    try:
        path.mkdir(mode=PRIVATE_DIR_MODE)
    except FileExistsError:
        if not path.is_dir():
            raise ValueError(f"{path} exists and is not a folder") from None
        return path
    # mkdir's mode is filtered by the umask, which may leave it wider or narrower than asked.
    os.chmod(path, PRIVATE_DIR_MODE)
    return path


def warn_if_shared(path: Path) -> None:
    """Warn (once per path and process) when group or others have any access to ``path``."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if not mode & (stat.S_IRWXG | stat.S_IRWXO):
        return
    with _warned_lock:
        if path in _warned:
            return
        _warned.add(path)
    warnings.warn(
        f"{path} is accessible to other local users (mode {stat.filemode(mode)}); it may hold "
        f"every owner's studies and campaigns. Make it private with: chmod -R go-rwx {path}",
        InsecurePermissionsWarning,
        stacklevel=3,
    )


def cache_dir() -> Path:
    """Re-creatable caches (``$OPTIFORGE_CACHE`` or ``~/.cache/optiforge``), created on demand."""
    path = Path(os.environ.get("OPTIFORGE_CACHE") or Path.home() / ".cache" / "optiforge")
    path = path.expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def home_path() -> Path:
    """Where the optiforge home is (``$OPTIFORGE_HOME`` or ``./.optiforge``), without creating it.

    Returns
    -------
    Path
        Absolute path, so paths stored in the database stay valid from any working directory.
    """
    return Path(os.environ.get("OPTIFORGE_HOME") or ".optiforge").expanduser().resolve()


def home() -> Path:
    """The optiforge home folder, created private (0700) on demand; see :func:`home_path`.

    An existing home that group or others can access is used as it is, with an
    :class:`InsecurePermissionsWarning` (once per process).
    """
    path = home_path()
    try:
        make_private_dir(path)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"OPTIFORGE_HOME: cannot use {path} as the optiforge home: {reason}") from None
    warn_if_shared(path)
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
    return make_private_dir(make_private_dir(home() / "artifacts") / campaign_id)
