"""HOLLM as an Optuna sampler (``pip install optiforge[optuna]``).

>>> import optuna
>>> from optiforge.blackbox import HOLLMSampler
>>> study = optuna.create_study(sampler=HOLLMSampler(seed=0))
>>> study.optimize(lambda t: (t.suggest_float("x", -5, 5) - 1) ** 2, n_trials=30)  # doctest: +SKIP

The sampler works on Optuna's own trials (any storage: in-memory, RDB, journal), so Optuna's
dashboards, pruners and ``n_jobs`` parallelism work unchanged. The joint ("relative") search
space is Optuna's intersection search space; parameters outside it are sampled by a
``RandomSampler``. Each ``sample_relative`` rebuilds a
:class:`~optiforge.agents.hollm.HOLLMAgent` from the study's complete (told), failed and
running (pending) trials and asks it for one point; maximisation studies are negated.

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

from optiforge.agents.hollm import HOLLMAgent, HOLLMConfig
from optiforge.agents.protocols import LLM
from optiforge.blackbox.space import CategoricalParam, FloatParam, IntParam, Param, Space


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


class HOLLMSampler(BaseSampler):
    """Optuna sampler running HOLLM.

    Parameters
    ----------
    seed : int, optional
        Seed of the agent and of the fallback random sampler.
    agent_options : dict, optional
        :class:`~optiforge.agents.hollm.HOLLMConfig` options (``proposer``, ``predictor``,
        ``n_initial``, ``m``, ``k``, ``alpha_max``, ``budget``, ...).
    llm : LLM, optional
        Needed for the ``llm`` proposer/predictor (e.g.
        ``optiforge.platform.llm.from_spec("smollm2")``).
    """

    def __init__(self, *, seed: int | None = None, agent_options: Mapping[str, Any] | None = None,
                 llm: LLM | None = None) -> None:
        self._config = HOLLMConfig.from_options(agent_options)
        if self._config.proposer == "llm" or self._config.predictor == "llm":
            if llm is None:
                raise ValueError("llm: the 'llm' proposer/predictor needs an LLM object")
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
        agent = HOLLMAgent(space, self._config, llm=self._llm, seed=self._seed)
        sign = -1.0 if study.direction == StudyDirection.MAXIMIZE else 1.0
        states = (TrialState.COMPLETE, TrialState.FAIL, TrialState.RUNNING)
        for t in study._get_trials(deepcopy=False, states=states, use_cache=True):
            if t.number == trial.number or not all(n in t.params for n in search_space):
                continue
            params = {n: t.params[n] for n in search_space}
            try:
                space.validate(params)
            except (TypeError, ValueError):
                continue  # recorded under a different distribution (e.g. changed bounds)
            if t.state == TrialState.COMPLETE and t.value is not None:
                agent.tell(params, sign * t.value)
            elif t.state == TrialState.FAIL:
                agent.tell(params, None)
            elif t.state == TrialState.RUNNING:
                agent.add_pending(params)
        return agent.ask(1)[0]

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._random.sample_independent(study, trial, param_name, param_distribution)


__all__ = ["HOLLMSampler", "space_from_distributions"]
