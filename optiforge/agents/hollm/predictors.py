"""Predictors: rank the ``M * k`` candidates so the best ``b`` get evaluated.

* :class:`LLMPredictor` — the paper's batched LLM surrogate: one prompt with the evaluated
  points and all candidates, answered with one predicted value per candidate.
* :class:`GPPredictor` — posterior mean of the local GP of :mod:`~optiforge.agents.hollm.gp`
  (Matern-5/2 + noise; one length scale unless ``ard=True``, which is ~6x slower to fit in
  20-D), conditioned on at most ``max_points`` observations (those in the chosen regions, then the best, then the most
  recent) so an ask stays fast with thousands of trials.
* :class:`ForestPredictor` — scikit-learn ``ExtraTreesRegressor`` mean prediction.
* :class:`RandomPredictor` — a random ranking (ablation: no surrogate).

All predictors return values on the objective's scale, **lower is better**; the agent takes
the ``b`` lowest. As in the public code, the acquisition is the predicted value itself
(exploration comes from the region sampling, not from the predictor).

References
----------
.. [1] A. Schwanke et al., "Improving LLM-based Global Optimization with Search Space
   Partitioning", arXiv:2505.21372 (ICLR 2026), Sec. 3 (candidate selection).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from optiforge.agents.hollm.gp import cached_gp, single_threaded, training_subset
from optiforge.agents.hollm.parsing import parse_values
from optiforge.agents.hollm.prompts import surrogate_prompt
from optiforge.agents.hollm.proposers import Candidate, ProposalContext
from optiforge.agents.protocols import LLM


class Predictor(Protocol):
    def predict(
        self, candidates: list[Candidate], ctx: ProposalContext, focus: np.ndarray | None = None
    ) -> np.ndarray: ...


class RandomPredictor:
    """Random scores (ablation)."""

    name = "random"

    def predict(
        self, candidates: list[Candidate], ctx: ProposalContext, focus: np.ndarray | None = None
    ) -> np.ndarray:
        return ctx.rng.random(len(candidates))


class GPPredictor:
    """Gaussian-process posterior mean (the local GP of :mod:`~optiforge.agents.hollm.gp`).

    Parameters
    ----------
    max_points : int
        Largest training set (a local subset beyond it; see the module docstring).
    """

    name = "gp"

    def __init__(self, max_points: int = 150, ard: bool = False) -> None:
        self.max_points = int(max_points)
        self.ard = bool(ard)

    def predict(
        self, candidates: list[Candidate], ctx: ProposalContext, focus: np.ndarray | None = None
    ) -> np.ndarray:
        U = np.array([c.u for c in candidates])
        if ctx.X.shape[0] < 2:
            return ctx.rng.random(len(candidates))
        idx = training_subset(ctx.X, ctx.y, focus, self.max_points)
        gp = cached_gp(ctx.cache, ctx.X, ctx.y, idx, ard=self.ard)
        with single_threaded():
            return gp.predict(U)


class ForestPredictor:
    """Extremely randomised trees mean prediction (scikit-learn)."""

    name = "forest"

    def __init__(self, n_estimators: int = 30, max_points: int = 500) -> None:
        self.n_estimators = int(n_estimators)
        self.max_points = int(max_points)

    def predict(
        self, candidates: list[Candidate], ctx: ProposalContext, focus: np.ndarray | None = None
    ) -> np.ndarray:
        from sklearn.ensemble import ExtraTreesRegressor

        U = np.array([c.u for c in candidates])
        if ctx.X.shape[0] < 2:
            return ctx.rng.random(len(candidates))
        idx = training_subset(ctx.X, ctx.y, focus, self.max_points)
        model = ExtraTreesRegressor(
            n_estimators=self.n_estimators,
            min_samples_leaf=1,
            random_state=int(ctx.rng.integers(2**31 - 1)),
        )
        model.fit(ctx.X[idx], ctx.y[idx])
        return model.predict(U)


class LLMPredictor:
    """The paper's batched LLM surrogate: one prompt predicts every candidate's value.

    If the answer cannot be parsed after ``retries`` extra attempts, the candidates'
    proposer-predicted values are used when all have one, else a random ranking (counted
    in the agent's ``stats`` as ``surrogate_fallbacks``).
    """

    name = "llm"

    def __init__(
        self,
        llm: LLM,
        *,
        context_points: int = 40,
        retries: int = 1,
        temperature: float = 0.2,
        decimals: int = 4,
    ) -> None:
        if llm is None or not hasattr(llm, "generate"):
            raise TypeError("llm: the llm predictor needs an object with a generate() method")
        self.llm = llm
        self.context_points = int(context_points)
        self.retries = int(retries)
        self.temperature = float(temperature)
        self.decimals = int(decimals)

    def predict(
        self, candidates: list[Candidate], ctx: ProposalContext, focus: np.ndarray | None = None
    ) -> np.ndarray:
        U = np.array([c.u for c in candidates])
        n = ctx.X.shape[0]
        idx = ctx.rng.permutation(np.arange(max(0, n - self.context_points), n))
        prompt = surrogate_prompt(ctx.names, ctx.X[idx], ctx.y[idx], U, self.decimals)
        for _ in range(self.retries + 1):
            reply = self.llm.generate(
                [prompt],
                n=1,
                max_new_tokens=12 * len(candidates) + 32,
                temperature=self.temperature,
                seed=int(ctx.rng.integers(2**31 - 1)),
            )
            ctx.count("llm_calls")
            text = reply[0][0].text if reply and reply[0] else ""
            values = parse_values(text, len(candidates))
            if values is not None:
                return np.asarray(values, dtype=float)
        ctx.count("surrogate_fallbacks")
        if all(c.predicted is not None for c in candidates):
            return np.array([c.predicted for c in candidates], dtype=float)
        return ctx.rng.random(len(candidates))


PREDICTORS = ("llm", "gp", "forest", "random")


def make_predictor(name: str, llm: LLM | None = None, **options: Any) -> Predictor:
    """Build a predictor by name (``"llm"``, ``"gp"``, ``"forest"``, ``"random"``)."""
    if name == "gp":
        return GPPredictor(**options)
    if name == "forest":
        return ForestPredictor(**options)
    if name == "random":
        return RandomPredictor()
    if name == "llm":
        if llm is None:
            raise ValueError(
                "llm: the 'llm' predictor needs an LLM (agent_options['llm'], e.g. 'smollm2')"
            )
        return LLMPredictor(llm, **options)
    raise ValueError(
        f"predictor: unknown predictor {name!r}; choose one of {', '.join(PREDICTORS)}"
    )
