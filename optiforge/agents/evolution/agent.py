"""The CALM-style evolution agent: operator choice, prompting, parsing, pool updates, rewards.

One round = :meth:`EvolutionAgent.propose` (choose an operator, build ONE prompt, sample
``G`` responses, parse them) followed by :meth:`EvolutionAgent.observe` (the caller's
trusted evaluations go in; the pool, component library and collapse counter are updated
and CALM's tiered rewards come out, ready for a GRPO step on the prompt group). The agent
never executes code and never imports :mod:`optiforge.platform`.

References
----------
Huang, Wu, Wu, Lee, Wang. "CALM: Co-evolution of Algorithms and Language Model for
Automatic Heuristic Design." arXiv:2505.12285 (2025), ICLR 2026.

Notes
-----
Deviations from / choices beyond the paper (whose operator schedule, pool size and prompts
are not available): operators are drawn i.i.d. from ``operator_weights`` each round;
the pool keeps the 16 best non-seed heuristics plus the seeds; parents are drawn with EoH
rank weights; duplicates are detected by normalised-code hash over the whole run (not only
the current pool) and by score equality with a parent; on collapse the component library
is pruned to the survivors' components.
"""

from __future__ import annotations

import ast
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from optiforge import validation as check
from optiforge.agents.evolution.canonical import code_hash
from optiforge.agents.evolution.constants import find_constants
from optiforge.agents.evolution.graft import GraftableTask, Term, all_terms, graftable
from optiforge.agents.evolution.parsing import parse_response, signature_params
from optiforge.agents.evolution.population import (
    PoolEntry,
    Population,
    collapse_triggered,
    rank_weights,
)
from optiforge.agents.evolution.prompts import ANSWER_FORMATS, OPERATORS, build_prompt
from optiforge.agents.evolution.rewards import RewardConfig, calm_reward
from optiforge.agents.protocols import LLM
from optiforge.types import Completion, Evaluation

TUNE_OPERATOR = "tune"
"""The operator of a child whose constants a black-box study set (no LLM wrote it)."""
GRAFT_OPERATOR = "graft"
"""The operator of a child with one term added from the task's features and its constants
tuned by a black-box study (no LLM wrote it; see :mod:`~optiforge.agents.evolution.graft`)."""

_DEFAULT_WEIGHTS = {
    "initialization": 0.10,
    "injection": 0.30,
    "replacement": 0.25,
    "crossover": 0.20,
    "simplification": 0.15,
}


@dataclass
class EvolutionConfig:
    """Knobs of :class:`EvolutionAgent`.

    Parameters
    ----------
    samples_per_prompt : int
        ``G``, responses sampled per prompt (CALM: 4 for the local GRPO runs).
    operator_weights : dict
        Unnormalised probability of each operator (keys from ``OPERATORS``); operators that
        cannot run (crossover with < 2 heuristics) are skipped for that round, and when none
        of the weighted operators can run, initialization is used.
    init_from_seed_prob : float
        Probability that an initialization shows a seed rather than starting from scratch.
    pool_size : int
        Non-seed heuristics kept (best by score).
    delta0, collapse_C : float, int
        Collapse when ``rand() < c_n * delta0`` or ``c_n >= collapse_C`` (CALM: 0.0005, 15).
    temperature, top_p, max_new_tokens : float, float, int
        Sampling parameters passed to the LLM.
    operator_sampling : dict
        Per-operator overrides of ``temperature`` / ``top_p``, e.g.
        ``{"tweak": {"temperature": 0.6}}`` (a small edit wants less randomness than a new idea).
    max_prompt_chars : int
        Soft prompt-length limit (see :func:`~optiforge.agents.evolution.prompts.build_prompt`).
    answer_format : {"calm", "code"}
        How prompts ask for the answer (:data:`~optiforge.agents.evolution.prompts.ANSWER_FORMATS`).
    system : str or None
        Optional system message.
    rewards : RewardConfig
        Reward tier values.
    tune_every : int
        Every this many rounds, a round is a ``tune`` round when the pool holds a heuristic
        with numeric constants that was not tuned yet (0: never). See :meth:`EvolutionAgent.tune_target`.
    tune_budget : int
        Sandboxed train-split evaluations of one tune study (its parent's own point included).
    tune_batch : int
        Points asked from the tune study at once (evaluated in parallel in the sandbox).
    tune_max_constants : int
        The first this many constants of a program are tuned; the rest keep their values.
    graft_terms : int
        Terms grafted (each onto the same parent, each tuned by its own study of
        ``tune_budget`` evaluations) in a tune round that has no program to tune, for a task
        with features (:class:`~optiforge.agents.evolution.graft.GraftableTask`); 0: never.
        See :meth:`EvolutionAgent.graft_targets`.
    """

    samples_per_prompt: int = 4
    operator_weights: dict[str, float] = field(default_factory=lambda: dict(_DEFAULT_WEIGHTS))
    init_from_seed_prob: float = 0.5
    pool_size: int = 16
    delta0: float = 0.0005
    collapse_C: int = 15
    temperature: float = 0.8
    top_p: float = 0.95
    max_new_tokens: int = 512
    operator_sampling: dict[str, dict[str, float]] = field(default_factory=dict)
    max_prompt_chars: int = 4000
    answer_format: str = "calm"
    system: str | None = None
    rewards: RewardConfig = field(default_factory=RewardConfig)
    tune_every: int = 2
    tune_budget: int = 24
    tune_batch: int = 4
    tune_max_constants: int = 6
    graft_terms: int = 4

    def __post_init__(self) -> None:
        if isinstance(self.rewards, dict):
            self.rewards = RewardConfig(**self.rewards)
        for name in ("samples_per_prompt", "pool_size", "collapse_C", "max_new_tokens", "max_prompt_chars",
                     "tune_batch", "tune_max_constants"):
            check.integer(getattr(self, name), f"agent_options.{name}", minimum=1)
        check.integer(self.tune_every, "agent_options.tune_every", minimum=0)
        check.integer(self.graft_terms, "agent_options.graft_terms", minimum=0)
        check.integer(self.tune_budget, "agent_options.tune_budget", minimum=2)
        for name in ("init_from_seed_prob", "delta0", "top_p"):
            check.unit(getattr(self, name), f"agent_options.{name}", closed=True)
        check.nonneg(self.temperature, "agent_options.temperature")
        if not isinstance(self.operator_weights, dict) or not self.operator_weights:
            raise TypeError("agent_options.operator_weights: expected a non-empty dict of operator -> weight")
        for op, w in self.operator_weights.items():
            check.choice(op, "agent_options.operator_weights", OPERATORS)
            check.nonneg(w, f"agent_options.operator_weights[{op!r}]")
        if sum(self.operator_weights.values()) <= 0:
            raise ValueError("agent_options.operator_weights: at least one weight must be > 0")
        check.text(self.system, "agent_options.system", optional=True, max_len=None, empty=True)
        check.choice(self.answer_format, "agent_options.answer_format", ANSWER_FORMATS)
        if not isinstance(self.operator_sampling, dict):
            raise TypeError("agent_options.operator_sampling: expected a dict of operator -> "
                            "{temperature, top_p}")
        for op, knobs in self.operator_sampling.items():
            name = f"agent_options.operator_sampling[{op!r}]"
            check.choice(op, "agent_options.operator_sampling", OPERATORS)
            if not isinstance(knobs, dict) or not set(knobs) <= {"temperature", "top_p"}:
                raise ValueError(f"{name}: expected a dict with keys temperature and/or top_p")
            if "temperature" in knobs:
                check.nonneg(knobs["temperature"], f"{name}.temperature")
            if "top_p" in knobs:
                check.unit(knobs["top_p"], f"{name}.top_p", closed=True)

    def sampling(self, operator: str) -> tuple[float, float]:
        """``(temperature, top_p)`` for ``operator`` (its override, else the defaults)."""
        knobs = self.operator_sampling.get(operator, {})
        return float(knobs.get("temperature", self.temperature)), float(knobs.get("top_p", self.top_p))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvolutionConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"agent_options: unknown option(s) {sorted(unknown)}; known: {sorted(known)}")
        return cls(**d)


@dataclass
class Program:
    """One candidate program of a proposal.

    ``code is None`` means the response could not be parsed (``error`` says why); the
    caller records an invalid :class:`~optiforge.types.Evaluation` for it. ``duplicate_of``
    is the hash of an identical (normalised) program seen earlier in the run or in the
    same batch; the caller reuses that program's stored evaluation.
    """

    code: str | None
    idea: str | None
    hash: str | None
    error: str | None = None
    duplicate_of: str | None = None
    component: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Proposal:
    """One round's prompt and its ``G`` parsed responses.

    ``baseline_score`` is the score of ``h_base`` used for the rewards (best parent, or the
    baseline seed for initialization from scratch); ``llm_seed`` is the seed passed to the
    LLM (drawn from the agent's generator).
    """

    round: int
    operator: str
    prompt: str
    parents: list[str]
    completions: list[Completion]
    programs: list[Program]
    baseline_score: float | None = None
    parent_scores: list[float] = field(default_factory=list)
    llm_seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Proposal:
        d = dict(d)
        d["completions"] = [Completion(**c) for c in d["completions"]]
        d["programs"] = [Program(**p) for p in d["programs"]]
        return cls(**d)


@dataclass(frozen=True)
class TuneRequest:
    """One study of a tune round: tune ``parent``'s constants with this budget and seed.

    With a ``term``, the study tunes ``parent`` with that term grafted on (the term's
    constants first), and the child must still beat ``parent``. The agent decides when and
    what to tune; whoever owns a sandbox and a study store runs the study and hands the best
    variant back through :meth:`EvolutionAgent.tune_proposal` (or ``graft_proposal``).
    """

    parent: PoolEntry
    budget: int
    batch: int
    max_constants: int
    seed: int
    term: Term | None = None


def _graft_key(parent_hash: str, term: Term) -> str:
    return f"{parent_hash} {term.feature} {term.shape} {term.sign:+.0f}"


def _seed_idea(name: str, code: str, entry_point: str) -> str:
    # A seed has no LLM-written idea; its entry-point docstring is the closest thing.
    try:
        for node in ast.parse(code).body:
            if isinstance(node, ast.FunctionDef) and node.name == entry_point:
                doc = ast.get_docstring(node)
                if doc:
                    return " ".join(doc.split())
    except SyntaxError:
        pass
    return f"Seed heuristic {name}."


class EvolutionAgent:
    """CALM-style heuristic evolution agent.

    Parameters
    ----------
    task : HeuristicTask
        Only ``name, description, entry_point, template, imports, seeds, baseline`` are used.
    llm : LLM
        Text generator (``generate(prompts, n, ...)``).
    config : EvolutionConfig, optional
        Knobs; defaults follow CALM where the paper states them.
    seed : int
        Seed of the agent's :class:`numpy.random.Generator` (every random choice uses it).

    Examples
    --------
    >>> agent = EvolutionAgent(task, llm)                  # doctest: +SKIP
    >>> p = agent.propose()                                # the task's seeds first
    >>> agent.observe(p, [evaluate(x.code) for x in p.programs])   # doctest: +SKIP
    >>> p = agent.propose()                                # an operator prompt, G samples
    >>> rewards = agent.observe(p, evaluations)            # doctest: +SKIP

    References
    ----------
    Huang et al. "CALM: Co-evolution of Algorithms and Language Model for Automatic
    Heuristic Design." arXiv:2505.12285 (2025).
    """

    def __init__(self, task: Any, llm: LLM, config: EvolutionConfig | None = None, seed: int = 0) -> None:
        for attr in ("name", "description", "entry_point", "template", "imports", "seeds", "baseline"):
            if not hasattr(task, attr):
                raise TypeError(f"task: missing attribute {attr!r} of a HeuristicTask")
        if not isinstance(task.seeds, dict) or not task.seeds:
            raise ValueError("task: needs at least one seed heuristic in task.seeds")
        if not callable(getattr(llm, "generate", None)):
            raise TypeError("llm: expected an object with a generate(prompts, n, ...) method")
        if config is not None and not isinstance(config, EvolutionConfig):
            raise TypeError(f"config: expected EvolutionConfig, got {type(config).__name__}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed: expected int, got {type(seed).__name__}")
        self.task = task
        self.llm = llm
        self.config = config or EvolutionConfig()
        self.params = signature_params(task.template, task.entry_point)
        self.population = Population(self.config.pool_size)
        self.rng = np.random.default_rng(seed)
        self.round = 0
        self.counter = 0
        self.collapse_rounds: list[int] = []
        self.seeded = False
        self._seen: dict[str, float | None] = {}
        self._tuned: set[str] = set()  # programs whose constants were tuned, or that a tune wrote
        self._grafted: set[str] = set()  # "<parent hash> <term>" pairs already tried

    # -- public API --------------------------------------------------------------------
    @property
    def best(self) -> PoolEntry | None:
        """Best heuristic so far (the pool always keeps it, even through collapses)."""
        return self.population.best

    def known_evaluation(self, h: str) -> Evaluation | None:
        """What the run remembers of an earlier program with hash ``h`` (``None`` if unseen).

        The agent keeps one record per distinct program (its score, or ``None`` when it was
        invalid) in its state; a campaign reuses it for duplicates instead of evaluating them
        again, so the run has one cache of seen programs.
        """
        if h not in self._seen:
            return None
        score = self._seen[h]
        if score is None:
            return Evaluation.invalid(f"duplicate of invalid program {h}")
        return Evaluation(valid=True, score=score)

    def initial_programs(self) -> list[Program]:
        """The task's seed heuristics as programs (operator ``"seed"``)."""
        return [
            Program(code=src, idea=_seed_idea(name, src, self.task.entry_point), hash=code_hash(src))
            for name, src in self.task.seeds.items()
        ]

    def tune_target(self) -> TuneRequest | None:
        """This round's tune request, or ``None`` when this round is an LLM round.

        Every ``tune_every`` rounds (after the seeds), the best pool heuristic that has
        numeric constants (:func:`~optiforge.agents.evolution.constants.find_constants`) and
        was neither tuned nor written by a tune is chosen. The code is parsed, never run.
        """
        cfg = self.config
        if not self._tune_round_due():
            return None
        for entry in self.population.ranked():
            if entry.hash not in self._tuned and find_constants(entry.code, 1):
                return TuneRequest(entry, cfg.tune_budget, cfg.tune_batch, cfg.tune_max_constants,
                                   int(self.rng.integers(0, 2**31 - 1)))
        return None

    def graft_targets(self) -> list[TuneRequest]:
        """A graft round's studies: ``graft_terms`` new terms on one pool parent (or none).

        Asked on a tune round for which :meth:`tune_target` found nothing to tune. The parent
        is drawn by rank (EoH weights: mostly the best); the terms are drawn from the task's
        features x shapes x signs (:func:`~optiforge.agents.evolution.graft.all_terms`), never
        one already tried on that parent. Empty for a task without features, with
        ``graft_terms = 0``, or off the tune schedule.
        """
        cfg = self.config
        if (not self._tune_round_due() or cfg.graft_terms == 0
                or not isinstance(self.task, GraftableTask) or not len(self.population)):
            return []
        parents = [e for e in self.population.ranked() if graftable(e.code, self.task.entry_point)]
        fresh = {e.hash: [t for t in all_terms(self.task) if _graft_key(e.hash, t) not in self._grafted]
                 for e in parents}
        parents = [e for e in parents if fresh[e.hash]]
        if not parents:
            return []
        parent = parents[int(self.rng.choice(len(parents), p=rank_weights(len(parents))))]
        terms = fresh[parent.hash]
        picked = self.rng.choice(len(terms), size=min(cfg.graft_terms, len(terms)), replace=False)
        return [TuneRequest(parent, cfg.tune_budget, cfg.tune_batch, cfg.tune_max_constants,
                            int(self.rng.integers(0, 2**31 - 1)), term=terms[int(i)]) for i in sorted(picked)]

    def graft_proposal(self, requests: list[TuneRequest], codes: list[str | None]) -> Proposal:
        """The graft round's proposal: one child per study that beat the parent (``None``: none did).

        Observe it with the children's train evaluations, as any proposal.
        """
        if not requests or len(codes) != len(requests) or any(r.term is None for r in requests):
            raise ValueError("requests: expected the graft requests of this round, one code per request")
        parent = requests[0].parent
        programs, batch = [], set()
        for request, code in zip(requests, codes, strict=True):
            self._grafted.add(_graft_key(parent.hash, request.term))
            if code is None:
                continue
            h = code_hash(code)
            idea = f"{parent.idea or 'The parent heuristic'} Plus a term that {request.term.describe()}."
            programs.append(Program(code, idea, h, duplicate_of=h if h in self._seen or h in batch else None,
                                    notes=[f"{request.term.describe()}, grafted onto {parent.hash}; constants tuned"]))
            batch.add(h)
        return Proposal(self.round, GRAFT_OPERATOR, "", [parent.hash], [], programs,
                        baseline_score=parent.score, parent_scores=[parent.score])

    def tune_proposal(self, request: TuneRequest, code: str | None) -> Proposal:
        """The ``tune`` round's proposal: the best tuned variant of ``request.parent``.

        ``code`` is ``None`` when the study found nothing better than the parent: the round
        then has no program (the parent is still marked as tuned). Observe it with the
        variant's train evaluation, as any proposal.
        """
        parent = request.parent
        programs = []
        if code is not None:
            h = code_hash(code)
            programs.append(Program(code, parent.idea, h, duplicate_of=h if h in self._seen else None,
                                    notes=[f"constants of {parent.hash} tuned"]))
        return Proposal(self.round, TUNE_OPERATOR, "", [parent.hash], [], programs,
                        baseline_score=parent.score, parent_scores=[parent.score])

    def propose(self) -> Proposal:
        """Build this round's proposal.

        Until the seeds have been observed this is the seed proposal (no LLM call). Then:
        choose an operator, choose parents, build one prompt and sample ``G`` responses
        with ``llm.generate([prompt], n=G, seed=<drawn from the agent's generator>)``.
        """
        if not self.seeded:
            return Proposal(self.round, "seed", "", [], [], self.initial_programs())
        operator, parents = self._choose()
        library = [c.description for c in self.population.library]
        prompt = build_prompt(operator, self.task, parents, library, self.config.max_prompt_chars,
                              self.config.answer_format)
        llm_seed = int(self.rng.integers(0, 2**31 - 1))
        cfg = self.config
        temperature, top_p = cfg.sampling(operator)
        out = self.llm.generate(
            [prompt],
            n=cfg.samples_per_prompt,
            max_new_tokens=cfg.max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=llm_seed,
            system=cfg.system,
        )
        if len(out) != 1 or len(out[0]) != cfg.samples_per_prompt:
            raise RuntimeError(
                f"llm: expected 1 x {cfg.samples_per_prompt} completions, got "
                f"{len(out)} x {[len(o) for o in out]}"
            )
        completions = list(out[0])
        programs = [self._parse(c.text) for c in completions]
        batch: set[str] = set()
        for p in programs:
            if p.hash is None:
                continue
            if p.hash in self._seen or p.hash in batch:
                p.duplicate_of = p.hash
            batch.add(p.hash)
        parent_scores = [e.score for e in parents]
        return Proposal(
            round=self.round,
            operator=operator,
            prompt=prompt,
            parents=[e.hash for e in parents],
            completions=completions,
            programs=programs,
            baseline_score=self._baseline(parents),
            parent_scores=parent_scores,
            llm_seed=llm_seed,
        )

    def observe(self, proposal: Proposal, evaluations: list[Evaluation]) -> list[float]:
        """Take the trusted evaluations of a proposal; return one CALM reward per program.

        Parameters
        ----------
        proposal : Proposal
            The proposal of the current round (from :meth:`propose`).
        evaluations : list of Evaluation
            One per program, in order (invalid ones for unparsable programs; the stored
            evaluation for duplicates).

        Returns
        -------
        list of float
            Rewards (all 0.0 for the seed proposal, which no LLM wrote).
        """
        if not isinstance(proposal, Proposal):
            raise TypeError(f"proposal: expected Proposal, got {type(proposal).__name__}")
        if proposal.round != self.round:
            raise ValueError(f"proposal: round {proposal.round} does not match the agent's round {self.round}")
        if len(evaluations) != len(proposal.programs):
            raise ValueError(
                f"evaluations: expected {len(proposal.programs)} (one per program), got {len(evaluations)}"
            )
        for ev in evaluations:
            if not isinstance(ev, Evaluation):
                raise TypeError(f"evaluations: expected Evaluation items, got {type(ev).__name__}")

        if proposal.operator == "seed":
            self._observe_seeds(proposal, evaluations)
            return [0.0] * len(evaluations)
        if proposal.operator == TUNE_OPERATOR:
            self._tuned.update(proposal.parents)
        if proposal.operator in (TUNE_OPERATOR, GRAFT_OPERATOR):
            # Their constants were just set by a study: tuning them again is wasted budget.
            self._tuned.update(p.hash for p in proposal.programs if p.hash is not None)

        before = self.best.score if self.best is not None else math.inf
        rewards = []
        for prog, ev in zip(proposal.programs, evaluations, strict=True):
            valid = prog.code is not None and ev.valid
            dup = prog.duplicate_of is not None
            rewards.append(
                calm_reward(
                    ev.score if valid else None,
                    valid=valid,
                    duplicate=dup,
                    baseline=proposal.baseline_score,
                    parent_scores=proposal.parent_scores,
                    config=self.config.rewards,
                )
            )
            if prog.hash is not None and not dup:
                self._seen[prog.hash] = ev.score if valid else None
            if valid and not dup:
                self.population.add(
                    PoolEntry(prog.hash, prog.code, prog.idea, float(ev.score), proposal.operator,
                              list(proposal.parents), self.round)
                )
                if proposal.operator == "injection" and prog.component:
                    self.population.add_component(prog.component, prog.hash, self.round)

        after = self.best.score if self.best is not None else math.inf
        self.counter = 0 if after < before else self.counter + 1
        u = float(self.rng.random())
        if collapse_triggered(self.counter, u, self.config.delta0, self.config.collapse_C):
            self.population.collapse()
            self.collapse_rounds.append(self.round)
            self.counter = 0
        self.round += 1
        return rewards

    def state_dict(self) -> dict[str, Any]:
        """JSON-able state for exact resume (pool, library, counter, generator state, round)."""
        return {
            "version": 1,
            "task": self.task.name,
            "config": self.config.to_dict(),
            "round": self.round,
            "seeded": self.seeded,
            "counter": self.counter,
            "collapse_rounds": list(self.collapse_rounds),
            "rng": self.rng.bit_generator.state,
            "population": self.population.state_dict(),
            "seen": dict(self._seen),
            "tuned": sorted(self._tuned),
            "grafted": sorted(self._grafted),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output; subsequent proposals are identical given the same LLM outputs.

        The agent's own ``config`` is kept (it is saved for reference only), so a campaign
        may be resumed with changed knobs on purpose.
        """
        if not isinstance(state, dict) or state.get("version") != 1:
            raise ValueError("state: not an EvolutionAgent state_dict (version 1)")
        if state["task"] != self.task.name:
            raise ValueError(f"state: saved for task {state['task']!r}, this agent runs {self.task.name!r}")
        self.round = int(state["round"])
        self.seeded = bool(state["seeded"])
        self.counter = int(state["counter"])
        self.collapse_rounds = [int(r) for r in state["collapse_rounds"]]
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = state["rng"]
        self.population.load_state_dict(state["population"])
        self.population.capacity = self.config.pool_size
        self._seen = dict(state["seen"])
        self._tuned = set(state.get("tuned", []))  # absent in states saved before tuning existed
        self._grafted = set(state.get("grafted", []))  # likewise, before grafting

    # -- internals ---------------------------------------------------------------------
    def _tune_round_due(self) -> bool:
        """Whether this round is on the tune schedule (every ``tune_every`` rounds after the seeds)."""
        every = self.config.tune_every
        return self.seeded and every != 0 and self.round % every == 0

    def _observe_seeds(self, proposal: Proposal, evaluations: list[Evaluation]) -> None:
        names = list(self.task.seeds)
        for i, (prog, ev) in enumerate(zip(proposal.programs, evaluations, strict=True)):
            if prog.hash is None:
                continue
            self._seen[prog.hash] = ev.score if ev.valid else None
            if ev.valid and prog.code is not None:
                self.population.add(
                    PoolEntry(prog.hash, prog.code, prog.idea, float(ev.score), "seed", [], self.round,
                              seed_name=names[i] if i < len(names) else None)
                )
        self.seeded = True
        self.round += 1

    def _parse(self, text: str) -> Program:
        r = parse_response(text, self.task.entry_point, self.params, self.task.imports)
        h = code_hash(r.code) if r.code is not None else None
        return Program(r.code, r.idea, h, r.error, None, r.component, r.notes)

    def _choose(self) -> tuple[str, list[PoolEntry]]:
        pop = self.population
        weights = self.config.operator_weights
        available = [
            op for op in OPERATORS
            if weights.get(op, 0.0) > 0
            and (op == "initialization" or len(pop) >= (2 if op == "crossover" else 1))
        ]
        if not available:
            # No weighted operator can run (e.g. only crossover with a one-heuristic pool, or an
            # empty pool): initialization is the only way the pool can grow.
            available = ["initialization"]
        w = np.array([weights.get(op, 1.0) for op in available], dtype=float)
        op = available[int(self.rng.choice(len(available), p=w / w.sum()))]
        if op == "initialization":
            seeds = [pop.get(h) for h in pop.seed_hashes if h in pop]
            if seeds and self.rng.random() < self.config.init_from_seed_prob:
                return op, [seeds[int(self.rng.integers(len(seeds)))]]
            return op, []
        if op == "crossover":
            first = pop.select_by_performance(self.rng)
            return op, [first, pop.select_diverse(self.rng, first)]
        if op == "simplification":
            return op, [pop.select_bloated(self.rng)]
        if op == "tweak":
            # The heuristic to edit, then up to two other good ones as examples (few-shot).
            first = pop.select_by_performance(self.rng)
            return op, [first, *[e for e in pop.ranked() if e.hash != first.hash][:2]]
        return op, [pop.select_by_performance(self.rng)]

    def _baseline(self, parents: list[PoolEntry]) -> float | None:
        if parents:
            return min(e.score for e in parents)
        seeds = [e for h in self.population.seed_hashes if (e := self.population.get(h)) is not None]
        named = [e for e in seeds if e.seed_name == self.task.baseline]
        if named:
            return named[0].score
        return min((e.score for e in seeds), default=None)
