"""Black-box campaigns: ``optiforge campaign run --task ackley-20 --agent hollm``.

Each round asks the HOLLM agent for a batch of points, evaluates the task's objective (trusted
code shipped with optiforge, so it runs in process), tells the agent and commits the batch with
the agent's state in one transaction — resumable like a discovery campaign.
"""

from __future__ import annotations

import json
import math
import time

from optiforge.platform.orchestrator import CampaignReport, ProgressCallback, campaign_status
from optiforge.platform.store import CandidateIn, Store
from optiforge.types import content_hash


class BlackboxCampaign:
    """Runs (or resumes) a stored campaign whose agent is ``hollm``.

    The campaign's ``config["agent_options"]`` are HOLLM's options (``proposer``,
    ``predictor``, ``m``, ``k``, ``b``, ...); ``budget`` counts objective evaluations.
    """

    def __init__(self, store: Store, campaign_id: str) -> None:
        from optiforge.agents.hollm import HOLLMAgent
        from optiforge.blackbox import get_blackbox_task

        self.store = store
        self.campaign = store.get_campaign(campaign_id)
        self.task = get_blackbox_task(self.campaign.task)
        options = dict(self.campaign.config.get("agent_options", {}))
        options.setdefault("budget", self.campaign.budget)
        llm = None
        if self.campaign.llm and self.campaign.llm != "none":
            from optiforge.platform.llm import from_spec

            llm = from_spec(self.campaign.llm)
        self.agent = HOLLMAgent(self.task.space, options, llm=llm, seed=self.campaign.seed)
        self._round = 0

    def run(self, progress: ProgressCallback | None = None) -> CampaignReport:
        cid = self.campaign.id
        with campaign_status(self.store, cid):
            saved = self.store.latest_agent_state(cid)
            if saved is not None:
                self._round = saved[0] + 1
                self.agent.load_state_dict(saved[1]["agent"])
            done = self.agent.n_observed
            while done < self.campaign.budget:
                batch = self.agent.ask(min(self.agent.config.b, self.campaign.budget - done))
                cands = []
                for params in batch:
                    start = time.perf_counter()
                    try:
                        value: float | None = self.task(params)
                        error = None if math.isfinite(value) else f"non-finite value {value}"
                    except (ValueError, ArithmeticError) as exc:
                        value, error = None, f"{type(exc).__name__}: {exc}"
                    if error is not None:
                        value = None
                    self.agent.tell(params, value)
                    code = json.dumps(params, sort_keys=True)
                    cands.append(CandidateIn(
                        hash=content_hash(code), operator="hollm", code=code, valid=value is not None,
                        score=value, error=error, runtime_s=time.perf_counter() - start,
                    ))
                self.store.record_round(cid, round=self._round, candidates=cands, llm_calls=[],
                                        agent_state={"agent": self.agent.state_dict()})
                self._round += 1
                done += len(batch)
                if progress:
                    best = self.agent.best
                    progress(done, self.campaign.budget, None if best is None else best[1])
        self.store.set_campaign_status(cid, "finished")
        best = self.store.best_candidates(cid, k=1)
        report = CampaignReport(
            campaign_id=cid, task=self.task.name, generated=done,
            best_code=best[0].code if best else None, best_idea=None,
            best_train_score=best[0].score if best else None,
            best_test_score=best[0].score if best else None,
            baseline="known optimum" if self.task.optimum is not None else None,
            baseline_test_score=self.task.optimum, test_split="objective",
        )
        return report
