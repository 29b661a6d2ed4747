"""The orchestrator: drives a stored Campaign round by round.

One round of a discovery campaign (``agent="evolution"``)::

    agent.propose()  -> one prompt, G LLM samples, parsed programs
    executor.evaluate(...)  -> sandboxed runs + trusted scores (only new programs)
    agent.observe(...)  -> pool / component library / collapse update, CALM rewards
    store.record_round(...)  -> candidates, evaluations, LLM calls, agent state: one transaction
    [every K rounds] learner.step(...) -> new LoRA adapter version, loaded into the LLM

Because every round is committed together with the agent's state, a campaign killed at any
point (even ``kill -9``) resumes from its last committed round and loses no stored
evaluation; only the round in flight is redone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from optiforge.platform.store import CandidateIn, LLMCallIn, Store
from optiforge.types import Evaluation

ProgressCallback = Callable[[int, int, float | None], None]
"""Called after each round with (programs generated so far, budget, best score so far)."""


@contextmanager
def campaign_status(store: Store, campaign_id: str) -> Iterator[None]:
    """Mark the campaign ``running`` for the block; ``interrupted`` or ``failed`` if it raises.

    A ``kill -9`` leaves it ``running``, which ``resume`` accepts like ``interrupted``.
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


@dataclass
class CampaignReport:
    """What a finished campaign found, as printed by ``optiforge campaign run``."""

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
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def gap_vs_baseline(self) -> float | None:
        """Best test score minus the baseline's (percentage points; negative = better)."""
        if self.best_test_score is None or self.baseline_test_score is None:
            return None
        return self.best_test_score - self.baseline_test_score


class EvolutionCampaign:
    """Runs (or resumes) a heuristic-discovery campaign stored under ``campaign_id``.

    Parameters
    ----------
    store : Store
        Where the campaign lives; every round is written as one transaction.
    campaign_id : str
        A campaign created with :meth:`Store.create_campaign` (``agent="evolution"``).
    llm : LLM
        Text generator satisfying :class:`optiforge.agents.protocols.LLM`.
    evaluator : ProgramEvaluator
        Sandboxed evaluation (an executor from :mod:`optiforge.platform.executors`).
    learner : optional
        A GRPO learner (``step(groups)``, ``save(dir)``, ``load(dir)``); ``None`` disables RL.
    """

    def __init__(self, store: Store, campaign_id: str, llm, evaluator, learner=None) -> None:
        from optiforge.agents.evolution import EvolutionAgent, EvolutionConfig
        from optiforge.heuristics.base import get_task

        self.store = store
        self.campaign = store.get_campaign(campaign_id)
        self.task = get_task(self.campaign.task)
        self.llm = llm
        self.evaluator = evaluator
        self.learner = learner
        cfg = dict(self.campaign.config.get("agent", {}))
        self.rl_every = int(self.campaign.config.get("rl_every", 2))
        self.test_split = str(self.campaign.config.get("test_split", "test"))
        self.agent = EvolutionAgent(self.task, llm, EvolutionConfig.from_dict(cfg), seed=self.campaign.seed)
        # Evaluations by program hash: duplicates are never re-run, and a resumed campaign
        # reuses what was stored before the kill.
        self._known: dict[str, Evaluation] = {}
        self._round = 0
        self._pending_groups: list[tuple[str, list[str], list[float]]] = []

    # ------------------------------------------------------------------ state
    def _restore(self) -> bool:
        saved = self.store.latest_agent_state(self.campaign.id)
        for c in self.store.candidates(self.campaign.id, split="train"):
            if c.hash and c.code is not None and (c.valid or c.error):
                self._known.setdefault(
                    c.hash,
                    Evaluation(c.valid, c.score, dict(c.metrics or {}), c.error, c.runtime_s),
                )
        if saved is None:
            return False
        round_, state = saved
        self.agent.load_state_dict(state["agent"])
        self._pending_groups = [tuple(g) for g in state.get("pending_groups", [])]
        self._round = round_ + 1
        if self.learner is not None:
            self._restore_adapter()
        return True

    def _restore_adapter(self) -> None:
        adapters = self.store.artifacts(self.campaign.id, kind="adapter")
        if adapters:
            # The learner's adapter lives in the generator's own model object (injected in
            # place), so restoring it is all the generator needs.
            self.learner.load(adapters[-1].path)

    def _state(self) -> dict[str, Any]:
        return {"agent": self.agent.state_dict(), "pending_groups": self._pending_groups}

    def generated(self) -> int:
        """LLM-written programs stored so far (the budget counts these)."""
        return sum(1 for c in self.store.candidates(self.campaign.id) if c.operator != "seed")

    # ------------------------------------------------------------------ rounds
    def _evaluate(self, programs: list[Any]) -> list[Evaluation]:
        """Evaluate the parsed programs of a round: parse errors and duplicates cost nothing."""
        evals: list[Evaluation | None] = [None] * len(programs)
        todo: list[int] = []
        for i, p in enumerate(programs):
            if p.code is None:
                evals[i] = Evaluation.invalid(p.error or "no program in the response")
            elif p.hash in self._known:
                evals[i] = self._known[p.hash]
            elif (p.duplicate_of or "") in self._known:
                evals[i] = self._known[p.duplicate_of]
            else:
                todo.append(i)
        # Identical programs inside one round are run once.
        unique: dict[str, int] = {}
        for i in todo:
            unique.setdefault(programs[i].hash, i)
        if unique:
            results = self.evaluator.evaluate(
                self.task.name, [programs[i].code for i in unique.values()], "train"
            )
            for (h, _), ev in zip(unique.items(), results, strict=True):
                self._known[h] = ev
        for i in todo:
            evals[i] = self._known[programs[i].hash]
        return [e for e in evals if e is not None]

    def _record(self, proposal, evals: list[Evaluation], rewards: list[float] | None) -> None:
        calls = [
            LLMCallIn(
                prompt=proposal.prompt,
                response=c.text,
                prompt_tokens=c.prompt_tokens,
                completion_tokens=c.completion_tokens,
                model=self.campaign.llm,
                operator=proposal.operator,
                reward=None if rewards is None else rewards[i],
            )
            for i, c in enumerate(proposal.completions)
        ]
        cands = []
        for i, (p, ev) in enumerate(zip(proposal.programs, evals, strict=True)):
            cands.append(
                CandidateIn(
                    hash=p.hash or "",
                    operator=proposal.operator,
                    code=p.code,
                    idea=p.idea,
                    parents=list(proposal.parents),
                    split="train",
                    valid=ev.valid,
                    score=ev.score,
                    metrics=ev.metrics,
                    error=ev.error,
                    runtime_s=ev.runtime_s,
                    reward=None if rewards is None else rewards[i],
                    llm_call_index=i if calls else None,
                )
            )
        self.store.record_round(
            self.campaign.id, round=self._round, candidates=cands, llm_calls=calls,
            agent_state=self._state(),
        )
        self._round += 1

    def _seed_round(self) -> None:
        from optiforge.agents.evolution import Proposal

        programs = self.agent.initial_programs()
        proposal = Proposal(round=0, operator="seed", prompt="", parents=[], completions=[],
                            programs=programs)
        evals = self._evaluate(programs)
        self.agent.observe(proposal, evals)
        self._record(proposal, evals, None)

    def _rl_step(self) -> None:
        if self.learner is None or not self._pending_groups:
            return
        stats = self.learner.step(self._pending_groups)
        directory = self.store.artifact_dir(self.campaign.id) / f"adapter-{self.learner.step_count:04d}"
        self.learner.save(directory)
        self.store.add_artifact(
            self.campaign.id, "adapter", directory.name, directory,
            meta={k: float(v) for k, v in stats.items() if isinstance(v, int | float)},
        )
        self._pending_groups = []
        # Resuming needs only the newest optimizer state; older versions keep their adapters.
        for old in self.store.artifacts(self.campaign.id, kind="adapter")[:-1]:
            try:
                self.learner.drop_optimizer_state(old.path)
            except ValueError:  # moved or deleted by the user: nothing left to drop
                pass

    def run(self, progress: ProgressCallback | None = None) -> CampaignReport:
        """Run until the budget of generated programs is spent, then re-score the best on test."""
        with campaign_status(self.store, self.campaign.id):
            if not self._restore():
                self._seed_round()
            generated = self.generated()
            if progress:
                progress(generated, self.campaign.budget, self._best_score())
            while generated < self.campaign.budget:
                proposal = self.agent.propose()
                evals = self._evaluate(proposal.programs)
                rewards = self.agent.observe(proposal, evals)
                if self.learner is not None and proposal.completions:
                    prompt = self.llm.format_prompt(proposal.prompt, self.agent.config.system)
                    self._pending_groups.append(
                        (prompt, [c.text for c in proposal.completions], list(rewards))
                    )
                self._record(proposal, evals, rewards)
                generated += len(proposal.programs)
                if self.learner is not None and self._round % self.rl_every == 0:
                    self._rl_step()
                if progress:
                    progress(generated, self.campaign.budget, self._best_score())
        report = self.final_report()
        self.store.set_campaign_status(self.campaign.id, "finished")
        return report

    def _best_score(self) -> float | None:
        best = self.agent.best
        return None if best is None else best.score

    def final_report(self) -> CampaignReport:
        """Re-score the best program and the task's baseline on the held-out split."""
        cid = self.campaign.id
        best = self.store.best_candidates(cid, k=1, split="train")
        baseline_code = self.task.seeds.get(self.task.baseline)
        report = CampaignReport(
            campaign_id=cid, task=self.task.name, generated=self.generated(),
            best_code=None, best_idea=None, best_train_score=None, best_test_score=None,
            baseline=self.task.baseline, baseline_test_score=None, test_split=self.test_split,
        )
        if not best:
            return report
        b = best[0]
        report.best_code, report.best_idea, report.best_train_score = b.code, b.idea, b.score
        known = {e.candidate_hash: e for e in self.store.evaluations(cid, split=self.test_split)}
        codes, hashes = [], []
        for code, h in ((b.code, b.hash), (baseline_code, "baseline:" + (self.task.baseline or ""))):
            if code is not None and h not in known:
                codes.append(code)
                hashes.append(h)
        if codes:
            for h, ev in zip(hashes, self.evaluator.evaluate(self.task.name, codes, self.test_split),
                             strict=True):
                self.store.add_evaluation(cid, h, self.test_split, ev.valid, ev.score, ev.metrics,
                                          ev.error, ev.runtime_s)
            known = {e.candidate_hash: e for e in self.store.evaluations(cid, split=self.test_split)}
        if b.hash in known:
            report.best_test_score = known[b.hash].score
        base = known.get("baseline:" + (self.task.baseline or ""))
        if base is not None:
            report.baseline_test_score = base.score
        return report


def report_to_json(report: CampaignReport) -> str:
    d = dict(report.__dict__)
    d["gap_vs_baseline"] = report.gap_vs_baseline
    return json.dumps(d, indent=2)


# ---------------------------------------------------------------------------- service layer
AGENTS = ("evolution", "hollm")
EXECUTORS = ("local", "ray")
RL_MODES = ("auto", "none", "grpo")


def create_campaign(
    store: Store,
    *,
    task: str,
    agent: str = "evolution",
    budget: int,
    llm: str | None = None,
    seed: int = 0,
    executor: str = "local",
    rl: str = "none",
    workers: int = 2,
    config: dict[str, Any] | None = None,
    name: str | None = None,
) -> str:
    """Validate a campaign's settings and store it (status ``created``); returns its id.

    Raises
    ------
    ValueError
        Naming the offending argument (unknown task/agent/executor, budget <= 0, bad LLM spec).
    """
    from optiforge.heuristics.base import get_task
    from optiforge.platform.llm import parse_spec

    if agent not in AGENTS:
        raise ValueError(f"agent: unknown agent {agent!r}; choose one of {', '.join(AGENTS)}")
    if executor not in EXECUTORS:
        raise ValueError(f"executor: unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if rl not in RL_MODES:
        raise ValueError(f"rl: unknown mode {rl!r}; choose one of {', '.join(RL_MODES)}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ValueError(f"budget: must be a positive integer, got {budget!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers <= 0:
        raise ValueError(f"workers: must be a positive integer, got {workers!r}")
    cfg = dict(config or {})
    if agent == "evolution":
        from optiforge.agents.evolution import EvolutionConfig

        get_task(task)  # raises ValueError naming `task`
        EvolutionConfig.from_dict(cfg.get("agent", {}))
        llm = "smollm2" if llm is None else llm
    else:
        from optiforge.agents.hollm import HOLLMConfig
        from optiforge.blackbox import get_blackbox_task

        get_blackbox_task(task)
        HOLLMConfig.from_options(cfg.get("agent_options", {}))
        if rl == "grpo":
            raise ValueError("rl: RL fine-tuning applies to the evolution agent only")
        llm = llm or "none"  # HOLLM without an LLM: sobol proposer, gp predictor
    if llm != "none":
        spec = parse_spec(llm)  # raises ValueError naming `llm`
        if rl == "auto":
            # CALM's co-evolution is the default wherever the model trains in process.
            rl = "grpo" if agent == "evolution" and spec.kind == "hf" else "none"
    elif rl == "auto":
        rl = "none"
    cfg.update({"rl": rl, "workers": workers})
    return store.create_campaign(
        task=task, agent=agent, llm=llm, budget=budget, seed=seed, executor=executor,
        config=cfg, name=name,
    )


def run_campaign(
    store: Store, campaign_id: str, progress: ProgressCallback | None = None
) -> CampaignReport:
    """Run or resume the stored campaign ``campaign_id`` to its budget."""
    from optiforge.platform.executors import make_executor
    from optiforge.platform.llm import from_spec

    campaign = store.get_campaign(campaign_id)
    workers = int(campaign.config.get("workers", 2))
    if campaign.agent == "hollm":
        from optiforge.platform.blackbox_campaign import BlackboxCampaign

        return BlackboxCampaign(store, campaign_id).run(progress)
    llm = from_spec(campaign.llm)
    learner = None
    if campaign.config.get("rl", "none") == "grpo":
        from optiforge.agents.protocols import TrainableLLM

        if not isinstance(llm, TrainableLLM):
            raise ValueError(
                f"rl: the LLM backend {campaign.llm!r} is not trainable in process; use --rl none "
                "or a local model (smollm2, hf:...)"
            )
        from optiforge.agents.evolution.grpo import GRPOLearner

        agent_cfg = campaign.config.get("agent", {})
        options = {"temperature": agent_cfg.get("temperature", 0.8),
                   "max_completion_tokens": agent_cfg.get("max_new_tokens", 512),
                   **campaign.config.get("rl_options", {})}
        learner = GRPOLearner(llm, seed=campaign.seed, **options)
    with make_executor(campaign.executor, workers=workers) as evaluator:
        return EvolutionCampaign(store, campaign_id, llm, evaluator, learner).run(progress)
