"""What a finished campaign reports, and how a campaign's status follows its run."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from optiforge.agents.evolution import GRAFT_OPERATOR, TUNE_OPERATOR
from optiforge.platform.store import Store

ProgressCallback = Callable[[int, int, float | None], None]
"""Called after each round with (budget used so far, budget, best score so far)."""


@contextmanager
def campaign_status(store: Store, campaign_id: str) -> Iterator[None]:
    """Mark the campaign ``running`` for the block; ``interrupted`` or ``failed`` if it raises.

    A ``kill -9`` leaves it stored as ``running``; it reads as ``interrupted`` once its process
    is gone (see :mod:`~optiforge.platform.store.runners`).
    """
    store.set_campaign_status(campaign_id, "running")
    try:
        yield
    except KeyboardInterrupt:
        store.set_campaign_status(campaign_id, "interrupted")
        raise
    except BaseException:
        store.set_campaign_status(campaign_id, "failed")
        raise


_NOT_LLM = {
    TUNE_OPERATOR: "a pool heuristic's constants set by a HOLLM study",
    GRAFT_OPERATOR: "a term built from the task's features, its constants set by a HOLLM study",
}
"""How a verdict names the operators whose children no LLM wrote (the user should know)."""


def _origin(operator: str | None, llm_ancestor: str | None) -> str:
    """The verdict's words for where the best program came from: written by the LLM, a
    tuned or grafted child of an LLM-written program, or nothing the LLM wrote."""
    if operator not in _NOT_LLM:
        return f"{operator}, written by the LLM"
    how = _NOT_LLM[operator]
    if llm_ancestor is None:
        return f"{operator}: {how}; not written by the LLM, and no LLM-written program in its lineage"
    return f"{operator}: {how}, on a program the LLM wrote ({llm_ancestor})"


@dataclass
class CampaignReport:
    """What a finished campaign found, as printed by ``optiforge campaign run``.

    For a program campaign ``best_code`` is the best program, scored on the train split and
    re-scored with the baseline on ``test_split``; for a black-box campaign ``best_params``
    is the best point, ``best_test_score`` its value and the baseline the known optimum.
    """

    campaign_id: str
    task: str
    generated: int
    best_code: str | None
    best_idea: str | None
    best_train_score: float | None
    best_test_score: float | None
    baseline: str | None
    baseline_test_score: float | None
    test_split: str = "test"
    best_params: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    best_operator: str | None = None
    """How the best program came to be (``"seed"`` when no generated program beat the seeds)."""
    llm_ancestor: str | None = None
    """The operator of the nearest LLM-written program in the best's lineage (itself, or the
    parent a ``tune`` / ``graft`` chain started from); ``None`` when no LLM wrote any of it."""
    timed_out: bool = False
    """The run's timeout ended it before the budget was spent (the campaign is resumable)."""
    test_by_dataset: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per dataset of the held-out split, ``{"best": score, "baseline": score}`` (tasks whose
    splits are named datasets): the aggregate can hide a loss on one distribution."""

    @property
    def gap_vs_baseline(self) -> float | None:
        """Best test score minus the baseline's (negative = better; regret for black-box)."""
        if self.best_test_score is None or self.baseline_test_score is None:
            return None
        return self.best_test_score - self.baseline_test_score

    @property
    def llm_discovered(self) -> bool:
        """A discovery with an LLM-written program in its lineage (the LLM's, not graft + tune's alone)."""
        return self.discovered and self.llm_ancestor is not None

    @property
    def discovered(self) -> bool:
        """Whether a generated (not seed) program beats the baseline on the held-out split."""
        gap = self.gap_vs_baseline
        return self.best_operator not in (None, "seed") and gap is not None and gap < 0

    def verdict(self) -> str:
        """One plain sentence: did the campaign find something better than its baseline?

        A seed is never presented as a discovery, and a generated program that is better on
        train but not on the held-out split is reported as what it is.
        """
        base, split = self.baseline, self.test_split
        if self.best_operator == "seed":
            return (f"no discovery: no generated heuristic beat the seeds on train; the best is "
                    f"a seed ({split} {self.best_test_score:.3f}, {base} {self.baseline_test_score:.3f})"
                    if self.best_test_score is not None and self.baseline_test_score is not None
                    else "no discovery: no generated heuristic beat the seeds on train")
        gap = self.gap_vs_baseline
        if gap is None:
            return f"no verdict: the held-out {split} scores are missing"
        if gap < 0:
            return (f"discovery: the best generated heuristic ({_origin(self.best_operator, self.llm_ancestor)}) "
                    f"beats {base} "
                    f"on the held-out {split} split: {self.best_test_score:.3f} vs "
                    f"{self.baseline_test_score:.3f} ({-gap:.3f} points better)")
        return (f"no discovery: the best generated heuristic ({self.best_operator}) is better on "
                f"train but not on the held-out {split} split: {self.best_test_score:.3f} vs "
                f"{base} {self.baseline_test_score:.3f}")


def report_to_json(report: CampaignReport) -> str:
    d = dict(report.__dict__)
    d["gap_vs_baseline"] = report.gap_vs_baseline
    d["discovered"] = report.discovered
    d["llm_discovered"] = report.llm_discovered
    return json.dumps(d, indent=2)
