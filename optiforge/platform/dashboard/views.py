"""What each dashboard page shows, read from the store for one owner.

Every function takes the authenticated ``owner`` and reads through the store's owner-scoped
methods or :func:`~optiforge.platform.campaigns.summary.campaign_summary`, so another owner's
campaign or study raises :class:`~optiforge.platform.store.NotFoundError`, exactly like a
missing one. The values returned are plain dicts and lists for the templates (which escape
everything) and for the JSON the pages' scripts fetch.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from optiforge.agents.hollm.partition import kd_partition, leaf_size
from optiforge.blackbox.space import Space
from optiforge.platform.campaigns.summary import best_so_far, campaign_progress, campaign_summary
from optiforge.platform.store import Candidate, NotFoundError, Store, StudyRecord
from optiforge.platform.store.records import TRIAL_STATES

PAGE_SIZE = 50
"""Rows of one table page: a page renders fast whatever the campaign or study holds."""
LIVE_STATUSES = ("created", "running")
"""Statuses whose pages poll for updates (a campaign that may still change)."""
MAX_DIFF_LINES = 2000
"""Longest diff shown (a diff of two huge programs would make a huge page)."""
COLOR_BINS = 8
"""Colour groups of the parallel-coordinates lines (one SVG trace each, best last: on top)."""


@dataclass(frozen=True)
class Page:
    """One page of a table: its rows, where it starts, and the total to page through."""

    rows: list[Any]
    offset: int
    total: int
    size: int = PAGE_SIZE

    @property
    def prev_offset(self) -> int | None:
        return None if self.offset == 0 else max(0, self.offset - self.size)

    @property
    def next_offset(self) -> int | None:
        return self.offset + self.size if self.offset + self.size < self.total else None

    @property
    def last(self) -> int:
        """Position (1-based) of the page's last row."""
        return min(self.offset + self.size, self.total)


# ------------------------------------------------------------------------------ overview
def overview(store: Store, owner: str, campaign_offset: int, study_offset: int) -> dict[str, Any]:
    """The owner's campaigns (with progress) and studies, newest first, a page of each."""
    campaigns = store.list_campaigns(owner, limit=PAGE_SIZE, offset=campaign_offset)
    rows = [{"campaign": c, "used": campaign_progress(store, c)} for c in campaigns]
    studies = store.list_studies(owner, limit=PAGE_SIZE, offset=study_offset)
    return {"campaigns": Page(rows, campaign_offset, store.count_campaigns(owner)),
            "studies": Page(studies, study_offset, store.count_studies(owner))}


# ------------------------------------------------------------------------------ campaigns
def campaign_page(store: Store, owner: str, campaign_id: str, *, offset: int, order: str,
                  valid: bool | None) -> dict[str, Any]:
    """A campaign's summary, its best-so-far curve and a page of its candidates."""
    summary = campaign_summary(store, campaign_id, owner=owner, history=True)
    out: dict[str, Any] = {"summary": summary, "live": summary["status"] in LIVE_STATUSES,
                           "used": _used(summary), "blackbox": "study_id" in summary}
    if out["blackbox"]:
        return out
    total = store.count_candidates(campaign_id, valid=valid)
    rows = store.candidates(campaign_id, valid=valid, order=order, limit=PAGE_SIZE, offset=offset)
    out.update(candidates=Page(rows, offset, total), rl=_rl_by_version(summary))
    return out


def _used(summary: dict[str, Any]) -> int:
    """Budget spent, from a summary: LLM-written programs, or finished trials."""
    return summary["evaluations"] if "study_id" in summary else summary["llm_written"]


def _rl_by_version(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Mean reward and KL of each RL step (one adapter version each), oldest first."""
    return [{"version": i + 1, "name": a["name"], "mean_reward": a.get("mean_reward"),
             "kl": a.get("kl"), "loss": a.get("loss")} for i, a in enumerate(summary["adapters"])]


def campaign_live(store: Store, owner: str, campaign_id: str) -> dict[str, Any]:
    """What a campaign page polls for while the campaign may change: status, progress, curve."""
    summary = campaign_summary(store, campaign_id, owner=owner, history=True)
    return {"status": summary["status"], "used": _used(summary), "budget": summary["budget"],
            "live": summary["status"] in LIVE_STATUSES, "history": summary["history"]}


def candidate_page(store: Store, owner: str, campaign_id: str, number: int) -> dict[str, Any]:
    """One candidate: its program, evaluation, diff against its parent, and its LLM call."""
    campaign = store.get_campaign(campaign_id, owner=owner)
    cand = store.get_candidate(campaign.id, number)
    parents = [(h, store.first_candidate_with_hash(campaign.id, h)) for h in cand.parents]
    parent = next((p for _, p in parents if p is not None and p.number != cand.number), None)
    call = None
    if cand.llm_call_index is not None:
        try:
            call = store.get_llm_call(campaign.id, cand.round, cand.llm_call_index)
        except NotFoundError:  # the call was deleted with its round: show the rest
            call = None
    return {"campaign": campaign, "candidate": cand, "parents": parents, "parent": parent,
            "diff": program_diff(parent, cand) if parent is not None else [], "call": call}


def program_diff(parent: Candidate, child: Candidate) -> list[tuple[str, str]]:
    """``(kind, line)`` of the unified diff from ``parent``'s program to ``child``'s.

    ``kind`` is ``"hunk"``, ``"add"``, ``"del"`` or ``"same"`` (the template styles each and
    escapes the text). At most :data:`MAX_DIFF_LINES` lines.
    """
    old = (parent.code or "").splitlines()
    new = (child.code or "").splitlines()
    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(old, new, f"#{parent.number}", f"#{child.number}", lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        kind = {"@": "hunk", "+": "add", "-": "del"}.get(line[:1], "same")
        out.append((kind, line))
        if len(out) >= MAX_DIFF_LINES:
            out.append(("hunk", f"... diff cut at {MAX_DIFF_LINES} lines"))
            break
    return out


# ------------------------------------------------------------------------------ studies
def study_page(store: Store, owner: str, study_id: str, *, offset: int, order: str,
               states: list[str] | None) -> dict[str, Any]:
    """A study and one page of its trials."""
    study = store.get_study(study_id, owner=owner)
    total = store.count_trials(study.id, states)
    rows = store.trials(study.id, states, order=order, limit=PAGE_SIZE, offset=offset)
    counts = {s: store.count_trials(study.id, [s]) for s in TRIAL_STATES}
    campaign = _campaign_of(store, owner, study)
    return {"study": study, "trials": Page(rows, offset, total), "counts": counts,
            "names": list(study.space), "campaign": campaign}


def _campaign_of(store: Store, owner: str, study: StudyRecord) -> Any:
    """The black-box campaign that drives ``study``, if one of the owner's does."""
    for c in store.list_campaigns(owner):
        if c.config.get("study_id") == study.id:
            return c
    return None


def study_plots(store: Store, owner: str, study_id: str) -> dict[str, Any]:
    """The data of a study's plots: convergence, parallel coordinates, and (2-D) the partition.

    Parameters
    ----------
    store : Store
    owner : str
    study_id : str

    Returns
    -------
    dict
        ``convergence`` (trial numbers, values and the running best, in the study's
        direction), ``parallel`` (one line group per value bin over the encoded parameters
        and the objective) and ``partition`` (for 2-D spaces: the regions HOLLM would split
        the square into now, and the points) or ``None``.
    """
    study = store.get_study(study_id, owner=owner)
    space = Space(study.space)
    trials = store.trials(study.id)
    maximize = study.direction == "maximize"
    finished = [t for t in trials if t.state in ("complete", "failed")]
    convergence = {"number": [t.number for t in finished], "value": [t.value for t in finished],
                   "best": best_so_far((t.value for t in finished), maximize=maximize)}
    complete = [t for t in trials if t.state == "complete"]
    U = np.array([space.encode(t.params) for t in trials]) if trials else np.zeros((0, space.dim))
    done_rows = [i for i, t in enumerate(trials) if t.state == "complete"]
    return {
        "direction": study.direction,
        "convergence": convergence,
        "parallel": _parallel(space, U[done_rows], [t.value for t in complete], maximize),
        "partition": _partition(space, study, U, trials) if space.dim == 2 and trials else None,
    }


def _ticks(space: Space, j: int, n: int = 5) -> dict[str, list[Any]]:
    """Tick positions in ``[0, 1]`` and the parameter values they encode (axis labels)."""
    param = list(space.params.values())[j]
    at = [i / (n - 1) for i in range(n)]
    return {"at": at, "text": [_short(param.decode(u)) for u in at]}


def _short(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _parallel(space: Space, U: np.ndarray, values: list[float], maximize: bool) -> dict[str, Any]:
    """Parallel coordinates as polylines (SVG, no WebGL): one group per value bin.

    Each complete trial is a line through its encoded parameters and its objective scaled to
    ``[0, 1]``; lines are grouped into :data:`COLOR_BINS` bins of value, the best bin last so
    that it is drawn on top.
    """
    names = [*space.names, "objective"]
    if not values:
        return {"axes": names, "groups": [], "ticks": []}
    y = np.asarray(values, dtype=float)
    lo, hi = float(y.min()), float(y.max())
    scaled = (y - lo) / (hi - lo) if hi > lo else np.full_like(y, 0.5)
    goodness = scaled if maximize else 1.0 - scaled  # 1 = best
    bins = np.minimum((goodness * COLOR_BINS).astype(int), COLOR_BINS - 1)
    groups = []
    for b in range(COLOR_BINS):
        rows = np.flatnonzero(bins == b)
        xs: list[float | None] = []
        ys: list[float | None] = []
        for r in rows:
            xs.extend([*range(len(names)), None])
            ys.extend([*(_round(u) for u in U[r]), _round(scaled[r]), None])
        groups.append({"bin": b, "n": int(rows.size), "x": xs, "y": ys})
    ticks = [_ticks(space, j) for j in range(space.dim)]
    ticks.append({"at": [0.0, 1.0], "text": [_short(lo), _short(hi)]})
    return {"axes": names, "groups": groups, "ticks": ticks}


def _partition(space: Space, study: StudyRecord, U: np.ndarray, trials: list[Any]) -> dict[str, Any]:
    """HOLLM's KD-tree partition of the square over every trial, as the agent would fit it now.

    The agent refits the tree on all evaluated and pending points with leaf size
    ``m_t = m0 + ceil(lam * log(1 + t))`` (:func:`~optiforge.agents.hollm.partition.leaf_size`),
    so the study's own ``m0``/``lam`` options give the regions its next ask would use.
    """
    opts = study.agent_options or {}
    finished = sum(t.state in ("complete", "failed") for t in trials)
    m_t = leaf_size(finished, space.dim, opts.get("m0"), float(opts.get("lam", 0.0)))
    regions = kd_partition(U, m_t)
    xs: list[float | None] = []
    ys: list[float | None] = []
    for r in regions:  # one outline trace for all regions: thousands of shapes would be slow
        (x0, y0), (x1, y1) = r.lo, r.hi
        xs.extend([x0, x1, x1, x0, x0, None])
        ys.extend([y0, y0, y1, y1, y0, None])
    return {
        "names": space.names, "leaf_size": m_t, "n_regions": len(regions),
        "outline": {"x": [_round(v) for v in xs], "y": [_round(v) for v in ys]},
        "points": {"x": [_round(u) for u in U[:, 0]], "y": [_round(u) for u in U[:, 1]],
                   "value": [t.value for t in trials], "state": [t.state for t in trials],
                   "number": [t.number for t in trials]},
        "ticks": [_ticks(space, 0), _ticks(space, 1)],
    }


def _round(v: float | None) -> float | None:
    """Six decimals are plenty on a plot and keep the JSON of 5,000 trials small."""
    return None if v is None or not math.isfinite(v) else round(float(v), 6)
