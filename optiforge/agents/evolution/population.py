"""The heuristic pool of the CALM-style evolution agent.

Holds the evolved heuristics (idea, code, score), deduplicates them by a canonical-code
hash (:mod:`~optiforge.agents.evolution.canonical`), selects parents, keeps the global
component library that injection prompts show, and implements CALM's collapse (restart) rule.

Scores are optiforge scores: **lower is better** (CALM's performance is ``g = -score``).

References
----------
Huang, Wu, Wu, Lee, Wang. "CALM: Co-evolution of Algorithms and Language Model for
Automatic Heuristic Design." arXiv:2505.12285 (2025), ICLR 2026.
Liu et al. "Evolution of Heuristics (EoH)." ICML 2024 (rank weights ``1/(rank+1+N)``).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from optiforge.agents.evolution.canonical import normalize_code

SCORE_RTOL = 1e-9
"""Relative tolerance under which two scores count as equal (same behaviour)."""

_STOPWORDS = frozenset(
    "a an and the of to in on for with by is are be as at or it its this that from into "
    "which then than each all any we our idea algorithm".split()
)


def scores_equal(a: float, b: float) -> bool:
    """Whether two scores are equal up to :data:`SCORE_RTOL` (absolute floor 1e-12)."""
    return abs(a - b) <= max(SCORE_RTOL * max(abs(a), abs(b)), 1e-12)


def idea_tokens(idea: str | None) -> set[str]:
    """Set of lower-cased word tokens of an idea, without common stop words.

    Stop words (and the boilerplate "idea"/"algorithm" every description starts with)
    are removed so that the diversity score measures content, not phrasing.
    """
    if not idea:
        return set()
    return {t for t in re.findall(r"[a-z0-9_]+", idea.lower()) if t not in _STOPWORDS}


def diversity(first_idea: str | None, idea: str | None) -> float:
    """CALM's diversity of ``h`` with respect to crossover parent ``h_c1``.

    ``div(h_c1, h) = |T(h) \\ T(h_c1)| / |T(h)|`` where ``T`` are idea tokens
    (:func:`idea_tokens`); 0 when ``h`` has no tokens.

    Parameters
    ----------
    first_idea : str or None
        Idea of the first parent ``h_c1``.
    idea : str or None
        Idea of the candidate second parent ``h``.

    Returns
    -------
    float
        Share of ``h``'s idea tokens absent from ``h_c1``'s, in [0, 1].
    """
    tokens = idea_tokens(idea)
    if not tokens:
        return 0.0
    return len(tokens - idea_tokens(first_idea)) / len(tokens)


def rank_weights(n: int) -> np.ndarray:
    """EoH rank weights ``1/(rank + 1 + n)`` (rank 0 = best), normalised to sum to 1."""
    w = 1.0 / (np.arange(n) + 1.0 + n)
    return w / w.sum()


@dataclass
class PoolEntry:
    """One heuristic in the pool.

    Attributes
    ----------
    hash : str
        :func:`~optiforge.agents.evolution.canonical.code_hash` of ``code``.
    code : str
        Full program source.
    idea : str or None
        Natural-language description (CALM's "idea").
    score : float
        Trusted score, lower is better.
    operator : str
        Operator that produced it (``"seed"`` for task seeds).
    parents : list of str
        Hashes of the heuristics shown in the prompt.
    round : int
        Agent round in which it was observed.
    seed_name : str or None
        Name of the task seed, for seed entries.
    """

    hash: str
    code: str
    idea: str | None
    score: float
    operator: str
    parents: list[str] = field(default_factory=list)
    round: int = 0
    seed_name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PoolEntry:
        return cls(**d)


@dataclass
class Component:
    """A component description returned by an injection, kept in the global library."""

    description: str
    hash: str
    round: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Population:
    """Bounded heuristic pool with seeds protected from eviction.

    Parameters
    ----------
    capacity : int
        Maximum number of non-seed entries kept; when exceeded the worst (highest score)
        are evicted. CALM does not state a pool size; the default 16 is EoH-sized and
        keeps crossover/selection meaningful while prompts stay small. Seeds are never
        evicted because collapse must be able to restart from them.

    Notes
    -----
    Deduplication: a heuristic is rejected if its normalised-code hash is already in the
    pool, or (for non-seeds) its score equals an entry's score (EoH dedupes by objective;
    the research note recommends hash plus score tolerance).
    """

    def __init__(self, capacity: int = 16) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise ValueError(f"capacity: must be an int >= 1, got {capacity!r}")
        self.capacity = capacity
        self.entries: dict[str, PoolEntry] = {}
        self.seed_hashes: list[str] = []
        self.library: list[Component] = []

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, h: object) -> bool:
        return h in self.entries

    def get(self, h: str) -> PoolEntry | None:
        return self.entries.get(h)

    def ranked(self) -> list[PoolEntry]:
        """Entries sorted best first (score ascending; ties by round, then hash, for determinism)."""
        return sorted(self.entries.values(), key=lambda e: (e.score, e.round, e.hash))

    @property
    def best(self) -> PoolEntry | None:
        ranked = self.ranked()
        return ranked[0] if ranked else None

    def same_score(self, score: float) -> PoolEntry | None:
        """An entry whose score equals ``score`` (up to tolerance), if any."""
        for e in self.ranked():
            if scores_equal(e.score, score):
                return e
        return None

    def add(self, entry: PoolEntry) -> bool:
        """Insert ``entry``; return whether it was kept.

        Seeds (``operator == "seed"``) are rejected only for a hash collision; other entries
        also for a score collision, and they may be evicted straight away if the pool is full
        of better ones.
        """
        if not math.isfinite(entry.score):
            raise ValueError(f"entry.score: must be finite, got {entry.score!r}")
        if entry.hash in self.entries:
            return False
        is_seed = entry.operator == "seed"
        if not is_seed and self.same_score(entry.score) is not None:
            return False
        self.entries[entry.hash] = entry
        if is_seed:
            self.seed_hashes.append(entry.hash)
        self._evict()
        return entry.hash in self.entries

    def _evict(self) -> None:
        seeds = set(self.seed_hashes)
        others = [e for e in self.ranked() if e.hash not in seeds]
        for e in others[self.capacity :]:
            del self.entries[e.hash]

    # -- selection ---------------------------------------------------------------------
    def select_by_performance(
        self, rng: np.random.Generator, exclude: set[str] | None = None
    ) -> PoolEntry:
        """Draw one entry with EoH rank weights ``1/(rank+1+N)`` over the ranked pool.

        The rank weights (rather than a softmax over raw scores) are scale-free, so the
        same selection pressure applies whether scores are 0.5 % or 50 % gaps.
        """
        cands = [e for e in self.ranked() if not exclude or e.hash not in exclude]
        if not cands:
            raise ValueError("population: no entry available for selection")
        return cands[int(rng.choice(len(cands), p=rank_weights(len(cands))))]

    def select_diverse(
        self, rng: np.random.Generator, first: PoolEntry, floor: float = 0.05
    ) -> PoolEntry:
        """Second crossover parent: performance times diversity w.r.t. ``first``.

        Weight of candidate ``h`` is ``w_rank(h) * (div(h_c1, h) + floor)``; the small floor
        keeps entries with identical ideas selectable when nothing else is left.
        """
        cands = [e for e in self.ranked() if e.hash != first.hash]
        if not cands:
            raise ValueError("population: crossover needs at least two entries")
        div = np.array([diversity(first.idea, e.idea) for e in cands])
        w = rank_weights(len(cands)) * (div + floor)
        return cands[int(rng.choice(len(cands), p=w / w.sum()))]

    def select_bloated(self, rng: np.random.Generator) -> PoolEntry:
        """Simplification parent: rank weight times code length (long programs favoured)."""
        cands = self.ranked()
        if not cands:
            raise ValueError("population: no entry available for selection")
        length = np.array([len(normalize_code(e.code)) for e in cands], dtype=float)
        w = rank_weights(len(cands)) * length / length.mean()
        return cands[int(rng.choice(len(cands), p=w / w.sum()))]

    # -- library and collapse ----------------------------------------------------------
    def add_component(self, description: str, h: str, round: int) -> None:
        """Record an injected component (deduplicated case-insensitively)."""
        description = " ".join(description.split())
        if not description:
            return
        if any(c.description.lower() == description.lower() for c in self.library):
            return
        self.library.append(Component(description, h, round))

    def collapse(self) -> list[str]:
        """Keep only the seeds and the current best; return the hashes removed.

        Library components that belong to removed heuristics are dropped as well so that
        the restarted search is not steered away from components it no longer has.
        """
        best = self.best
        keep = set(self.seed_hashes) | ({best.hash} if best else set())
        removed = [h for h in self.entries if h not in keep]
        for h in removed:
            del self.entries[h]
        self.library = [c for c in self.library if c.hash in keep]
        return removed

    # -- persistence -------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "entries": [e.to_dict() for e in self.entries.values()],
            "seed_hashes": list(self.seed_hashes),
            "library": [c.to_dict() for c in self.library],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.capacity = int(state["capacity"])
        self.entries = {d["hash"]: PoolEntry.from_dict(d) for d in state["entries"]}
        self.seed_hashes = list(state["seed_hashes"])
        self.library = [Component(**c) for c in state["library"]]


def collapse_triggered(counter: int, u: float, delta0: float, collapse_C: int) -> bool:
    """CALM's collapse rule: ``u < c_n * delta0`` or ``c_n >= C`` with ``u ~ U[0, 1)``."""
    return u < counter * delta0 or counter >= collapse_C
