"""The step of a program campaign: one round of heuristic evolution (CALM).

One round::

    agent.propose()          -> one prompt, G LLM samples, parsed programs
    evaluator.evaluate(...)  -> sandboxed runs + trusted scores (only programs never seen)
    agent.observe(...)       -> pool / component library / collapse update, CALM rewards
    store.record_round(...)  -> candidates, evaluations, LLM calls, agent state: one transaction
    [every K rounds] learner.step(...) -> a new LoRA adapter version

Every ``tune_every`` rounds the agent may ask for a ``tune`` round instead: a stored HOLLM
study sets the constants of a pool heuristic, each variant scored in the sandbox on the train
split (:mod:`optiforge.platform.campaigns.tune`); the best variant, if it beats its parent,
is stored as a child with ``operator="tune"`` and its constants and study id in its metrics.
A tune round with nothing to tune is a ``graft`` round for a task with features: a few terms
are grafted onto one pool heuristic, each tuned by its own study, and the children that beat
it are stored with ``operator="graft"`` (the term sits beside the constants).

Because every round is committed together with the agent's state, a campaign killed at any
point (even ``kill -9``) resumes from its last committed round and loses no stored
evaluation; only the round in flight is redone. An RL step that was due when the process
died is taken at once on resume.
"""

from __future__ import annotations

import shutil
from typing import Any

from optiforge.agents.evolution import Program, Proposal, TuneRequest
from optiforge.agents.protocols import PolicyLearner, ProgramEvaluator, TrainableLLM
from optiforge.heuristics import HeuristicTask, NamedDatasetSplits
from optiforge.platform.campaigns.report import CampaignReport
from optiforge.platform.campaigns.summary import campaign_progress, llm_ancestor
from optiforge.platform.campaigns.tune import TuneResult, tune_constants
from optiforge.platform.resources import returning_freed_tensors
from optiforge.platform.store import Campaign, CandidateIn, LLMCallIn, Store
from optiforge.types import Evaluation

Group = tuple[str, list[str], list[float]]


def _with_tune_record(result: TuneResult) -> Evaluation:
    """The tuned child's evaluation, with its constants, term and study beside the scorer's
    metrics, so the child can be looked at (and its study opened) later."""
    ev = result.evaluation
    assert ev is not None
    return Evaluation(valid=ev.valid, score=ev.score, error=ev.error, runtime_s=ev.runtime_s,
                      metrics={**ev.metrics, "tune": result.record()})


class ProgramCampaign:
    """Drives a program agent (``evolution``) for a stored campaign, one round at a time.

    Parameters
    ----------
    store : Store
        Where the campaign lives.
    campaign : Campaign
        The stored campaign.
    task : HeuristicTask
        The task its programs implement.
    agent : EvolutionAgent
        The program agent (built from the registry).
    evaluator : ProgramEvaluator
        Sandboxed evaluation (an executor).
    learner : PolicyLearner, optional
        Fine-tunes ``llm`` every ``rl_every`` rounds; ``None`` disables RL.
    llm : TrainableLLM, optional
        The model the learner trains (its chat template formats the stored prompts).
    rl_every : int
        Rounds between two RL steps.
    test_split : str
        The held-out split of the final report.
    """

    def __init__(self, store: Store, campaign: Campaign, task: HeuristicTask, agent: Any,
                 evaluator: ProgramEvaluator, learner: PolicyLearner | None = None,
                 llm: TrainableLLM | None = None, rl_every: int = 2, test_split: str = "test") -> None:
        self.store = store
        self.campaign = campaign
        self.task = task
        self.agent = agent
        self.evaluator = evaluator
        self.learner = learner
        self.llm = llm
        self.rl_every = rl_every
        self.test_split = test_split
        self._round = 0
        self._rl_steps = 0
        self._pending_groups: list[Group] = []

    # ------------------------------------------------------------------ state
    def restore(self) -> bool:
        """Load the last committed round's state; ``False`` for a campaign not yet started."""
        saved = self.store.latest_agent_state(self.campaign.id)
        if saved is None:
            return False
        round_, state = saved
        self.agent.load_state_dict(state["agent"])
        self._pending_groups = [(p, list(c), list(r)) for p, c, r in state.get("pending_groups", [])]
        self._rl_steps = int(state.get("rl_steps", 0))
        self._round = round_ + 1
        if self.learner is not None:
            adapters = self.store.artifacts(self.campaign.id, kind="adapter")
            if adapters:
                # The learner's adapter lives in the generator's own model object, so loading
                # it is all the generator needs.
                self.learner.load(adapters[-1].path)
            if self.learner.step_count > self._rl_steps:
                # The step after that round finished (its adapter is stored): its groups are spent.
                self._rl_steps, self._pending_groups = self.learner.step_count, []
            elif self._pending_groups and self._round % self.rl_every == 0:
                self._rl_step()  # due when the process died
        return True

    def _state(self) -> dict[str, Any]:
        return {"agent": self.agent.state_dict(), "pending_groups": self._pending_groups,
                "rl_steps": self._rl_steps}

    def used(self) -> int:
        """LLM-written programs stored so far (the budget counts these)."""
        return campaign_progress(self.store, self.campaign)

    def best_score(self) -> float | None:
        best = self.agent.best
        return None if best is None else best.score

    # ------------------------------------------------------------------ rounds
    def _evaluate(self, programs: list[Program]) -> list[Evaluation]:
        """Evaluate a round's programs: parse errors and programs seen before cost nothing."""
        evals: dict[int, Evaluation] = {}
        todo: dict[str, list[int]] = {}  # identical programs inside one round run once
        for i, p in enumerate(programs):
            known = None if p.hash is None else self.agent.known_evaluation(p.hash)
            if p.code is None:
                evals[i] = Evaluation.invalid(p.error or "no program in the response")
            elif known is not None:
                evals[i] = known
            else:
                todo.setdefault(p.hash or "", []).append(i)
        if todo:
            codes = [programs[idx[0]].code for idx in todo.values()]
            results = self.evaluator.evaluate(self.task, codes, "train")
            for idx, ev in zip(todo.values(), results, strict=True):
                for i in idx:
                    evals[i] = ev
        return [evals[i] for i in range(len(programs))]

    def _record(self, proposal: Proposal, evals: list[Evaluation], rewards: list[float] | None) -> None:
        calls = [
            LLMCallIn(prompt=proposal.prompt, response=c.text, prompt_tokens=c.prompt_tokens,
                      completion_tokens=c.completion_tokens, model=self.campaign.llm,
                      operator=proposal.operator, reward=None if rewards is None else rewards[i])
            for i, c in enumerate(proposal.completions)
        ]
        cands = [
            CandidateIn(hash=p.hash or "", operator=proposal.operator, code=p.code, idea=p.idea,
                        parents=list(proposal.parents), split="train", valid=ev.valid,
                        score=ev.score, metrics=ev.metrics, error=ev.error, runtime_s=ev.runtime_s,
                        reward=None if rewards is None else rewards[i],
                        llm_call_index=i if calls else None)
            for i, (p, ev) in enumerate(zip(proposal.programs, evals, strict=True))
        ]
        self.store.record_round(self.campaign.id, round=self._round, candidates=cands,
                                llm_calls=calls, agent_state=self._state())
        self._round += 1

    def start(self) -> None:
        """The seed round: the task's seed heuristics, evaluated and stored (no LLM call)."""
        proposal = self.agent.propose()
        evals = self._evaluate(proposal.programs)
        self.agent.observe(proposal, evals)
        self._record(proposal, evals, None)

    def run_round(self, remaining: int) -> None:
        """One round: a tune round when the agent asks for one, else an LLM round
        (``remaining`` budget is not split: a round is G programs)."""
        request = self.agent.tune_target()
        if request is not None:
            self._tune_round(request)
            return
        grafts = self.agent.graft_targets()
        if grafts:
            self._graft_round(grafts)
            return
        proposal = self.agent.propose()
        evals = self._evaluate(proposal.programs)
        rewards = self.agent.observe(proposal, evals)
        if self.learner is not None and self.llm is not None and proposal.completions:
            prompt = self.llm.format_prompt(proposal.prompt, self.agent.config.system)
            self._pending_groups.append((prompt, [c.text for c in proposal.completions], list(rewards)))
        self._record(proposal, evals, rewards)
        if self.learner is not None and self._round % self.rl_every == 0:
            self._rl_step()

    def _tune_round(self, request: TuneRequest) -> None:
        """Tune a pool heuristic's constants; its best variant (if better) joins as a child."""
        result = tune_constants(self.store, self.evaluator, self.task, request,
                                owner=self.campaign.owner, label=self.campaign.id)
        proposal = self.agent.tune_proposal(request, result.code)
        evals = [] if result.evaluation is None else [_with_tune_record(result)]
        self.agent.observe(proposal, evals)
        self._record(proposal, evals, None)

    def _graft_round(self, requests: list[TuneRequest]) -> None:
        """Graft terms onto a pool heuristic, one study each; children that beat it join."""
        results = [tune_constants(self.store, self.evaluator, self.task, r,
                                  owner=self.campaign.owner, label=self.campaign.id) for r in requests]
        proposal = self.agent.graft_proposal(requests, [r.code for r in results])
        evals = [_with_tune_record(r) for r in results if r.code is not None]
        self.agent.observe(proposal, evals)
        self._record(proposal, evals, None)

    def _rl_step(self) -> None:
        learner = self.learner
        if learner is None or not self._pending_groups:
            return
        with returning_freed_tensors():  # the update's activations and logits go back to the OS
            stats = learner.step(self._pending_groups)
        cid = self.campaign.id
        directory = self.store.artifact_dir(cid) / f"adapter-{learner.step_count:04d}"
        if directory.exists():
            # Left by a process killed between saving and recording this very version: the
            # store never knew it, and the step is being redone from the previous version.
            shutil.rmtree(directory)
        learner.save(directory)
        self.store.add_artifact(cid, "adapter", directory.name, directory,
                                meta={k: float(v) for k, v in stats.items() if isinstance(v, int | float)})
        self._pending_groups, self._rl_steps = [], learner.step_count
        # Resuming needs only the newest optimizer state; older versions keep their adapters.
        for old in self.store.artifacts(cid, kind="adapter")[:-1]:
            try:
                learner.drop_optimizer_state(old.path)
            except ValueError:  # moved or deleted by the user: nothing left to drop
                pass

    # ------------------------------------------------------------------ report
    def report(self) -> CampaignReport:
        """Re-score the best program and the task's baseline on the held-out split."""
        cid = self.campaign.id
        best = self.store.best_candidates(cid, k=1, split="train")
        baseline = self.task.baseline
        report = CampaignReport(
            campaign_id=cid, task=self.task.name, generated=self.used(), best_code=None,
            best_idea=None, best_train_score=None, best_test_score=None, baseline=baseline,
            baseline_test_score=None, test_split=self.test_split,
        )
        if not best:
            return report
        b = best[0]
        report.best_code, report.best_idea, report.best_train_score = b.code, b.idea, b.score
        report.best_operator = b.operator
        report.llm_ancestor = llm_ancestor(self.store, cid, b)
        base_key = "baseline:" + (baseline or "")
        known = {e.candidate_hash: e for e in self.store.evaluations(cid, split=self.test_split)}
        todo = [(h, code) for h, code in ((b.hash, b.code), (base_key, self.task.seeds.get(baseline)))
                if code is not None and h not in known]
        if todo:
            results = self.evaluator.evaluate(self.task, [code for _, code in todo], self.test_split)
            for (h, _), ev in zip(todo, results, strict=True):
                self.store.add_evaluation(cid, h, self.test_split, ev.valid, ev.score, ev.metrics,
                                          ev.error, ev.runtime_s)
            known = {e.candidate_hash: e for e in self.store.evaluations(cid, split=self.test_split)}
        if b.hash in known:
            report.best_test_score = known[b.hash].score
        if base_key in known:
            report.baseline_test_score = known[base_key].score
        if isinstance(self.task, NamedDatasetSplits) and b.hash in known and base_key in known:
            best, base = (self.task.score_by_dataset(self.test_split, known[h].metrics or {})
                          for h in (b.hash, base_key))
            report.test_by_dataset = {name: {"best": best[name], "baseline": base[name]}
                                      for name in best if name in base}
        return report
