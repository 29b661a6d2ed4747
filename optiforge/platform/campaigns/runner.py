"""One campaign loop for every agent kind: create, run, resume.

:func:`create_campaign` validates the settings through the registries and stores the
campaign; :func:`run_campaign` builds the step for the agent's kind and drives it with
:func:`drive`, the one loop (status, resume from the last committed round, rounds to the
budget, progress, report). A step is small:

* :class:`~optiforge.platform.campaigns.program.ProgramCampaign` — heuristic evolution;
* :class:`~optiforge.platform.campaigns.blackbox.BlackboxCampaign` — a study driven in process.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from optiforge import validation as check
from optiforge.agents.protocols import TrainableLLM
from optiforge.agents.registry import AgentInfo, get_agent, validate_options
from optiforge.platform.campaigns.report import CampaignReport, ProgressCallback, campaign_status
from optiforge.platform.store import Campaign, Store

EXECUTORS = ("local", "ray")
RL_MODES = ("auto", "none", "grpo")
# The default writer, chosen by measurement (docs/benchmarks/discovery.md §9): Qwen2.5-Coder-1.5B
# wrote 0.15 valid new binpacking programs per sample over five edit operators, the 0.5B 0.03 and
# SmolLM2-135M 0.02. llama.cpp samples its Q4_K_M file; its NF4 twin trains under RL, 0.03 nats per token
# from the sampled policy (measured on the 0.5B). `optiforge models fetch qwen-coder-1.5b` first.
DEFAULT_LLM = "llamacpp:qwen-coder-1.5b"
CAMPAIGN_OWNER = "local"
MAX_WORKERS = 256  # sandbox processes on one machine, each a Python interpreter: a typo's ceiling


class CampaignStep(Protocol):
    """What :func:`drive` needs from an agent kind's step."""

    def restore(self) -> bool:
        """Load the stored state; ``False`` when the campaign has not started."""
        ...

    def start(self) -> None:
        """The first round of a new campaign (e.g. the seed heuristics)."""
        ...

    def used(self) -> int:
        """Budget spent so far, as stored."""
        ...

    def run_round(self, remaining: int) -> None:
        """One round, committed to the store before it returns."""
        ...

    def best_score(self) -> float | None: ...

    def report(self) -> CampaignReport: ...


def drive(store: Store, campaign: Campaign, step: CampaignStep,
          progress: ProgressCallback | None = None, deadline: float | None = None) -> CampaignReport:
    """Run ``step`` until the campaign's budget is spent (or ``deadline`` passes), then report.

    The campaign is ``running`` meanwhile; ``interrupted`` on Ctrl-C, ``failed`` on an error,
    ``finished`` at the end. Every round is committed before the next starts, so a killed
    process resumes here from the last committed round.

    ``deadline`` is a :func:`time.monotonic` time after which no round starts: the round under
    way finishes and is committed (a run can overrun by up to one round), the report covers
    what was found, ``report.timed_out`` is set and, if budget is left, the campaign is stored
    ``interrupted`` so that a resume spends the rest.
    """
    with campaign_status(store, campaign.id):
        if not step.restore():
            step.start()
        used = step.used()
        if progress:
            progress(used, campaign.budget, step.best_score())
        while used < campaign.budget:
            if deadline is not None and time.monotonic() >= deadline:
                break
            step.run_round(campaign.budget - used)
            used = step.used()
            if progress:
                progress(used, campaign.budget, step.best_score())
        report = step.report()
    report.timed_out = used < campaign.budget
    store.set_campaign_status(campaign.id, "interrupted" if report.timed_out else "finished")
    return report


# ---------------------------------------------------------------------------- create
def _agent_options(config: dict[str, Any]) -> Any:
    # Campaigns stored before the seams refactor kept the evolution options under "agent".
    return config.get("agent_options", config.get("agent"))


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
    owner: str = CAMPAIGN_OWNER,
) -> str:
    """Validate a campaign's settings and store it (status ``created``); returns its id.

    Parameters
    ----------
    store : Store
    task : str
        A heuristic task (program agents) or a black-box task (black-box agents).
    agent : str
        An agent from :func:`optiforge.agents.registry.agent_names`.
    budget : int
        LLM-written programs (program agents) or objective evaluations (black-box agents).
    llm : str, optional
        LLM backend spec; program agents default to the bundled model, black-box agents run
        LLM-free unless given.
    seed, executor, workers, name
        Seed of the agent; ``local`` or ``ray``; parallel sandbox workers; a label.
    rl : {"auto", "none", "grpo"}
        GRPO fine-tuning of the LLM (program agents, in-process models); ``auto`` = where
        the model trains in process.
    config : dict, optional
        ``agent_options`` (validated by the agent), ``rl_every``, ``rl_options`` (the
        learner's keyword arguments; ``{"lora": "bilora"}`` selects Bi-LoRA), ``test_split``.
    owner : str
        Who may see the campaign (and a black-box campaign's study) on the dashboard and the
        API; the command line's campaigns belong to ``"local"``, the operator.

    Raises
    ------
    ValueError, TypeError
        Naming the offending argument (unknown task/agent/executor, budget <= 0, bad LLM
        spec, bad agent options); nothing is stored then.
    """
    from optiforge.platform.llm import check_local_files, parse_spec, trains_in_process

    info = get_agent(agent)
    check.choice(executor, "executor", EXECUTORS)
    check.choice(rl, "rl", RL_MODES)
    check.integer(budget, "budget", minimum=1, maximum=check.MAX_INT32)
    check.integer(workers, "workers", minimum=1, maximum=MAX_WORKERS)
    check.integer(seed, "seed", minimum=0)
    if config is not None and not isinstance(config, dict):
        raise TypeError(f"config: expected a dict, got {type(config).__name__}")
    cfg = dict(config or {})
    options = _agent_options(cfg)
    cfg.pop("agent", None)
    study: tuple[Any, dict[str, Any]] | None = None
    if info.kind == "program":
        from optiforge.heuristics import get_task

        get_task(task)  # ValueError naming `task`
        cfg["agent_options"] = validate_options(agent, options)
        llm = DEFAULT_LLM if llm is None else llm
        check.integer(cfg.setdefault("rl_every", 2), "rl_every", minimum=1)
    else:
        from optiforge.blackbox import get_blackbox_task

        space = get_blackbox_task(task).space
        if rl == "grpo":
            raise ValueError("rl: RL fine-tuning applies to program agents only")
        if isinstance(options, dict) and llm not in (None, "none"):
            options = {"llm": llm, **options}
        study = _validate_study(info, space, options, budget, seed)
        llm = llm or "none"
    if llm != "none":
        spec = parse_spec(llm)  # ValueError naming `llm`
        check_local_files(spec)
        if rl == "auto":
            # CALM's co-evolution is the default wherever the model trains in process.
            rl = "grpo" if info.kind == "program" and trains_in_process(spec) else "none"
    elif rl == "auto":
        rl = "none"
    _check_rl_options(cfg, rl)
    cfg.update({"rl": rl, "workers": workers})
    check.text(name, "name", optional=True)
    check.text(owner, "owner")
    if study is not None:  # everything is valid: only now store the campaign's study
        sp, clean = study
        cfg["study_id"] = store.create_study(owner, sp.to_dict(), "minimize", agent, clean,
                                             name=name or "campaign")
    return store.create_campaign(task=task, agent=agent, llm=llm, budget=budget, seed=seed,
                                 executor=executor, config=cfg, name=name, owner=owner)


def _check_rl_options(cfg: dict[str, Any], rl: str) -> None:
    """The LoRA variant in ``rl_options`` (the learner validates the rest when it is built)."""
    rl_options = cfg.get("rl_options")
    if rl_options is None:
        return
    if not isinstance(rl_options, dict):
        raise TypeError(f"rl_options: expected a dict, got {type(rl_options).__name__}")
    if "lora" in rl_options:
        if rl != "grpo":
            raise ValueError("lora: applies to RL fine-tuning only (--rl grpo, or auto with a local model)")
        from optiforge.agents.evolution.grpo import LORA_VARIANTS

        check.choice(rl_options["lora"], "lora", LORA_VARIANTS)


def _validate_study(info: AgentInfo, space: Any, options: Any, budget: int,
                    seed: int) -> tuple[Any, dict[str, Any]]:
    from optiforge.platform.study import validate_study

    if options is not None and not isinstance(options, dict):
        raise TypeError(f"agent_options: expected an object, got {type(options).__name__}")
    options = {**info.budget_defaults(budget), **(options or {}), "seed": seed}
    return validate_study(space, "minimize", info.name, options)


# ---------------------------------------------------------------------------- run
def run_campaign(store: Store, campaign_id: str, progress: ProgressCallback | None = None, *,
                 timeout: float | None = None) -> CampaignReport:
    """Run or resume the stored campaign ``campaign_id`` to its budget.

    Parameters
    ----------
    store : Store
    campaign_id : str
    progress : callable, optional
        Called after each round with (budget used, budget, best score so far).
    timeout : float, optional
        Seconds of wall clock for this run, counted from this call (model loading included):
        no round starts after it, as Optuna's ``optimize(timeout=...)``. The round under way
        finishes, then the best so far is reported (``report.timed_out``) and the campaign,
        its budget not spent, is left ``interrupted`` for a resume, which gets its own timeout.

    Raises
    ------
    ValueError, TypeError
        ``timeout`` not a number > 0.
    """
    if timeout is not None:
        timeout = check.positive(timeout, "timeout")
    deadline = None if timeout is None else time.monotonic() + timeout
    campaign = store.get_campaign(campaign_id)
    info = get_agent(campaign.agent)
    if info.kind == "blackbox":
        return drive(store, campaign, _blackbox_step(store, campaign), progress, deadline)
    return _run_program_campaign(store, campaign, info, progress, deadline)


def _blackbox_step(store: Store, campaign: Campaign) -> Any:
    from optiforge.blackbox import get_blackbox_task
    from optiforge.platform.campaigns.blackbox import BlackboxCampaign
    from optiforge.platform.study import Study

    study = Study(store, campaign.config["study_id"])
    batch = get_agent(campaign.agent).batch_size(study.agent_options)
    return BlackboxCampaign(campaign, get_blackbox_task(campaign.task), study, batch)


def _run_program_campaign(store: Store, campaign: Campaign, info: AgentInfo,
                          progress: ProgressCallback | None, deadline: float | None) -> CampaignReport:
    from optiforge.heuristics import get_task
    from optiforge.platform.campaigns.program import ProgramCampaign
    from optiforge.platform.executors import make_executor
    from optiforge.platform.llm import from_spec
    from optiforge.platform.resources import apply_budget

    apply_budget()  # before the model loads: threads and allocator arenas (resources.py)
    cfg = campaign.config
    options = _agent_options(cfg) or {}
    llm = from_spec(campaign.llm)
    learner = None
    if cfg.get("rl", "none") == "grpo":
        if not isinstance(llm, TrainableLLM):
            raise ValueError(f"rl: the LLM backend {campaign.llm!r} is not trainable in process; "
                             "use --rl none or a local model (smollm2, hf:...)")
        learner = _make_learner(llm, campaign.seed, options, cfg.get("rl_options", {}))
    task = get_task(campaign.task)
    agent = info.factory(task, options, llm, campaign.seed)
    with make_executor(campaign.executor, workers=int(cfg.get("workers", 2))) as evaluator:
        step = ProgramCampaign(store, campaign, task, agent, evaluator, learner=learner,
                               llm=llm if learner is not None else None,
                               rl_every=int(cfg.get("rl_every", 2)),
                               test_split=str(cfg.get("test_split", "test")))
        return drive(store, campaign, step, progress, deadline)


def _make_learner(llm: TrainableLLM, seed: int, agent_options: dict[str, Any],
                  rl_options: dict[str, Any]) -> Any:
    from optiforge.agents.evolution.grpo import make_learner

    # The learner's sampling settings mirror the agent's, so its ratios refer to the policy
    # that actually sampled the completions. ``rl_options["lora"]`` picks the LoRA variant.
    # One sequence per backward pass with recomputed activations: a G = 4 group of ~1000-token
    # sequences otherwise holds every layer's activations for all of them at once (the 11 GB
    # peak of docs/benchmarks/memory.md); the gradient is the same.
    options = {"temperature": agent_options.get("temperature", 0.8),
               "max_completion_tokens": agent_options.get("max_new_tokens", 512),
               "micro_batch_size": 1, "gradient_checkpointing": True, **rl_options}
    return make_learner(llm, seed=seed, **options)
