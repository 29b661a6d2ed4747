"""optiforge's black-box agents as Optuna samplers (``pip install optiforge[optuna]``).

>>> import optuna
>>> from optiforge.integrations.optuna import HOLLMSampler
>>> study = optuna.create_study(sampler=HOLLMSampler(seed=0))
>>> study.optimize(lambda t: (t.suggest_float("x", -5, 5) - 1) ** 2, n_trials=30)  # doctest: +SKIP

The sampler works on Optuna's own trials (any storage: in-memory, RDB, journal), so Optuna's
dashboards, pruners and ``n_jobs`` parallelism work unchanged. The joint ("relative") search
space is Optuna's intersection search space; parameters outside it are sampled by a
``RandomSampler``. Each ``sample_relative`` builds the agent from the registry
(:mod:`optiforge.agents.registry`), replays the study's complete, failed and running trials
into it with :func:`~optiforge.agents.replay.replay_trial` (the same replay a stored study
uses) and asks it for one point; maximisation studies are negated.
:class:`AgentSampler` runs any registered black-box agent; :class:`HOLLMSampler` is HOLLM.

References
----------
.. [1] A. Schwanke et al., "Improving LLM-based Global Optimization with Search Space
   Partitioning", arXiv:2505.21372 (ICLR 2026).
.. [2] T. Akiba et al., "Optuna: A Next-generation Hyperparameter Optimization Framework",
   KDD 2019.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from optiforge.extras import missing_extra

try:
    from optuna.distributions import (
        BaseDistribution,
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )
    from optuna.samplers import BaseSampler, RandomSampler
    from optuna.search_space import IntersectionSearchSpace
    from optuna.study import Study, StudyDirection
    from optuna.trial import FrozenTrial, TrialState
except ImportError as exc:
    raise missing_extra("optuna", "the Optuna sampler", "optuna") from exc

from optiforge.agents.protocols import LLM
from optiforge.agents.registry import get_agent, make_blackbox_agent, validate_options
from optiforge.agents.replay import replay_trial
from optiforge.blackbox.space import CategoricalParam, FloatParam, IntParam, Param, Space

_OPTUNA_STATES = {TrialState.COMPLETE: "complete", TrialState.FAIL: "failed",
                  TrialState.RUNNING: "running"}


def space_from_distributions(distributions: Mapping[str, BaseDistribution]) -> Space:
    """Translate Optuna distributions into a :class:`Space`."""
    params: list[Param] = []
    for name, d in distributions.items():
        if isinstance(d, FloatDistribution):
            params.append(FloatParam(name, d.low, d.high, log=d.log, step=d.step))
        elif isinstance(d, IntDistribution):
            params.append(IntParam(name, d.low, d.high, step=d.step, log=d.log))
        elif isinstance(d, CategoricalDistribution):
            params.append(CategoricalParam(name, tuple(d.choices)))
        else:
            raise TypeError(f"distributions.{name}: unsupported distribution {type(d).__name__}")
    return Space(params)


class AgentSampler(BaseSampler):
    """Optuna sampler running a registered optiforge black-box agent.

    Parameters
    ----------
    agent : str
        A black-box agent name (``"hollm"``, ``"random"``, or a plug-in).
    seed : int, optional
        Seed of the agent and of the fallback random sampler.
    agent_options : dict, optional
        The agent's options (for HOLLM: ``proposer``, ``predictor``, ``n_initial``, ``m``,
        ``k``, ``alpha_max``, ``budget``, ...; see :class:`~optiforge.agents.hollm.HOLLMConfig`).
    llm : LLM, optional
        The LLM object an agent that wants one uses (e.g.
        ``optiforge.platform.llm.from_spec("smollm2")``).
    """

    def __init__(self, agent: str = "hollm", *, seed: int | None = None,
                 agent_options: Mapping[str, Any] | None = None, llm: LLM | None = None) -> None:
        self._agent = agent
        self._options = validate_options(agent, agent_options, "blackbox")
        if llm is None and get_agent(agent).wants_llm(self._options):
            raise ValueError(f"llm: the {agent!r} agent with these options needs an LLM object")
        self._llm = llm
        self._seed = random.randrange(2**31) if seed is None else int(seed)
        self._random = RandomSampler(seed=seed)
        self._search_space = IntersectionSearchSpace()

    def reseed_rng(self) -> None:
        self._seed = random.randrange(2**31)
        self._random.reseed_rng()

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return {n: d for n, d in self._search_space.calculate(study).items() if not d.single()}

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        if not search_space:
            return {}
        if len(study.directions) > 1:
            raise ValueError("study: HOLLMSampler supports single-objective studies only")
        space = space_from_distributions(search_space)
        agent = make_blackbox_agent(self._agent, space, self._options, llm=self._llm, seed=self._seed)
        maximize = study.direction == StudyDirection.MAXIMIZE
        for t in study._get_trials(deepcopy=False, states=tuple(_OPTUNA_STATES), use_cache=True):
            if t.number == trial.number or not all(n in t.params for n in search_space):
                continue
            params = {n: t.params[n] for n in search_space}
            try:
                space.validate(params)
            except (TypeError, ValueError):
                continue  # recorded under a different distribution (e.g. changed bounds)
            replay_trial(agent, params, _OPTUNA_STATES[t.state], t.value, maximize=maximize)
        return agent.ask(1)[0]

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._random.sample_independent(study, trial, param_name, param_distribution)


class HOLLMSampler(AgentSampler):
    """Optuna sampler running HOLLM (:class:`AgentSampler` with ``agent="hollm"``)."""

    def __init__(self, *, seed: int | None = None, agent_options: Mapping[str, Any] | None = None,
                 llm: LLM | None = None) -> None:
        super().__init__("hollm", seed=seed, agent_options=agent_options, llm=llm)


__all__ = ["AgentSampler", "HOLLMSampler", "space_from_distributions"]
