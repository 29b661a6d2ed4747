"""The Store: every campaign, candidate, evaluation, LLM call, artifact, study and trial."""

from __future__ import annotations

from optiforge.platform.store.artifacts import ArtifactsMixin
from optiforge.platform.store.campaigns import CampaignsMixin
from optiforge.platform.store.studies import StudiesMixin
from optiforge.platform.store.tokens import TokensMixin


class Store(CampaignsMixin, ArtifactsMixin, StudiesMixin, TokensMixin):
    """SQLAlchemy-backed persistence for optiforge (SQLite by default, PostgreSQL to share).

    Opening a Store applies any pending schema migration (Alembic, programmatically, once even
    when several processes open a fresh database together). Every write method commits before
    it returns, so what it stored survives the process being killed right afterwards; methods
    return plain frozen dataclasses (:mod:`optiforge.platform.store.records`).

    Parameters
    ----------
    url : str, optional
        SQLAlchemy URL: ``sqlite:///path.db`` or ``postgresql+psycopg://user:pw@host/db``.
        Default :func:`optiforge.platform.config.database_url` (``$OPTIFORGE_DB`` or
        ``<home>/optiforge.db``).
    artifacts_root : path, optional
        Where artifact files go (default ``<home>/artifacts``).

    Raises
    ------
    ValueError
        Malformed URL, missing driver, or a database that cannot be opened.

    Notes
    -----
    One Store may be shared by threads; each process (including a forked child) opens its
    own connections. Bad arguments raise ``TypeError``/``ValueError`` naming the argument;
    unknown ids raise :class:`NotFoundError` and contradicting writes :class:`ConflictError`
    (both subclasses of ``ValueError``).
    """
