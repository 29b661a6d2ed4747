"""Ask/tell studies backed by the store: the face every outside caller uses.

>>> import optiforge
>>> study = optiforge.create_study({"x": {"type": "float", "low": -5, "high": 10}}, seed=0)
>>> for _ in range(20):
...     trial = study.ask()[0]
...     study.tell(trial.id, (trial.params["x"] - 2) ** 2)
>>> study.best_trial.params                                         # doctest: +SKIP

Every trial lives in the store (SQLite file by default, PostgreSQL to share), so a study
survives restarts and can be driven from Python, the HTTP API and the CLI at once. The agent
comes from :mod:`optiforge.agents.registry` and is fed the stored trials through
:func:`optiforge.agents.replay.replay_trial`: running trials are pending points (parallel
askers get distinct points), failed ones failures, complete ones values (negated when the
study maximises).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from optiforge import validation as check
from optiforge.agents.protocols import LLM, BlackboxAgent
from optiforge.agents.registry import get_agent, make_blackbox_agent, validate_options
from optiforge.agents.replay import PENDING_STATES, replay_trial
from optiforge.blackbox.space import Space
from optiforge.platform.store import Store

DIRECTIONS = ("minimize", "maximize")
TELL_STATES = ("complete", "failed")
DEFAULT_OWNER = "local"
MAX_ASK = 1000

LLMResolver = Callable[[str], LLM]
"""Maps the LLM a study's options name (``agent_options["llm"]``) to an LLM object."""


@dataclass(frozen=True)
class Trial:
    """One trial of a study.

    Attributes
    ----------
    id : int
        The trial's number within its study, from 0 (what :meth:`Study.tell` takes).
    params : dict
        Parameter values.
    value : float or None
        The told value (as given, before direction handling); ``None`` unless complete.
    state : str
        ``"running"``, ``"complete"`` or ``"failed"``.
    """

    id: int
    params: dict[str, Any]
    value: float | None
    state: str

    @property
    def number(self) -> int:
        """Same as :attr:`id` (Optuna's name for it)."""
        return self.id

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "number": self.id, "params": self.params, "value": self.value,
                "state": self.state}


def _trial(rec: Any) -> Trial:
    return Trial(id=int(rec.number), params=dict(rec.params), value=rec.value, state=rec.state)


def default_llm_resolver(ref: str) -> LLM:
    """Resolve an LLM backend spec (``"smollm2"``, ``"openai:<url>#<model>"``, ...) in process."""
    from optiforge.platform.llm import from_spec

    return from_spec(ref)


def check_llm_ref(ref: str) -> None:
    """Check an LLM spec without loading it (ValueError naming ``llm`` when malformed)."""
    from optiforge.platform.llm import parse_spec

    parse_spec(ref)


def validate_study(space: Any, direction: Any, agent: Any, agent_options: Any,
                   check_llm: Callable[[str], None] = check_llm_ref,
                   has_llm: bool = False) -> tuple[Space, dict[str, Any]]:
    """Check everything a new study needs; returns the parsed space and the options to store.

    Parameters
    ----------
    space, direction, agent, agent_options
        As for :func:`create_study` (``agent_options`` may hold ``seed``).
    check_llm : callable
        Checks the LLM the options name; the HTTP service passes one that accepts only the
        backends its operator offers.
    has_llm : bool
        The caller supplies an LLM object, so the options need not name one.

    Raises
    ------
    ValueError, TypeError
        Naming the bad argument (``space``, ``direction``, ``agent``, ``agent_options.<key>``).
    """
    sp = space if isinstance(space, Space) else Space(space)
    check.choice(direction, "direction", DIRECTIONS)
    if agent_options is not None and not isinstance(agent_options, Mapping):
        raise TypeError(f"agent_options: expected an object, got {type(agent_options).__name__}")
    opts = dict(agent_options or {})
    seed = check.integer(opts.pop("seed", 0), "agent_options.seed", minimum=0)
    info = get_agent(agent, "blackbox")
    info.check_space(sp)
    clean = validate_options(agent, opts, "blackbox")
    ref = info.llm_ref(clean)
    if ref is not None:
        check_llm(ref)
    elif info.wants_llm(clean) and not has_llm:
        raise ValueError(f"agent_options.llm: the {agent} agent with these options needs an LLM, "
                         "e.g. 'smollm2'")
    return sp, {**clean, "seed": seed}


class Study:
    """A stored study with ask/tell.

    Parameters
    ----------
    store : Store
        Where the study and its trials live.
    study_id : str
        An existing study's id.
    owner : str, optional
        When given, a study of another owner is reported as not found.
    llm : LLM, optional
        An LLM object to use instead of resolving ``agent_options["llm"]``.
    llm_resolver : callable, optional
        ``resolver(agent_options["llm"]) -> LLM`` (default: resolve it as a backend spec).

    Notes
    -----
    One ``Study`` object serialises its asks with a lock and keeps its agent in memory,
    synchronised with the store's trials before each ask (so tells from other processes are
    seen). Two *processes* asking the same study at the same instant may get overlapping
    suggestions; share one HTTP server for parallel workers.
    """

    def __init__(self, store: Store, study_id: str, owner: str | None = None, llm: LLM | None = None,
                 llm_resolver: LLMResolver | None = None) -> None:
        self._store = store
        rec = store.get_study(study_id, owner=owner)
        self.id: str = rec.id
        self.owner: str = rec.owner
        self.name: str | None = rec.name
        self.direction: str = rec.direction
        self.agent_name: str = rec.agent
        self.agent_options: dict[str, Any] = dict(rec.agent_options or {})
        self.space = Space(rec.space)
        self._llm = llm
        self._llm_resolver = llm_resolver or default_llm_resolver
        self._lock = threading.Lock()
        self._agent: BlackboxAgent | None = None
        self._applied: dict[int, str] = {}

    # ------------------------------------------------------------------ agent
    def _make_agent(self) -> BlackboxAgent:
        info = get_agent(self.agent_name, "blackbox")
        options = {k: v for k, v in self.agent_options.items() if k != "seed"}
        llm = self._llm
        ref = info.llm_ref(options)
        if llm is None and ref and info.wants_llm(options):
            llm = self._llm_resolver(ref)
        return make_blackbox_agent(self.agent_name, self.space, options, llm=llm,
                                   seed=int(self.agent_options.get("seed", 0)))

    @property
    def agent(self) -> BlackboxAgent:
        """The in-memory agent (built on first use)."""
        if self._agent is None:
            self._agent = self._make_agent()
        return self._agent

    def _apply(self, t: Trial) -> None:
        """Feed one stored trial's current state to the agent (idempotent)."""
        if self._applied.get(t.id) == t.state:
            return
        replay_trial(self.agent, t.params, t.state, t.value, maximize=self.direction == "maximize")
        self._applied[t.id] = t.state

    def _sync(self) -> None:
        """Bring the in-memory agent up to date with the store.

        Fast path: our own asks and tells are applied as they happen, so only the trial count
        and the open trials are read; a full replay runs when another writer changed anything.
        """
        n_stored = self._store.get_study(self.id).n_trials
        if n_stored == len(self._applied):
            open_now = {t.number for t in self._store.trials(self.id, states=list(PENDING_STATES))}
            ours = {i for i, s in self._applied.items() if s in PENDING_STATES}
            if ours == open_now:
                return
        for t in self._store.trials(self.id):
            self._apply(_trial(t))

    # ------------------------------------------------------------------ ask/tell
    def ask(self, n: int = 1) -> list[Trial]:
        """Suggest ``n`` new points; each becomes a running trial.

        Raises
        ------
        ValueError, TypeError
            ``n`` not an integer in ``[1, 1000]``.
        """
        n = check.integer(n, "n", minimum=1, maximum=MAX_ASK)
        with self._lock:
            self._sync()
            params = self.agent.ask(n)
            created = [_trial(t) for t in self._store.create_trials(self.id, params)]
            for t in created:
                self._applied[t.id] = t.state  # the agent already holds them as pending
            return created

    def tell(self, trial_id: int, value: float | None = None, state: str = "complete") -> Trial:
        """Report a trial's result (``state="failed"`` without a value for a failed run).

        Raises
        ------
        NotFoundError
            ``trial_id`` is not a trial of this study.
        ConflictError
            The trial was already told.
        ValueError, TypeError
            Bad ``value`` / ``state``.
        """
        v = _check_result(value, state)
        t = _trial(self._store.finish_trial(self.id, trial_id, v, state))
        with self._lock:
            if t.id in self._applied:
                self._apply(t)
        return t

    def add_trial(self, params: Mapping[str, Any], value: float | None = None,
                  state: str = "complete") -> Trial:
        """Record a point evaluated outside the study (validated against the space)."""
        v = _check_result(value, state)
        clean = self.space.validate(params)
        t = _trial(self._store.add_trial(self.id, clean, v, state))
        with self._lock:
            if self._agent is not None and len(self._applied) == t.id:
                self._apply(t)  # otherwise the next ask's count check replays everything
        return t

    # ------------------------------------------------------------------ queries
    def get_trials(self, states: list[str] | tuple[str, ...] | None = None, *, limit: int | None = None,
                   offset: int = 0) -> list[Trial]:
        """Trials by number, optionally filtered by state; ``limit``/``offset`` select a page."""
        return [_trial(t) for t in self._store.trials(self.id, states=states, limit=limit, offset=offset)]

    @property
    def trials(self) -> list[Trial]:
        return self.get_trials()

    @property
    def best_trial(self) -> Trial | None:
        """The complete trial with the best value (``None`` before the first)."""
        done = self.get_trials(["complete"])
        if not done:
            return None
        sign = -1.0 if self.direction == "maximize" else 1.0
        return min(done, key=lambda t: sign * t.value)  # type: ignore[operator]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "space": self.space.to_dict(),
                "direction": self.direction, "agent": self.agent_name,
                "agent_options": self.agent_options}

    def __repr__(self) -> str:
        return f"Study(id={self.id!r}, direction={self.direction!r}, agent={self.agent_name!r})"


def _check_result(value: Any, state: Any) -> float | None:
    check.choice(state, "state", TELL_STATES)
    if state == "failed":
        if value is not None:
            raise ValueError("value: a failed trial takes no value (omit it or pass null)")
        return None
    if value is None:
        raise ValueError("value: a complete trial needs a value (or state='failed')")
    return check.finite(value, "value", hint=" (report failures with state='failed')")


def open_store(storage: Store | str | None) -> Store:
    """A :class:`Store` from a database URL, a Store, or ``None`` (the default store)."""
    if storage is None or isinstance(storage, str):
        return Store(storage)
    if not isinstance(storage, Store):
        raise TypeError(f"storage: expected a database URL or a Store, got {type(storage).__name__}")
    return storage


def create_study(
    space: Mapping[str, Any] | Space,
    direction: str = "minimize",
    agent: str = "hollm",
    agent_options: Mapping[str, Any] | None = None,
    storage: Store | str | None = None,
    seed: int | None = None,
    name: str | None = None,
    owner: str = DEFAULT_OWNER,
    llm: LLM | None = None,
) -> Study:
    """Create a stored study and return it.

    Parameters
    ----------
    space : dict or Space
        The search space (JSON form, see :mod:`optiforge.blackbox.space`).
    direction : {"minimize", "maximize"}
    agent : str
        A black-box agent from :func:`optiforge.agents.registry.agent_names` (``"hollm"``,
        ``"random"``, ``"zo-riemannian"`` for manifold parameters, or a plug-in).
    agent_options : dict, optional
        The agent's options; for HOLLM ``proposer``, ``predictor``, ``llm``, ``n_initial``,
        ``m``, ``k``, ``b``, ``alpha_max``, ``alpha_min``, ``budget``, ... (see
        :class:`~optiforge.agents.hollm.HOLLMConfig`).
    storage : str or Store, optional
        Database URL or a ``Store``; default the platform's store (``$OPTIFORGE_DB``).
    seed : int, optional
        Stored as ``agent_options["seed"]``.
    name, owner : str, optional
        Label and owning user (``"local"`` for in-process use).
    llm : LLM, optional
        An LLM object for this process (otherwise ``agent_options["llm"]`` is resolved).

    Returns
    -------
    Study

    Raises
    ------
    ValueError, TypeError
        Naming the bad argument (space, direction, agent, agent_options.*).
    """
    if agent_options is not None and not isinstance(agent_options, Mapping):
        raise TypeError(f"agent_options: expected an object, got {type(agent_options).__name__}")
    opts = dict(agent_options or {})
    if seed is not None:
        opts["seed"] = seed
    sp, opts = validate_study(space, direction, agent, opts, has_llm=llm is not None)
    store = open_store(storage)
    sid = store.create_study(owner, sp.to_dict(), direction, agent, opts, name=name)
    return Study(store, sid, llm=llm)


def load_study(study_id: str, storage: Store | str | None = None, owner: str | None = None,
               llm: LLM | None = None) -> Study:
    """Open an existing study by id (``NotFoundError`` if unknown)."""
    return Study(open_store(storage), study_id, owner=owner, llm=llm)
