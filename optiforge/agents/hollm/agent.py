"""HOLLM: Hierarchical Optimization with Large Language Models (ask/tell agent).

One iteration (``ask(b)``) of the algorithm of Schwanke et al.:

1. ``alpha_t`` from the cosine schedule (``t`` = evaluations so far, pending included;
   ``T`` = ``budget``).
2. Refit a KD-tree on **all** evaluated points with leaf size ``m_t = m0 + ceil(lam log(1+t))``.
3. Score each leaf: normalised exploitation (best value) + ``alpha_t`` (0.5 volume + 0.5 UCB-V).
4. Sample ``M`` leaves without replacement, in proportion to the scores.
5. Ask the proposer for ``k`` candidates inside each chosen leaf (LLM: one batched call).
6. Rank the ``M k`` candidates with the predictor and return the best ``b``.

The first ``n_initial`` points come from a scrambled Sobol sequence (indexed by how many
trials exist, so parallel askers get distinct points).

Deviations from the paper / public code (all deliberate):

* **Batch size per ask.** The paper evaluates ``b`` = 4 points per iteration; here one ask
  is one iteration and ``ask(n)`` returns ``n`` points (``ask(4)`` is the paper's step; a
  sequential ``ask(1)`` picks the best of ``M k`` candidates every time).
* **Pending and failed trials** (not in the paper) are partitioned like evaluated points
  with the worst observed value imputed, so parallel askers spread over regions and failed
  regions are not favoured; candidates equal to an existing or pending point are dropped.
* **Bug fixes** of the public code: UCB-V uses ``log(T / (K n_l))`` (the code's
  ``log(T / K * n_l)`` has the wrong precedence) and the in-region check uses a ``1e-9``
  tolerance (the code's ``1e6`` disabled it). See :mod:`~optiforge.agents.hollm.scores`.
* When a proposer returns fewer than ``b`` usable candidates (an LLM that ignores the
  format), the shortfall is filled with Sobol points from the chosen regions
  (``stats["filled"]`` counts them) so every ask returns ``n`` points.
* LLM-free proposers (``sobol``, ``gaussian``, ``gp-ts`` (TuRBO-style Thompson sampling in
  the leaf), ``cmaes`` (a CMA-ES generation estimated from the leaf's neighbourhood), ``mix``)
  and predictors (``gp``, ``forest``, ``random``) are ours, for runs without a model; defaults: proposer ``"llm"`` when an LLM is
  given, else ``"gp-ts"`` (chosen on COCO/BBOB, ``docs/benchmarks/bbob.md``); predictor ``"gp"``.

References
----------
.. [1] A. Schwanke, L. Ivanov, D. Salinas, F. Ferreira, A. Klein, F. Hutter, A. Zela,
   "Improving LLM-based Global Optimization with Search Space Partitioning",
   arXiv:2505.21372, ICLR 2026.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import qmc

from optiforge import validation as check
from optiforge.agents.hollm.partition import kd_partition, leaf_size
from optiforge.agents.hollm.predictors import PREDICTORS, make_predictor
from optiforge.agents.hollm.proposers import (
    PROPOSERS,
    Candidate,
    ProposalContext,
    make_proposer,
    sobol_in_box,
)
from optiforge.agents.hollm.scores import alpha_schedule, region_scores, sample_regions
from optiforge.agents.protocols import LLM
from optiforge.blackbox.space import Space

DEFAULT_PROPOSER = "gp-ts"
"""The proposer without an LLM: ahead of the others on COCO/BBOB (docs/benchmarks/bbob.md)."""

MAX_SCALE = 1e6
"""Upper bound of the real-valued settings (``m0``, ``lam``, ``alpha_*``, ...): far beyond any
useful value, and low enough that the leaf size and region scores stay finite."""


@dataclass
class HOLLMConfig:
    """HOLLM settings (``agent_options`` of a study). Defaults are the paper's.

    Attributes
    ----------
    proposer : {"llm", "sobol", "gaussian", "gp-ts", "cmaes", "mix"} or None
        ``None``: ``"llm"`` if the agent has an LLM, else ``"gp-ts"`` (best LLM-free proposer on
        COCO/BBOB; ``"sobol"`` asks about 3x faster with 1,000 observations in 20-D).
    predictor : {"llm", "gp", "forest", "random"}
    llm : str or None
        LLM backend spec, resolved by the platform (the agent itself receives an object).
    n_initial : int
        Sobol points before the tree is used (paper: 5).
    m, k, b : int
        Regions per iteration ``M`` (5), candidates per region ``k`` (5), default batch ``b`` (4).
    alpha_max, alpha_min : float
        Cosine schedule ends (1.0, 0.01).
    budget : int
        ``T`` of the schedule and of UCB-V (100).
    m0 : float or None
        Base leaf size (``None`` = ``0.5 d``); ``lam`` its growth rate (0).
    context_points, retries, temperature :
        LLM prompt size, retry rounds, sampling temperature.
    constrained : bool or None
        Decode the ``llm`` proposer's answers under the region constraint (``None``: when the
        LLM supports it; :class:`~optiforge.agents.hollm.proposers.LLMProposer`).
    gaussian_scale : float
        Step size of the ``gaussian`` proposer, as a fraction of the region's side lengths.
    """

    proposer: str | None = None
    predictor: str = "gp"
    llm: str | None = None
    n_initial: int = 5
    m: int = 5
    k: int = 5
    b: int = 4
    alpha_max: float = 1.0
    alpha_min: float = 0.01
    budget: int = 100
    m0: float | None = None
    lam: float = 0.0
    context_points: int = 40
    retries: int = 2
    temperature: float = 0.8
    constrained: bool | None = None
    gaussian_scale: float = 0.1

    def __post_init__(self) -> None:
        if self.proposer is not None and self.proposer not in PROPOSERS:
            raise ValueError(
                f"agent_options.proposer: unknown proposer {self.proposer!r}; "
                f"choose one of {', '.join(PROPOSERS)}"
            )
        if self.predictor not in PREDICTORS:
            raise ValueError(
                f"agent_options.predictor: unknown predictor {self.predictor!r}; "
                f"choose one of {', '.join(PREDICTORS)}"
            )
        if self.llm is not None and not isinstance(self.llm, str):
            raise TypeError(f"agent_options.llm: expected a backend spec string, got {self.llm!r}")
        for name, lo in (
            ("n_initial", 1),
            ("m", 1),
            ("k", 1),
            ("b", 1),
            ("budget", 1),
            ("context_points", 1),
            ("retries", 0),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                if isinstance(v, float) and v.is_integer():
                    setattr(self, name, int(v))
                    v = int(v)
                else:
                    raise TypeError(f"agent_options.{name}: expected an integer, got {v!r}")
            if v < lo:
                raise ValueError(f"agent_options.{name}: must be >= {lo}, got {v}")
        for name in ("alpha_max", "alpha_min", "lam", "temperature", "gaussian_scale"):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not math.isfinite(v)
                or v < 0
            ):
                raise ValueError(f"agent_options.{name}: expected a finite number >= 0, got {v!r}")
            if v > MAX_SCALE:
                raise ValueError(f"agent_options.{name}: must be <= {MAX_SCALE:g}, got {v!r}")
            setattr(self, name, float(v))
        if self.gaussian_scale <= 0:
            raise ValueError(
                f"agent_options.gaussian_scale: must be > 0, got {self.gaussian_scale}"
            )
        if self.constrained is not None and not isinstance(self.constrained, bool):
            raise TypeError(f"agent_options.constrained: expected true, false or null, got {self.constrained!r}")
        if self.alpha_min > self.alpha_max:
            raise ValueError(
                f"agent_options.alpha_min ({self.alpha_min}) must be <= alpha_max ({self.alpha_max})"
            )
        if self.m0 is not None:
            if (
                isinstance(self.m0, bool)
                or not isinstance(self.m0, (int, float))
                or not 1 <= self.m0 <= MAX_SCALE
            ):
                raise ValueError(
                    f"agent_options.m0: expected a number in [1, {MAX_SCALE:g}], got {self.m0!r}"
                )

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> HOLLMConfig:
        """Validate ``agent_options`` (unknown keys and bad values raise, naming the key)."""
        return check.options(cls, options)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class HOLLMAgent:
    """Ask/tell HOLLM optimizer over a :class:`~optiforge.blackbox.space.Space` (minimises).

    Parameters
    ----------
    space : Space or dict
        The search space (JSON form accepted).
    config : HOLLMConfig or dict, optional
        Settings; a dict is validated like ``agent_options``.
    llm : LLM, optional
        Text generator for the ``llm`` proposer/predictor.
    seed : int
        Seeds the Sobol design and every random choice (an ask's randomness depends only on
        the seed and the number of trials, so a rebuilt agent reproduces it).

    Examples
    --------
    >>> agent = HOLLMAgent({"x": {"type": "float", "low": -5, "high": 5}}, seed=0)
    >>> for _ in range(10):
    ...     for p in agent.ask(2):
    ...         agent.tell(p, (p["x"] - 1.0) ** 2)
    """

    def __init__(
        self,
        space: Space | Mapping[str, Any],
        config: HOLLMConfig | Mapping[str, Any] | None = None,
        llm: LLM | None = None,
        seed: int = 0,
    ) -> None:
        self.space = space if isinstance(space, Space) else Space(space)
        self.space.require_box("hollm")  # KD-tree regions live in the unit cube
        self.config = (
            config if isinstance(config, HOLLMConfig) else HOLLMConfig.from_options(config)
        )
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed: expected an integer, got {seed!r}")
        self.seed = int(seed) % (2**32)
        self.llm = llm
        proposer = self.config.proposer or ("llm" if llm is not None else DEFAULT_PROPOSER)
        llm_opts = {"context_points": self.config.context_points, "retries": self.config.retries}
        prop_opts: dict[str, Any] = {}
        if proposer == "llm":
            prop_opts = dict(llm_opts, temperature=self.config.temperature,
                             constrained=self.config.constrained)
        elif proposer == "gaussian":
            prop_opts = {"scale": self.config.gaussian_scale}
        self.proposer = make_proposer(proposer, llm, **prop_opts)
        self.predictor = make_predictor(
            self.config.predictor, llm, **(llm_opts if self.config.predictor == "llm" else {})
        )
        self.proposer_name = proposer
        self._X: list[np.ndarray] = []
        self._y: list[float] = []
        self._failed: list[np.ndarray] = []
        self._pending: list[np.ndarray] = []
        self._keys: set[bytes] = set()
        self.stats: dict[str, Any] = {}
        self.last_iteration: dict[str, Any] = {}

    # ------------------------------------------------------------------ observations
    def _keys_of(self, U: np.ndarray) -> list[bytes]:
        """Duplicate-check keys of the rows of ``U`` (one point or many): their canonical bytes."""
        return [row.tobytes() for row in self.space.canonical(U)]

    def _key(self, u: np.ndarray) -> bytes:
        return self._keys_of(u)[0]

    def tell(self, params: Mapping[str, Any], value: float | None) -> None:
        """Record an evaluation; ``value=None`` (or NaN/inf) records a failed evaluation.

        A matching pending point (from :meth:`ask`) is resolved.
        """
        u = self.space.encode(params)
        self._resolve_pending(u)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float, np.number))
        ):
            raise TypeError(f"value: expected a number or None, got {value!r}")
        if value is None or not math.isfinite(float(value)):
            self._failed.append(u)
        else:
            self._X.append(u)
            self._y.append(float(value))
        self._keys.add(self._key(u))

    def add_pending(self, params: Mapping[str, Any]) -> None:
        """Mark a point as being evaluated (e.g. a running trial from another worker)."""
        u = self.space.encode(params)
        self._pending.append(u)
        self._keys.add(self._key(u))

    def _resolve_pending(self, u: np.ndarray) -> None:
        k = self._key(u)
        for i, p in enumerate(self._pending):
            if self._key(p) == k:
                del self._pending[i]
                return

    @property
    def n_observed(self) -> int:
        return len(self._X)

    @property
    def n_total(self) -> int:
        """Evaluated + failed + pending points (the ``t`` of the schedule)."""
        return len(self._X) + len(self._failed) + len(self._pending)

    @property
    def best(self) -> tuple[dict[str, Any], float] | None:
        """``(params, value)`` of the lowest value told so far, or ``None``."""
        if not self._y:
            return None
        i = int(np.argmin(self._y))
        return self.space.decode(self._X[i]), self._y[i]

    # ------------------------------------------------------------------ asking
    def ask(self, n: int | None = None) -> list[dict[str, Any]]:
        """Propose ``n`` points (default: the config's ``b``) and mark them pending."""
        n = self.config.b if n is None else n
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n: must be a positive integer, got {n!r}")
        U = self.suggest(int(n))
        out = []
        for u in U:
            params = self.space.decode(u)
            # Pending points are stored at their decoded encoding so a later tell matches them.
            self._pending.append(self.space.encode(params))
            self._keys.add(self._key(u))
            out.append(params)
        return out

    def suggest(self, n: int) -> np.ndarray:
        """``n`` unit-cube points (no side effects)."""
        total = self.n_total
        rng = np.random.default_rng([self.seed, total])
        taken = set(self._keys)
        n_init = n if not self._X else min(n, max(0, self.config.n_initial - total))
        points: list[np.ndarray] = []
        if n_init:
            sob = qmc.Sobol(self.space.dim, scramble=True, seed=self.seed)
            if total:
                sob.fast_forward(total)
            with warnings.catch_warnings():
                # Sobol balance needs 2^k points; we index
                warnings.simplefilter("ignore", UserWarning)
                init = sob.random(n_init)
            for u in init:
                points.append(self._unique(u, taken, rng))
        if n - n_init > 0:
            points.extend(self._iterate(n - n_init, total, taken, rng))
        return np.array(points)

    def _unique(self, u: np.ndarray, taken: set[bytes], rng: np.random.Generator) -> np.ndarray:
        """``u`` if new, else a fresh uniform point (finite spaces can run out: then ``u``)."""
        for _ in range(100):
            k = self._key(u)
            if k not in taken:
                break
            u = rng.random(self.space.dim)
        taken.add(self._key(u))
        return u

    def _iterate(
        self, b: int, t: int, taken: set[bytes], rng: np.random.Generator
    ) -> list[np.ndarray]:
        cfg = self.config
        X, y = np.array(self._X), np.array(self._y)
        extra = self._failed + self._pending
        Z = np.vstack([X, *[e[None, :] for e in extra]]) if extra else X
        vals = np.concatenate([y, np.full(len(extra), y.max())]) if extra else y
        alpha = alpha_schedule(t, cfg.budget, cfg.alpha_max, cfg.alpha_min)
        m_t = leaf_size(t, self.space.dim, cfg.m0, cfg.lam)
        regions = kd_partition(Z, m_t)
        scores = region_scores(regions, vals, alpha, cfg.budget)
        chosen = sample_regions(scores["prob"], cfg.m, rng)
        picked = [regions[i] for i in chosen]
        k = max(cfg.k, math.ceil(b / len(picked)))
        ctx = ProposalContext(self.space.names, X, y, rng, self.stats)
        proposals = self.proposer.propose(picked, k, ctx)

        cands: list[Candidate] = []
        flat = [c for group in proposals for c in group]
        # One vectorised canonical() for all candidates (per-candidate calls were ~5% of an ask).
        keys = self._keys_of(np.array([c.u for c in flat])) if flat else []
        for c, key in zip(flat, keys, strict=True):
            if key in taken:
                self.stats["duplicates_dropped"] = self.stats.get("duplicates_dropped", 0) + 1
                continue
            taken.add(key)
            cands.append(c)
        if len(cands) < b:
            # Fill the shortfall from the chosen regions (then anywhere) so the ask is answered.
            need = b - len(cands)
            self.stats["filled"] = self.stats.get("filled", 0) + need
            for attempt in range(20):
                r = picked[attempt % len(picked)] if attempt < 10 else None
                lo, hi = (
                    (r.lo, r.hi)
                    if r is not None
                    else (np.zeros(self.space.dim), np.ones(self.space.dim))
                )
                for u in sobol_in_box(lo, hi, need, rng):
                    key = self._key(u)
                    if key not in taken and len(cands) < b:
                        taken.add(key)
                        cands.append(Candidate(u, -1))
                if len(cands) >= b:
                    break
            while len(cands) < b:  # finite space exhausted: repeats are unavoidable
                cands.append(Candidate(rng.random(self.space.dim), -1))
        focus = np.concatenate([r.indices for r in picked])
        pred = np.asarray(self.predictor.predict(cands, ctx, focus), dtype=float)
        pred = np.where(np.isfinite(pred), pred, np.inf)
        order = np.argsort(pred, kind="stable")[:b]
        self.last_iteration = {
            "t": t,
            "alpha": alpha,
            "leaf_size": m_t,
            "n_regions": len(regions),
            "chosen": [int(i) for i in chosen],
            "n_candidates": len(cands),
            "predicted": [float(pred[i]) for i in order],
        }
        return [cands[i].u for i in order]

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """JSON-able state: config, seed and all observations (unit-cube coordinates)."""
        return {
            "space": self.space.to_dict(),
            "config": self.config.to_dict(),
            "seed": self.seed,
            "X": [u.tolist() for u in self._X],
            "y": list(self._y),
            "failed": [u.tolist() for u in self._failed],
            "pending": [u.tolist() for u in self._pending],
            "stats": dict(self.stats),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore observations saved by :meth:`state_dict` (the space must match)."""
        if Space(state["space"]) != self.space:
            raise ValueError("state: saved for a different search space")
        self.seed = int(state["seed"])
        self._X = [np.asarray(u, dtype=float) for u in state["X"]]
        self._y = [float(v) for v in state["y"]]
        self._failed = [np.asarray(u, dtype=float) for u in state["failed"]]
        self._pending = [np.asarray(u, dtype=float) for u in state["pending"]]
        self._keys = {self._key(u) for u in (*self._X, *self._failed, *self._pending)}
        self.stats = dict(state.get("stats", {}))
