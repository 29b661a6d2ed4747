"""The step of a black-box campaign: a :class:`~optiforge.platform.study.Study` driven in process.

``optiforge campaign run --task ackley-20 --agent hollm`` creates a study (owner ``"local"``)
and links it to the campaign; each round asks the study for a batch, evaluates the task's
objective (optiforge's own trusted code, so it runs in process) and tells the results. The
evaluations are the study's trials, the one storage path for points: ``campaign show`` and
``campaign export`` read them, and ``optiforge study show`` sees the same study.

Resume needs no saved agent state: the study replays its trials into a fresh agent, and the
agent's proposals depend only on its seed and the trials. Trials a kill left running are
evaluated first, so nothing is lost and the budget is spent exactly.
"""

from __future__ import annotations

import math
from typing import Any

from optiforge.blackbox import BlackboxTask
from optiforge.platform.campaigns.report import CampaignReport
from optiforge.platform.store import Campaign
from optiforge.platform.study import Study, Trial


class BlackboxCampaign:
    """Drives a black-box agent over a stored campaign's study, one batch at a time.

    Parameters
    ----------
    campaign : Campaign
        The stored campaign (its ``budget`` counts objective evaluations).
    task : BlackboxTask
        The objective (minimised).
    study : Study
        The campaign's study (``campaign.config["study_id"]``).
    batch : int
        Points asked per round (HOLLM's ``b``).
    """

    def __init__(self, campaign: Campaign, task: BlackboxTask, study: Study, batch: int) -> None:
        self.campaign = campaign
        self.task = task
        self.study = study
        self.batch = batch

    def restore(self) -> bool:
        """Whether the study already has trials (a resumed campaign)."""
        return bool(self.study.get_trials())

    def start(self) -> None:
        """Nothing to seed: the agent's initial design is its first asks."""

    def used(self) -> int:
        """Objective evaluations done (complete or failed trials)."""
        return len(self.study.get_trials(["complete", "failed"]))

    def best_score(self) -> float | None:
        best = self.study.best_trial
        return None if best is None else best.value

    def _evaluate(self, trial: Trial) -> None:
        try:
            value = float(self.task(trial.params))
        except (ValueError, ArithmeticError):
            value = math.nan
        if math.isfinite(value):
            self.study.tell(trial.id, value)
        else:
            self.study.tell(trial.id, state="failed")

    def run_round(self, remaining: int) -> None:
        """Evaluate trials left running by a kill, else ask a new batch and evaluate it."""
        trials = self.study.get_trials(["running"]) or self.study.ask(min(self.batch, remaining))
        for trial in trials:
            self._evaluate(trial)

    def report(self) -> CampaignReport:
        best = self.study.best_trial
        extra: dict[str, Any] = {"study_id": self.study.id}
        return CampaignReport(
            campaign_id=self.campaign.id, task=self.task.name, generated=self.used(),
            best_code=None, best_idea=None,
            best_train_score=None if best is None else best.value,
            best_test_score=None if best is None else best.value,
            baseline="known optimum" if self.task.optimum is not None else None,
            baseline_test_score=self.task.optimum, test_split="objective",
            best_params=None if best is None else best.params, extra=extra,
        )
