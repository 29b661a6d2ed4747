"""Ask/tell studies backed by the store.

>>> from optiforge.blackbox import create_study
>>> study = create_study({"x": {"type": "float", "low": -5, "high": 10}}, seed=0)
>>> for _ in range(20):
...     trial = study.ask()[0]
...     study.tell(trial.id, (trial.params["x"] - 2) ** 2)
>>> study.best_trial.params                                         # doctest: +SKIP

Every trial lives in the store (SQLite file by default, PostgreSQL to share), so a study
survives restarts and can be driven from Python, the HTTP API and the CLI at once. Asking
accounts for pending trials: running trials are partitioned by the agent with the worst
value imputed and are never suggested again, so parallel askers get distinct points.

Layering note: this module is the one place in :mod:`optiforge.blackbox` that reaches up
into the platform (the store, LLM specs) and the agents; it imports them lazily, so the
space and the functions stay importable on their own.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from optiforge.blackbox.space import Space

AGENTS = ("hollm", "random")
DIRECTIONS = ("minimize", "maximize")
DEFAULT_OWNER = "local"


@dataclass(frozen=True)
class Trial:
    """One trial of a study.

    Attributes
    ----------
    id : int
        Store-wide trial id (what :meth:`Study.tell` takes).
    number : int
        0-based position in its study.
    params : dict
        Parameter values.
    value : float or None
        The told value (as given, before direction handling); ``None`` unless complete.
    state : str
        ``"running"``, ``"complete"`` or ``"failed"``.
    """

    id: int
    number: int
    params: dict[str, Any]
    value: float | None
    state: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "number": self.number, "params": self.params, "value": self.value,
                "state": self.state}


def _trial(rec: Any) -> Trial:
    return Trial(id=int(rec.id), number=int(rec.number), params=dict(rec.params), value=rec.value,
                 state=rec.state)


def _open_store(storage: Any) -> Any:
    from optiforge.platform.store import Store

    if storage is None or isinstance(storage, str):
        return Store(storage)
    if not hasattr(storage, "create_trials"):
        raise TypeError(f"storage: expected a database URL or a Store, got {type(storage).__name__}")
    return storage


def _check_value(value: Any, state: str) -> float | None:
    if state == "failed":
        if value is not None:
            raise ValueError("value: a failed trial takes no value (omit it or pass null)")
        return None
    if value is None:
        raise ValueError("value: a complete trial needs a value (or state='failed')")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"value: expected a number, got {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"value: must be finite, got {value!r} (report failures with state='failed')")
    return v


def validate_study_args(space: Any, direction: Any, agent: Any, agent_options: Any) -> tuple[Space, dict]:
    """Check everything a new study needs; returns the parsed space and clean options."""
    sp = space if isinstance(space, Space) else Space(space)
    if direction not in DIRECTIONS:
        raise ValueError(f"direction: must be 'minimize' or 'maximize', got {direction!r}")
    if agent not in AGENTS:
        raise ValueError(f"agent: unknown agent {agent!r}; choose one of {', '.join(AGENTS)}")
    opts = dict(agent_options or {}) if isinstance(agent_options, Mapping) or agent_options is None else None
    if opts is None:
        raise TypeError(f"agent_options: expected an object, got {type(agent_options).__name__}")
    seed = opts.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"agent_options.seed: expected a non-negative integer, got {seed!r}")
    if agent == "hollm":
        from optiforge.agents.hollm import HOLLMConfig

        cfg = HOLLMConfig.from_options({k: v for k, v in opts.items() if k != "seed"})
        if cfg.llm is not None:
            from optiforge.platform.llm import parse_spec

            parse_spec(cfg.llm)
        elif cfg.proposer == "llm" or cfg.predictor == "llm":
            raise ValueError("agent_options.llm: the 'llm' proposer/predictor needs an LLM spec, e.g. 'smollm2'")
    elif set(opts) - {"seed"}:
        raise ValueError(f"agent_options: the random agent takes only 'seed', got {sorted(opts)}")
    return sp, opts


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

    Notes
    -----
    One ``Study`` object serialises its asks with a lock and keeps its agent in memory,
    synchronised with the store's trials before each ask (so tells from other processes are
    seen). Two *processes* asking the same study at the same instant may get overlapping
    suggestions; share one HTTP server for parallel workers.
    """

    def __init__(self, store: Any, study_id: str, owner: str | None = None, llm: Any = None) -> None:
        self._store = store
        rec = store.get_study(study_id, owner=owner)
        self.id: str = rec.id
        self.owner: str = rec.owner
        self.name: str | None = rec.name
        self.direction: str = rec.direction
        self.agent_name: str = rec.agent
        self.agent_options: dict[str, Any] = dict(rec.agent_options or {})
        self.space = Space(rec.space)
        self._seed = int(self.agent_options.get("seed", 0))
        self._llm = llm
        self._lock = threading.Lock()
        self._agent: Any = None
        self._applied: dict[int, str] = {}

    # ------------------------------------------------------------------ agent
    def _make_agent(self) -> Any:
        if self.agent_name == "random":
            return None
        from optiforge.agents.hollm import HOLLMAgent, HOLLMConfig

        cfg = HOLLMConfig.from_options({k: v for k, v in self.agent_options.items() if k != "seed"})
        llm = self._llm
        wants_llm = cfg.proposer == "llm" or cfg.predictor == "llm" or (cfg.proposer is None and cfg.llm)
        if llm is None and cfg.llm and wants_llm:
            from optiforge.platform.llm import from_spec

            llm = from_spec(cfg.llm)
        return HOLLMAgent(self.space, cfg, llm=llm if wants_llm else None, seed=self._seed)

    def _apply(self, t: Trial) -> None:
        """Feed one stored trial's current state to the agent (idempotent)."""
        if self._agent is None or self._applied.get(t.id) == t.state:
            return
        if t.state in ("running", "waiting"):
            self._agent.add_pending(t.params)
        elif t.state == "complete":
            sign = -1.0 if self.direction == "maximize" else 1.0
            self._agent.tell(t.params, sign * float(t.value))  # type: ignore[arg-type]
        else:
            self._agent.tell(t.params, None)
        self._applied[t.id] = t.state

    def _sync(self) -> int:
        """Bring the in-memory agent up to date with the store; returns the trial count.

        Fast path: our own asks and tells are applied as they happen, so only the trial count
        and the open trials are read; a full reload runs when another writer changed anything.
        """
        if self._agent is None and self.agent_name == "hollm":
            self._agent = self._make_agent()
        if self._agent is None:
            return self._store.get_study(self.id).n_trials
        n_stored = self._store.get_study(self.id).n_trials
        if n_stored == len(self._applied):
            open_now = {t.id for t in self._store.trials(self.id, states=["running", "waiting"])}
            ours = {i for i, s in self._applied.items() if s in ("running", "waiting")}
            if ours == open_now:
                return n_stored
        trials = [_trial(t) for t in self._store.trials(self.id)]
        for t in trials:
            self._apply(t)
        return len(trials)

    # ------------------------------------------------------------------ ask/tell
    def ask(self, n: int = 1) -> list[Trial]:
        """Suggest ``n`` new points; each becomes a running trial.

        Raises
        ------
        ValueError
            ``n`` not an integer in ``[1, 1000]``.
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= 1000:
            raise ValueError(f"n: must be an integer between 1 and 1000, got {n!r}")
        with self._lock:
            n_trials = self._sync()
            if self._agent is None:
                rng = np.random.default_rng([self._seed, n_trials])
                params = self.space.sample(rng, int(n))
            else:
                params = self._agent.ask(int(n))
            created = [_trial(t) for t in self._store.create_trials(self.id, params)]
            if self._agent is not None:
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
        if state not in ("complete", "failed"):
            raise ValueError(f"state: must be 'complete' or 'failed', got {state!r}")
        v = _check_value(value, state)
        if isinstance(trial_id, bool) or not isinstance(trial_id, (int, np.integer)):
            raise TypeError(f"trial_id: expected an integer, got {trial_id!r}")
        t = _trial(self._store.finish_trial(self.id, int(trial_id), v, state))
        with self._lock:
            if t.id in self._applied:
                self._apply(t)
        return t

    def add_trial(self, params: Mapping[str, Any], value: float | None = None,
                  state: str = "complete") -> Trial:
        """Record a point evaluated outside the study (validated against the space)."""
        if state not in ("complete", "failed"):
            raise ValueError(f"state: must be 'complete' or 'failed', got {state!r}")
        v = _check_value(value, state)
        clean = self.space.validate(params)
        t = _trial(self._store.add_trial(self.id, clean, v, state))
        with self._lock:
            if self._agent is not None and len(self._applied) == t.number:
                self._apply(t)  # otherwise the next ask's count check reloads everything
        return t

    # ------------------------------------------------------------------ queries
    def get_trials(self, states: list[str] | tuple[str, ...] | None = None) -> list[Trial]:
        """Trials by number, optionally filtered by state."""
        return [_trial(t) for t in self._store.trials(self.id, states=states)]

    @property
    def trials(self) -> list[Trial]:
        return self.get_trials()

    @property
    def best_trial(self) -> Trial | None:
        """The complete trial with the best value (``None`` before the first)."""
        done = self.get_trials(["complete"])
        if not done:
            return None
        key = (lambda t: -t.value) if self.direction == "maximize" else (lambda t: t.value)
        return min(done, key=key)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "space": self.space.to_dict(),
                "direction": self.direction, "agent": self.agent_name,
                "agent_options": self.agent_options}

    def __repr__(self) -> str:
        return f"Study(id={self.id!r}, direction={self.direction!r}, agent={self.agent_name!r})"


def create_study(
    space: Mapping[str, Any] | Space,
    direction: str = "minimize",
    agent: str = "hollm",
    agent_options: Mapping[str, Any] | None = None,
    storage: Any = None,
    seed: int | None = None,
    name: str | None = None,
    owner: str = DEFAULT_OWNER,
    llm: Any = None,
) -> Study:
    """Create a stored study and return it.

    Parameters
    ----------
    space : dict or Space
        The search space (JSON form, see :mod:`optiforge.blackbox.space`).
    direction : {"minimize", "maximize"}
    agent : {"hollm", "random"}
    agent_options : dict, optional
        HOLLM options (``proposer``, ``predictor``, ``llm``, ``n_initial``, ``m``, ``k``, ``b``,
        ``alpha_max``, ``alpha_min``, ``budget``, ...; see
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
    opts = dict(agent_options or {}) if isinstance(agent_options, Mapping) or agent_options is None else agent_options
    if seed is not None:
        opts["seed"] = seed  # type: ignore[index]
    sp, opts = validate_study_args(space, direction, agent, opts)
    store = _open_store(storage)
    sid = store.create_study(owner, sp.to_dict(), direction, agent, opts, name=name)
    return Study(store, sid, llm=llm)


def load_study(study_id: str, storage: Any = None, owner: str | None = None, llm: Any = None) -> Study:
    """Open an existing study by id (``NotFoundError`` if unknown)."""
    return Study(_open_store(storage), study_id, owner=owner, llm=llm)
