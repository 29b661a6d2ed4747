"""Candidate proposers: ``k`` points inside each chosen leaf region.

* :class:`LLMProposer` — the paper's proposer: one prompt per region (region box + evaluated
  points), all regions' prompts sent in **one batched** ``generate`` call, answers parsed
  robustly; candidates outside the box, duplicated, or already evaluated are dropped, and
  regions short of ``k`` are re-asked (batched again) up to ``retries`` times.
* :class:`SobolProposer` — scrambled Sobol points in the box (LLM-free).
* :class:`GaussianProposer` — Gaussian perturbations of the region's best point, scaled to
  the box (LLM-free; the public code has no such proposer, it is our local-search option).

References
----------
.. [1] A. Schwanke et al., "Improving LLM-based Global Optimization with Search Space
   Partitioning", arXiv:2505.21372 (ICLR 2026), Sec. 3 (LLM-based candidate sampling).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from scipy.stats import qmc

from optiforge.agents.hollm.parsing import parse_candidates
from optiforge.agents.hollm.partition import Region
from optiforge.agents.hollm.prompts import candidate_prompt
from optiforge.agents.protocols import LLM

BOX_TOL = 1e-9
"""Tolerance of the in-region check (the public code's ``1e6`` made the check a no-op)."""


@dataclass
class Candidate:
    """A proposed unit-cube point, its region, and the proposer's predicted value (if any)."""

    u: np.ndarray
    region: int
    predicted: float | None = None


@dataclass
class ProposalContext:
    """What proposers and predictors see: the observations (unit cube, lower is better)."""

    names: list[str]
    X: np.ndarray
    y: np.ndarray
    rng: np.random.Generator
    stats: dict[str, Any] = field(default_factory=dict)

    def count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n


class Proposer(Protocol):
    def propose(self, regions: list[Region], k: int, ctx: ProposalContext) -> list[list[Candidate]]: ...


def sobol_in_box(lo: np.ndarray, hi: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` scrambled Sobol points in the box ``[lo, hi]``."""
    d = lo.shape[0]
    sampler = qmc.Sobol(d, scramble=True, seed=rng)
    pts = sampler.random_base2(max(0, math.ceil(math.log2(max(n, 1)))))[:n]
    return lo + pts * (hi - lo)


class SobolProposer:
    """``k`` scrambled Sobol points per region (one engine shared by all regions of a call)."""

    name = "sobol"

    def propose(self, regions: list[Region], k: int, ctx: ProposalContext) -> list[list[Candidate]]:
        d = regions[0].lo.shape[0]
        n = len(regions) * k
        # Scrambling a 20-D engine costs milliseconds: one engine per call, not per region.
        pts = qmc.Sobol(d, scramble=True, seed=ctx.rng).random_base2(max(0, math.ceil(math.log2(n))))
        pts = pts[ctx.rng.permutation(len(pts))[:n]]
        return [
            [Candidate(r.lo + u * (r.hi - r.lo), i) for u in pts[i * k:(i + 1) * k]]
            for i, r in enumerate(regions)
        ]


class GaussianProposer:
    """``k`` Gaussian perturbations of each region's best point, clipped to the region.

    Parameters
    ----------
    scale : float
        Standard deviation as a fraction of each side length of the region.
    """

    name = "gaussian"

    def __init__(self, scale: float = 0.1) -> None:
        if not 0 < scale:
            raise ValueError(f"scale: must be > 0, got {scale}")
        self.scale = scale

    def propose(self, regions: list[Region], k: int, ctx: ProposalContext) -> list[list[Candidate]]:
        out = []
        for i, r in enumerate(regions):
            idx = [j for j in r.indices if j < len(ctx.y)]
            centre = ctx.X[min(idx, key=lambda j: ctx.y[j])] if idx else 0.5 * (r.lo + r.hi)
            pts = centre + ctx.rng.normal(size=(k, len(r.lo))) * self.scale * (r.hi - r.lo)
            out.append([Candidate(np.clip(p, r.lo, r.hi), i) for p in pts])
        return out


class LLMProposer:
    """The paper's LLM candidate sampler (batched over regions).

    Parameters
    ----------
    llm : LLM
        Any object satisfying :class:`optiforge.agents.protocols.LLM`.
    context_points : int
        How many evaluated points go into each prompt (the most recent ones, shuffled, as
        in the public code's ``max_context_configs``; default 40 instead of the paper's 110
        so prompts fit small local models' context windows).
    retries : int
        Extra batched rounds for regions that came back with fewer than ``k`` valid points.
    temperature, top_p : float
        Sampling settings (the paper uses the API defaults; we default to 0.8).
    decimals : int
        Rounding of coordinates in the prompt.
    seed : int, optional
        Base seed of the generation calls (each call gets a distinct derived seed).
    """

    name = "llm"

    def __init__(
        self, llm: LLM, *, context_points: int = 40, retries: int = 2, temperature: float = 0.8,
        top_p: float = 0.95, decimals: int = 4, max_new_tokens: int | None = None,
    ) -> None:
        if llm is None or not hasattr(llm, "generate"):
            raise TypeError("llm: the llm proposer needs an object with a generate() method")
        self.llm = llm
        self.context_points = int(context_points)
        self.retries = int(retries)
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.decimals = int(decimals)
        self.max_new_tokens = max_new_tokens

    def _context(self, ctx: ProposalContext) -> tuple[np.ndarray, np.ndarray]:
        n = ctx.X.shape[0]
        idx = np.arange(max(0, n - self.context_points), n)
        idx = ctx.rng.permutation(idx)
        return ctx.X[idx], ctx.y[idx]

    def propose(self, regions: list[Region], k: int, ctx: ProposalContext) -> list[list[Candidate]]:
        Xc, yc = self._context(ctx)
        d = len(ctx.names)
        budget = self.max_new_tokens or int(k * (d * 9 + 16) + 64)
        found: list[list[Candidate]] = [[] for _ in regions]
        seen = {tuple(np.round(x, 9)) for x in ctx.X}
        todo = list(range(len(regions)))
        for _attempt in range(self.retries + 1):
            if not todo:
                break
            prompts = [
                candidate_prompt(ctx.names, Xc, yc, regions[i].lo, regions[i].hi, k - len(found[i]),
                                 self.decimals)
                for i in todo
            ]
            seed = int(ctx.rng.integers(2**31 - 1))
            replies = self.llm.generate(prompts, n=1, max_new_tokens=budget,
                                        temperature=self.temperature, top_p=self.top_p, seed=seed)
            ctx.count("llm_calls")
            ctx.count("llm_prompts", len(prompts))
            for i, reply in zip(todo, replies, strict=True):
                text = reply[0].text if reply else ""
                parsed = parse_candidates(text, ctx.names)
                if not parsed:
                    ctx.count("llm_unparsable")
                r = regions[i]
                for coords, value in parsed:
                    u = np.asarray(coords, dtype=float)
                    if not r.contains(u, BOX_TOL)[0]:
                        ctx.count("llm_outside_region")
                        continue
                    key = tuple(np.round(u, 9))
                    if key in seen:
                        ctx.count("llm_duplicates")
                        continue
                    seen.add(key)
                    if len(found[i]) < k:
                        found[i].append(Candidate(np.clip(u, r.lo, r.hi), i, value))
                        ctx.count("llm_candidates")
            todo = [i for i in todo if len(found[i]) < k]
        return found


PROPOSERS = ("llm", "sobol", "gaussian")


def make_proposer(name: str, llm: LLM | None = None, **options: Any) -> Proposer:
    """Build a proposer by name (``"llm"``, ``"sobol"``, ``"gaussian"``)."""
    if name == "sobol":
        return SobolProposer()
    if name == "gaussian":
        return GaussianProposer(**options)
    if name == "llm":
        if llm is None:
            raise ValueError("llm: the 'llm' proposer needs an LLM (agent_options['llm'], e.g. 'smollm2')")
        return LLMProposer(llm, **options)
    raise ValueError(f"proposer: unknown proposer {name!r}; choose one of {', '.join(PROPOSERS)}")
