"""The agent registry: the one place that knows agent names.

Two families of agents plug in here:

* **black-box agents** (:class:`~optiforge.agents.protocols.BlackboxAgent`): ``hollm``,
  ``random`` and ``zo-riemannian`` are built in; studies, black-box campaigns, the HTTP API, the CLI and the Optuna
  sampler all build their agent through :func:`make_blackbox_agent`;
* **program agents**, which evolve heuristic programs for a
  :class:`~optiforge.heuristics.HeuristicTask`: ``evolution`` (CALM).

Everything else holds an :class:`AgentInfo` (or the agent object) and asks it questions
(``info.kind``, ``info.wants_llm(options)``); nothing outside this module compares a name
string. A third-party package adds an agent with an ``optiforge.agents`` entry point naming
an :class:`AgentInfo` (see :mod:`optiforge.plugins`).

Options are validated once, here, by the agent's own config class: :func:`validate_options`
returns the clean options the store keeps, and the factories trust them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from optiforge.agents.protocols import LLM, BlackboxAgent
from optiforge.plugins import AGENTS_GROUP, entry_point_refs, load_ref

AgentKind = Literal["blackbox", "program"]


@dataclass(frozen=True)
class AgentInfo:
    """How to validate options for, and build, one agent.

    Attributes
    ----------
    name : str
        The registry name (``"hollm"``).
    kind : {"blackbox", "program"}
        ``"blackbox"``: ``factory(space, options, llm, seed)`` returns a
        :class:`~optiforge.agents.protocols.BlackboxAgent`. ``"program"``:
        ``factory(task, options, llm, seed)`` returns an agent with ``propose``/``observe``
        (:class:`~optiforge.agents.evolution.EvolutionAgent`).
    summary : str
        One line for ``optiforge agents`` and error messages.
    validate : callable
        ``validate(options) -> dict``: the clean, JSON-able options (raises
        ``ValueError``/``TypeError`` naming ``agent_options.<key>``).
    factory : callable
        Builds the agent from clean options (see ``kind``).
    wants_llm : callable
        ``wants_llm(options) -> bool``: whether the agent needs an LLM object.
    llm_ref : callable
        ``llm_ref(options) -> str | None``: the LLM the options name (a backend spec, or a
        backend name offered by a service), resolved by the platform.
    budget_defaults : callable
        ``budget_defaults(budget) -> dict``: option defaults for a campaign of ``budget``
        evaluations (HOLLM's schedule length ``T``).
    batch_size : callable
        ``batch_size(options) -> int``: points a black-box campaign asks per round.
    check_space : callable
        ``check_space(space)``: raises ``ValueError`` naming a parameter the agent cannot
        search (HOLLM keeps to box parameters); checked when a study is created.
    """

    name: str
    kind: AgentKind
    summary: str
    validate: Callable[[Mapping[str, Any] | None], dict[str, Any]]
    factory: Callable[..., Any]
    wants_llm: Callable[[Mapping[str, Any]], bool] = lambda options: False
    llm_ref: Callable[[Mapping[str, Any]], str | None] = lambda options: None
    budget_defaults: Callable[[int], dict[str, Any]] = lambda budget: {}
    batch_size: Callable[[Mapping[str, Any]], int] = lambda options: 4
    check_space: Callable[[Any], None] = lambda space: None


# ---------------------------------------------------------------------------- built-ins
def _hollm_validate(options: Mapping[str, Any] | None) -> dict[str, Any]:
    from optiforge.agents.hollm import HOLLMConfig

    HOLLMConfig.from_options(options)
    return dict(options or {})


def _hollm_wants_llm(options: Mapping[str, Any]) -> bool:
    proposer, predictor = options.get("proposer"), options.get("predictor", "gp")
    return proposer == "llm" or predictor == "llm" or (proposer is None and bool(options.get("llm")))


def _hollm_factory(space: Any, options: Mapping[str, Any], llm: LLM | None, seed: int) -> BlackboxAgent:
    from optiforge.agents.hollm import HOLLMAgent

    return HOLLMAgent(space, dict(options), llm=llm if _hollm_wants_llm(options) else None, seed=seed)


def _zo_validate(options: Mapping[str, Any] | None) -> dict[str, Any]:
    from optiforge.agents.zo_riemannian import ZORiemannianConfig

    return ZORiemannianConfig.from_options(options).to_dict()


def _zo_factory(space: Any, options: Mapping[str, Any], llm: LLM | None, seed: int) -> BlackboxAgent:
    from optiforge.agents.zo_riemannian import ZORiemannianAgent

    return ZORiemannianAgent(space, options, seed=seed)


def _zo_check_space(space: Any) -> None:
    from optiforge.blackbox.riemannian import ConformalBarrier, SpaceManifold

    SpaceManifold(space, ConformalBarrier())


def _random_validate(options: Mapping[str, Any] | None) -> dict[str, Any]:
    if options:
        raise ValueError(f"agent_options: the random agent takes no options, got {sorted(options)}")
    return {}


def _random_factory(space: Any, options: Mapping[str, Any], llm: LLM | None, seed: int) -> BlackboxAgent:
    from optiforge.agents.random_search import RandomSearchAgent

    return RandomSearchAgent(space, seed=seed)


def _evolution_validate(options: Mapping[str, Any] | None) -> dict[str, Any]:
    from optiforge.agents.evolution import EvolutionConfig

    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"agent_options: expected an object, got {type(options).__name__}")
    return EvolutionConfig.from_dict(dict(options or {})).to_dict()


def _evolution_factory(task: Any, options: Mapping[str, Any], llm: LLM, seed: int) -> Any:
    from optiforge.agents.evolution import EvolutionAgent, EvolutionConfig

    return EvolutionAgent(task, llm, EvolutionConfig.from_dict(dict(options)), seed=seed)


_BUILTIN: dict[str, AgentInfo] = {
    info.name: info
    for info in (
        AgentInfo("hollm", "blackbox",
                  "HOLLM: KD-tree regions, bandit region scores, LLM or LLM-free proposals",
                  _hollm_validate, _hollm_factory, _hollm_wants_llm,
                  llm_ref=lambda options: options.get("llm"),
                  budget_defaults=lambda budget: {"budget": budget},
                  batch_size=lambda options: int(options.get("b", 4)),
                  check_space=lambda space: space.require_box("hollm")),
        AgentInfo("random", "blackbox", "uniform random search (the baseline)",
                  _random_validate, _random_factory),
        AgentInfo("zo-riemannian", "blackbox",
                  "zeroth-order Riemannian SGD with structure-preserving metrics (simplex, sphere, "
                  "spd and float parameters)",
                  _zo_validate, _zo_factory,
                  budget_defaults=lambda budget: {"budget": max(2, budget)},
                  batch_size=lambda options: 2 * int(options.get("directions", 1)),
                  check_space=_zo_check_space),
        AgentInfo("evolution", "program",
                  "CALM-style heuristic evolution (operators, pool, collapse, CALM rewards)",
                  _evolution_validate, _evolution_factory, lambda options: True),
    )
}
_plugins: dict[str, AgentInfo] | None = None


def _plugin_agents() -> dict[str, AgentInfo]:
    global _plugins
    if _plugins is None:
        found: dict[str, AgentInfo] = {}
        for name, ref in entry_point_refs(AGENTS_GROUP).items():
            if name in _BUILTIN:
                continue  # a plug-in never shadows a built-in agent
            info = load_ref(ref, f"agent {name!r}")
            if not isinstance(info, AgentInfo):
                raise TypeError(f"agent {name!r}: entry point {ref!r} is not an AgentInfo")
            found[name] = info
        _plugins = found
    return _plugins


def agent_names(kind: AgentKind | None = None) -> list[str]:
    """Registered agent names, optionally of one ``kind``."""
    infos = {**_BUILTIN, **_plugin_agents()}
    return sorted(n for n, i in infos.items() if kind is None or i.kind == kind)


def get_agent(name: Any, kind: AgentKind | None = None) -> AgentInfo:
    """The :class:`AgentInfo` registered as ``name``.

    Raises
    ------
    ValueError
        Unknown name, or an agent of another ``kind`` (the message lists the choices).
    """
    info = _BUILTIN.get(name) if isinstance(name, str) else None
    if info is None and isinstance(name, str):
        info = _plugin_agents().get(name)
    if info is None or (kind is not None and info.kind != kind):
        shown = name if not isinstance(name, str) or len(name) <= 64 else name[:64] + "..."
        raise ValueError(f"agent: unknown agent {shown!r}; choose one of {', '.join(agent_names(kind))}")
    return info


def validate_options(name: str, options: Mapping[str, Any] | None,
                     kind: AgentKind | None = None) -> dict[str, Any]:
    """Validate ``options`` for agent ``name``; returns the clean options to store."""
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"agent_options: expected an object, got {type(options).__name__}")
    return get_agent(name, kind).validate(options)


def make_blackbox_agent(name: str, space: Any, options: Mapping[str, Any] | None = None,
                        llm: LLM | None = None, seed: int = 0) -> BlackboxAgent:
    """Build the black-box agent ``name`` over ``space`` from validated ``options``."""
    info = get_agent(name, "blackbox")
    return info.factory(space, info.validate(options), llm, seed)
