"""Connection handling shared by the Store's parts: sessions, locking, id checks."""

from __future__ import annotations

import os
import threading
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from optiforge import validation as v
from optiforge.platform import config
from optiforge.platform.store.engine import is_memory, make_engine, upgrade, writer
from optiforge.platform.store.errors import NotFoundError
from optiforge.platform.store.models import CampaignRow

_OPEN_STORES: weakref.WeakSet = weakref.WeakSet()


def _after_fork_in_child() -> None:
    # A forked child must not reuse the parent's pooled connections (two processes on one
    # socket / SQLite handle corrupt each other's state); it opens fresh ones on demand.
    for store in list(_OPEN_STORES):
        store.engine.dispose(close=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def new_id() -> str:
    """A short unique id: 12 hex digits (48 random bits)."""
    return uuid.uuid4().hex[:12]


class StoreBase:
    """Engine, sessions and schema upgrade; the public methods live in the mixins."""

    def __init__(self, url: str | None = None, *, artifacts_root: str | Path | None = None) -> None:
        if url is None:
            url = config.database_url()
        v.text(url, "url", max_len=None)
        self.url: str = url
        self.engine = make_engine(url)
        self._writer = writer(self.engine)
        # An in-memory SQLite database is one shared connection: serialise its users.
        self._lock = threading.RLock() if is_memory(self.engine) else None
        self._artifacts_root = Path(artifacts_root).expanduser().resolve() if artifacts_root else None
        try:
            upgrade(self.engine)
        except DBAPIError as exc:
            self.engine.dispose()
            shown = make_url(url).render_as_string(hide_password=True)
            reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
            raise ValueError(f"url: cannot open the store at {shown}: {reason}") from exc
        _OPEN_STORES.add(self)

    def __repr__(self) -> str:
        return f"Store({make_url(self.url).render_as_string(hide_password=True)!r})"

    def close(self) -> None:
        """Release every pooled connection (the Store is unusable afterwards)."""
        _OPEN_STORES.discard(self)
        self.engine.dispose()

    def __enter__(self) -> StoreBase:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------- sessions
    def _locked(self) -> Any:
        return self._lock if self._lock is not None else nullcontext()

    @contextmanager
    def _read(self) -> Iterator[Session]:
        with self._locked(), Session(self.engine) as session:
            yield session

    @contextmanager
    def _write(self) -> Iterator[Session]:
        """One write transaction: committed when the block exits, rolled back on any error."""
        with self._locked(), Session(self._writer, expire_on_commit=False) as session:
            with session.begin():
                yield session

    # ---------------------------------------------------------------- helpers
    @staticmethod
    def _check_id(value: Any, name: str) -> str:
        if not isinstance(value, str):
            raise TypeError(f"{name}: expected a string id, got {type(value).__name__}")
        return value

    def _campaign_row(self, session: Session, campaign_id: Any, owner: str | None = None) -> CampaignRow:
        cid = self._check_id(campaign_id, "campaign_id")
        row = session.get(CampaignRow, cid)
        # Another owner's campaign answers exactly like a missing one: its existence never leaks.
        if row is None or (owner is not None and row.owner != owner):
            raise NotFoundError(f"campaign_id: no campaign {cid!r}")
        return row


def page(query: Any, limit: Any, offset: Any) -> Any:
    """``query`` restricted to ``limit`` rows (all when ``None``) after skipping ``offset``."""
    offset = v.integer(offset, "offset", minimum=0)
    if limit is not None:
        query = query.limit(v.integer(limit, "limit", minimum=1))
    return query.offset(offset) if offset else query
