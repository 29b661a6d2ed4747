"""Candidate proposers: ``k`` points inside each chosen leaf region.

* :class:`LLMProposer` — the paper's proposer: one prompt per region (region box + evaluated
  points), all regions' prompts sent in **one batched** ``generate`` call, answers parsed
  robustly; candidates outside the box, duplicated, or already evaluated are dropped, and
  regions short of ``k`` are re-asked (batched again) up to ``retries`` times.
* :class:`SobolProposer` — scrambled Sobol points in the box (LLM-free).
* :class:`GaussianProposer` — Gaussian perturbations of the region's best point, scaled to
  the box (LLM-free; the public code has no such proposer, it is our local-search option).
* :class:`ThompsonGPProposer` (``"gp-ts"``) — TuRBO-style Thompson sampling from a local GP,
  with the leaf box as the trust region [2]_.
* :class:`CMAProposer` (``"cmaes"``) — one CMA-ES generation whose mean and covariance are
  estimated from the leaf's best points and their neighbours [3]_.
* :class:`MixtureProposer` (``"mix"``) — half of each region's candidates from each of the
  two; the predictor then picks among them.

The last three are ours (the paper has only the LLM); they are the strong LLM-free options.

References
----------
.. [1] A. Schwanke et al., "Improving LLM-based Global Optimization with Search Space
   Partitioning", arXiv:2505.21372 (ICLR 2026), Sec. 3 (LLM-based candidate sampling).
.. [2] D. Eriksson, M. Pearce, J. Gardner, R. Turner, M. Poloczek, "Scalable Global
   Optimization via Local Bayesian Optimization", NeurIPS 2019 (TuRBO).
.. [3] N. Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772 (2016).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from scipy.stats import qmc

from optiforge.agents.hollm.answer_format import RegionPoints
from optiforge.agents.hollm.gp import cached_gp, posterior_samples_blocks, training_subset
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
    cache: dict[str, Any] = field(default_factory=dict)
    """Per-ask scratch space (a GP fitted by the proposer is reused by the predictor)."""

    def count(self, key: str, n: int = 1) -> None:
        self.stats[key] = self.stats.get(key, 0) + n


class Proposer(Protocol):
    def propose(
        self, regions: list[Region], k: int, ctx: ProposalContext
    ) -> list[list[Candidate]]: ...


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
        pts = qmc.Sobol(d, scramble=True, seed=ctx.rng).random_base2(
            max(0, math.ceil(math.log2(n)))
        )
        pts = pts[ctx.rng.permutation(len(pts))[:n]]
        return [
            [Candidate(r.lo + u * (r.hi - r.lo), i) for u in pts[i * k : (i + 1) * k]]
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


def _region_best(region: Region, ctx: ProposalContext) -> int | None:
    """Index of the lowest value among the region's evaluated points (``None``: none)."""
    idx = [int(j) for j in region.indices if j < len(ctx.y)]
    return min(idx, key=lambda j: ctx.y[j]) if idx else None


class ThompsonGPProposer:
    """TuRBO-style Thompson sampling from a local GP, the leaf box as the trust region.

    One GP posterior (see :mod:`~optiforge.agents.hollm.gp`) is conditioned per call on the
    chosen regions' points (then the best, then the newest, at most ``max_points``). In each
    region a pool of points is drawn, ``k`` joint posterior samples are taken over the pool,
    and each sample's argmin is a candidate (Eriksson et al.'s batch Thompson sampling).

    Deviations from TuRBO: the trust region is HOLLM's leaf (its size comes from the KD-tree,
    not from TuRBO's success/failure counters, and the bandit picks which leaves to search),
    and half the pool is Gaussian around the leaf's best point (10% of the side lengths) so the
    sampler can refine inside large leaves. TuRBO's coordinate mask (perturb ``min(1, 20/d)``
    of the coordinates of the centre) is kept for the Sobol half. The Sobol halves of all
    regions come from one scrambled sequence (an aligned power-of-two block per region), and
    one triangular solve serves all regions' pools.

    Parameters
    ----------
    pool : int, optional
        Pool size per region (default ``min(500, max(100, 10 d))``).
    max_points : int
        Largest GP training set.
    ard : bool
        One length scale per dimension (slower fits).
    """

    name = "gp-ts"

    def __init__(self, pool: int | None = None, max_points: int = 150, ard: bool = False) -> None:
        if pool is not None and pool < 1:
            raise ValueError(f"pool: must be >= 1, got {pool}")
        self.pool = pool
        self.max_points = int(max_points)
        self.ard = bool(ard)

    def propose(self, regions: list[Region], k: int, ctx: ProposalContext) -> list[list[Candidate]]:
        if len(ctx.y) < 2:
            return SobolProposer().propose(regions, k, ctx)
        d = regions[0].lo.shape[0]
        focus = np.concatenate([r.indices for r in regions])
        idx = training_subset(ctx.X, ctx.y, focus, self.max_points)
        gp = cached_gp(ctx.cache, ctx.X, ctx.y, idx, ard=self.ard)
        pool = self.pool or min(500, max(100, 10 * d))
        # One scrambled engine for all regions (scrambling a 20-D engine costs ~1.5 ms); each
        # region gets its own aligned 2^m block of the sequence, itself a stratified sample.
        block = 1 << max(0, math.ceil(math.log2(pool)))
        unit = qmc.Sobol(d, scramble=True, seed=ctx.rng).random_base2(
            max(0, math.ceil(math.log2(block * len(regions))))
        )
        pools: list[np.ndarray] = []
        for i, r in enumerate(regions):
            best = _region_best(r, ctx)
            centre = ctx.X[best] if best is not None else 0.5 * (r.lo + r.hi)
            n_local = pool // 2 if best is not None else 0
            S = r.lo + unit[i * block : i * block + pool - n_local] * (r.hi - r.lo)
            mask = ctx.rng.random(S.shape) <= min(1.0, 20.0 / d)
            empty = ~mask.any(axis=1)
            mask[empty, ctx.rng.integers(d, size=int(empty.sum()))] = True
            local = centre + ctx.rng.normal(size=(n_local, d)) * 0.1 * (r.hi - r.lo)
            pools.append(np.clip(np.vstack([np.where(mask, S, centre), local]), r.lo, r.hi))
        out = []
        for i, (P, draws) in enumerate(
            zip(pools, posterior_samples_blocks(gp, pools, k, ctx.rng), strict=True)
        ):
            used: set[int] = set()
            group = []
            for draw in draws:
                j = next(int(j) for j in np.argsort(draw) if int(j) not in used)
                used.add(j)
                group.append(Candidate(P[j], i, float(draw[j])))
            out.append(group)
        ctx.count("gp_ts_calls")
        return out


class CMAProposer:
    """One CMA-ES generation per region, its distribution estimated from the leaf's neighbourhood.

    For a region with best point ``x_b``: take the region's evaluated points and the
    ``neighbours`` points nearest to ``x_b``; the better half (``mu``) are the parents, with
    CMA-ES's log-rank weights ``w``. The mean is their weighted recombination ``m = sum w_i x_i``,
    the covariance is the rank-mu estimate ``C_mu = sum w_i (x_i - x_bar)(x_i - x_bar)^T`` of the
    selected steps from the neighbourhood mean ``x_bar`` (the previous generation's mean in
    CMA-ES), shrunk towards an axis-aligned prior ``diag((sigma0 (hi - lo))^2)``:
    ``C = (1 - c) prior + c C_mu`` with ``c = mu_eff / (mu_eff + d)``. ``k`` offspring are drawn
    from ``N(m, C)``; those outside the box are redrawn (then clipped).

    Deviations from CMA-ES: there is no state between asks (no evolution paths, no step-size
    control); the data re-estimates the distribution every time, so the step size follows the
    spread of the good points near the leaf, and the leaf bounds the search. The shrinkage weight
    replaces CMA-ES's learning rate ``c_mu`` (which assumes a covariance carried over from
    earlier generations).

    Parameters
    ----------
    sigma0 : float
        Prior standard deviation as a fraction of the region's side lengths.
    neighbours : int, optional
        Neighbourhood size (default ``max(2 lambda, d + 1)``, ``lambda = 4 + floor(3 ln d)``).
    """

    name = "cmaes"

    def __init__(self, sigma0: float = 0.3, neighbours: int | None = None) -> None:
        if not sigma0 > 0:
            raise ValueError(f"sigma0: must be > 0, got {sigma0}")
        if neighbours is not None and neighbours < 2:
            raise ValueError(f"neighbours: must be >= 2, got {neighbours}")
        self.sigma0 = float(sigma0)
        self.neighbours = neighbours

    def propose(self, regions: list[Region], k: int, ctx: ProposalContext) -> list[list[Candidate]]:
        d = regions[0].lo.shape[0]
        n = len(ctx.y)
        lam = 4 + int(3 * math.log(d))
        n_nb = min(n, self.neighbours or max(2 * lam, d + 1))
        out = []
        for i, r in enumerate(regions):
            best = _region_best(r, ctx)
            if best is None or n < 2:
                out.append(SobolProposer().propose([r], k, ctx)[0])
                out[-1] = [Candidate(c.u, i) for c in out[-1]]
                continue
            dist = np.linalg.norm(ctx.X - ctx.X[best], axis=1)
            nb = np.union1d(np.argsort(dist)[:n_nb], [int(j) for j in r.indices if j < n])
            order = nb[np.argsort(ctx.y[nb], kind="stable")]
            mu = max(1, len(order) // 2)
            w = np.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
            w /= w.sum()
            parents = ctx.X[order[:mu]]
            steps = parents - ctx.X[nb].mean(axis=0)
            c = (1.0 / np.sum(w**2)) / (1.0 / np.sum(w**2) + d)
            C = (1 - c) * np.diag((self.sigma0 * (r.hi - r.lo)) ** 2) + c * (
                w[:, None] * steps
            ).T @ steps
            A = np.linalg.cholesky(C + 1e-12 * np.eye(d))
            mean = w @ parents
            pts = mean + ctx.rng.standard_normal((k, d)) @ A.T
            for _ in range(10):
                bad = ~r.contains(pts, 0.0)
                if not bad.any():
                    break
                pts[bad] = mean + ctx.rng.standard_normal((int(bad.sum()), d)) @ A.T
            out.append([Candidate(np.clip(p, r.lo, r.hi), i) for p in pts])
        return out


class MixtureProposer:
    """Half of each region's ``k`` candidates from each component (the predictor chooses).

    Parameters
    ----------
    components : list of Proposer
        Default: ``[ThompsonGPProposer(), CMAProposer()]``.
    """

    name = "mix"

    def __init__(self, components: list[Proposer] | None = None) -> None:
        self.components = components or [ThompsonGPProposer(), CMAProposer()]

    def propose(self, regions: list[Region], k: int, ctx: ProposalContext) -> list[list[Candidate]]:
        out: list[list[Candidate]] = [[] for _ in regions]
        q, rem = divmod(k, len(self.components))
        for j, comp in enumerate(self.components):
            kj = q + (1 if j < rem else 0)
            if kj == 0:
                continue
            for i, group in enumerate(comp.propose(regions, kj, ctx)):
                out[i].extend(group)
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
    max_new_tokens : int, optional
        Token budget per answer; by default enough for ``k`` points.
    constrained : bool, optional
        Decode each answer under :class:`~optiforge.agents.hollm.answer_format.RegionPoints`
        (``k`` lines of in-region coordinates, no predicted value), so that every answer
        parses. ``None`` (default): when the LLM supports it (``supports_constraints``, the
        in-process llama.cpp and transformers backends). ``True`` with an LLM that cannot is
        a ``ValueError``.

    Notes
    -----
    Constrained decoding deviates from the paper, whose API models answer free-form JSON.
    With the 135M bundled model, free-form answers gave 2.9 % of the requested points
    (docs/benchmarks/hollm.md). Under the constraint the model still picks every digit, but
    a point can no longer fail to parse or fall outside its region. Duplicates are still
    possible and still rejected. Each answer line opens with a label the format writes itself
    (``p1: ``): without it, where a region reached 1 in the first coordinate the 135M model
    wrote ``1.000`` there in 85 % of its points (23 % for the other coordinates), a
    list-numbering "1." that the format let through; with the label, 23 % of 77 points in one
    short run (docs/benchmarks/hollm.md, the Ackley-20 section).
    """

    name = "llm"

    def __init__(
        self,
        llm: LLM,
        *,
        context_points: int = 40,
        retries: int = 2,
        temperature: float = 0.8,
        top_p: float = 0.95,
        decimals: int = 4,
        max_new_tokens: int | None = None,
        constrained: bool | None = None,
    ) -> None:
        if llm is None or not hasattr(llm, "generate"):
            raise TypeError("llm: the llm proposer needs an object with a generate() method")
        can = bool(getattr(llm, "supports_constraints", False))
        if constrained is not None and not isinstance(constrained, bool):
            raise TypeError(f"constrained: expected a bool or None, got {type(constrained).__name__}")
        if constrained and not can:
            raise ValueError(f"constrained: {type(llm).__name__} cannot decode under a constraint "
                             "(use an in-process llamacpp: or hf: LLM, or constrained=False)")
        self.constrained = can if constrained is None else constrained
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
        decimals = min(self.decimals, 3)  # the prompt's precision (candidate_prompt)
        if self.constrained:  # "I.FFF," is at most 6 tokens; the constraint ends the answer
            budget = self.max_new_tokens or k * (d * (decimals + 3) + 4) + 8  # + the "p1: " labels
        else:
            budget = self.max_new_tokens or int(k * (d * 9 + 16) + 64)
        found: list[list[Candidate]] = [[] for _ in regions]
        seen = {tuple(np.round(x, 9)) for x in ctx.X}
        todo = list(range(len(regions)))
        for _attempt in range(self.retries + 1):
            if not todo:
                break
            prompts = [
                candidate_prompt(
                    ctx.names,
                    Xc,
                    yc,
                    regions[i].lo,
                    regions[i].hi,
                    k - len(found[i]),
                    self.decimals,
                    with_values=not self.constrained,
                )
                for i in todo
            ]
            seed = int(ctx.rng.integers(2**31 - 1))
            options = {}
            if self.constrained:
                options["constraints"] = [
                    RegionPoints(np.clip(regions[i].lo, 0, 1), np.clip(regions[i].hi, 0, 1), k - len(found[i]), decimals)
                    for i in todo
                ]
            replies = self.llm.generate(
                prompts,
                n=1,
                max_new_tokens=budget,
                temperature=self.temperature,
                top_p=self.top_p,
                seed=seed,
                **options,
            )
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


PROPOSERS = ("llm", "sobol", "gaussian", "gp-ts", "cmaes", "mix")


def make_proposer(name: str, llm: LLM | None = None, **options: Any) -> Proposer:
    """Build a proposer by name (one of :data:`PROPOSERS`)."""
    if name == "sobol":
        return SobolProposer()
    if name == "gaussian":
        return GaussianProposer(**options)
    if name == "gp-ts":
        return ThompsonGPProposer(**options)
    if name == "cmaes":
        return CMAProposer(**options)
    if name == "mix":
        return MixtureProposer()
    if name == "llm":
        if llm is None:
            raise ValueError(
                "llm: the 'llm' proposer needs an LLM (agent_options['llm'], e.g. 'smollm2')"
            )
        return LLMProposer(llm, **options)
    raise ValueError(f"proposer: unknown proposer {name!r}; choose one of {', '.join(PROPOSERS)}")
