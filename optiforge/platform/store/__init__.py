"""Persistence: SQLAlchemy 2 + Alembic, SQLite (WAL) by default, PostgreSQL for shared use.

>>> store = Store("sqlite:///demo.db")                              # doctest: +SKIP
>>> cid = store.create_campaign(task="binpacking", agent="evolution", llm="smollm2",
...                             budget=40, seed=0, executor="local")  # doctest: +SKIP
"""

from optiforge.platform.store.errors import ConflictError, NotFoundError
from optiforge.platform.store.records import (
    Artifact,
    Campaign,
    Candidate,
    CandidateIn,
    CandidateOutline,
    EvaluationRecord,
    LLMCall,
    LLMCallIn,
    StudyRecord,
    TokenInfo,
    Trial,
)
from optiforge.platform.store.store import Store

__all__ = [
    "Artifact",
    "Campaign",
    "Candidate",
    "CandidateIn",
    "CandidateOutline",
    "ConflictError",
    "EvaluationRecord",
    "LLMCall",
    "LLMCallIn",
    "NotFoundError",
    "Store",
    "StudyRecord",
    "TokenInfo",
    "Trial",
]
