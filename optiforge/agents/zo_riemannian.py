"""Zeroth-order Riemannian SGD as an ask/tell black-box agent (``zo-riemannian``).

Adapts :class:`~optiforge.blackbox.riemannian.ZORiemannianSGD` to
:class:`~optiforge.agents.protocols.BlackboxAgent`: the search space is one product manifold
(:class:`~optiforge.blackbox.riemannian.SpaceManifold`: simplex, sphere and spd parameters,
and float parameters as open intervals with the structure-preserving barrier metric), and
each step asks for the two points ``R_p(+mu v)`` and ``R_p(-mu v)`` of each of its
``directions``. The step is taken once every opened direction has both values (or failed).

Resume without saved state: an ask is a deterministic function of the seed and of the values
told so far, and a told point is matched to the direction that produced it (direction ``j`` of
step ``t`` comes from ``(seed, t, j)``), so a study replaying its stored trials into a fresh
agent (running ones as pending) reproduces the run. A step advances lazily, when the next ask
or a point of the next step arrives, so extra directions opened by parallel askers replay in
the order they were asked. Points the agent did not propose (``add_trial``) are ignored by
the descent (the study still ranks them).

References
----------
.. [1] S. Ma and H. Huang, arXiv:2601.08039, ICLR 2026 (see
   :mod:`optiforge.blackbox.riemannian.sgd`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from optiforge import validation as check
from optiforge.blackbox.riemannian import (
    SAMPLERS,
    SCHEDULES,
    ConformalBarrier,
    Probe,
    Schedule,
    SpaceManifold,
    ZORiemannianSGD,
)
from optiforge.blackbox.space import Space

MAX_SCALE = 1e6
"""Upper bound of ``eta`` and ``mu``."""
NEW, OUT, DONE = "new", "out", "done"


@dataclass
class ZORiemannianConfig:
    """Settings of the ``zo-riemannian`` agent (its ``agent_options``).

    Attributes
    ----------
    budget : int
        Evaluations planned; the horizon of Thm 2.9 is ``T = budget // (2 * directions)``
        steps (a campaign sets it to its budget).
    eta, mu : float
        Step-size and smoothing multipliers (``"theorem"``) or values (``"constant"``).
    schedule : {"theorem", "constant"}
    sampler : {"alg1", "alg1-rejection", "naive"}
    directions : int
        Directions per step (a step asks ``2 * directions`` points).
    barrier : float
        ``c`` of the barrier metric ``h = 1 + c sum p_i^-2`` on simplex and float factors
        (safe radius ``sqrt(c)``).
    """

    budget: int = 200
    eta: float = 1.0
    mu: float = 1.0
    schedule: str = "theorem"
    sampler: str = "alg1"
    directions: int = 1
    barrier: float = 0.01

    def __post_init__(self) -> None:
        self.budget = check.integer(self.budget, "agent_options.budget", minimum=2)
        self.directions = check.integer(self.directions, "agent_options.directions", minimum=1,
                                        maximum=1000)
        for key in ("eta", "mu", "barrier"):
            v = check.real(getattr(self, key), f"agent_options.{key}", maximum=MAX_SCALE)
            if v <= 0:  # type: ignore[operator]
                raise ValueError(f"agent_options.{key}: must be > 0, got {v}")
            setattr(self, key, float(v))  # type: ignore[arg-type]
        check.choice(self.schedule, "agent_options.schedule", SCHEDULES)
        check.choice(self.sampler, "agent_options.sampler", SAMPLERS)

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> ZORiemannianConfig:
        """Validate ``agent_options`` (unknown keys and bad values raise, naming the key)."""
        return check.options(cls, options)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _key(params: Mapping[str, Any]) -> tuple:
    """Identity of a point: every coordinate at 12 significant digits (JSON-stable)."""
    return tuple((n, tuple(f"{x:.12g}" for x in np.asarray(v, dtype=float).reshape(-1)))
                 for n, v in sorted(params.items()))


@dataclass
class _Slot:
    params: dict[str, Any]
    key: tuple
    state: str = NEW


class _Direction:
    """One probe of the current step with its two slots (+mu v, -mu v)."""

    def __init__(self, probe: Probe, adapter: SpaceManifold) -> None:
        self.probe = probe
        self.slots = [self._slot(probe.plus, adapter), self._slot(probe.minus, adapter)]

    @staticmethod
    def _slot(x: np.ndarray, adapter: SpaceManifold) -> _Slot:
        params = adapter.to_params(x)
        return _Slot(params, _key(params))

    @property
    def done(self) -> bool:
        return self.probe.done


class ZORiemannianAgent:
    """Ask/tell zeroth-order Riemannian SGD over a :class:`~optiforge.blackbox.space.Space`.

    Parameters
    ----------
    space : Space or dict
        Float (no ``step``), simplex, sphere and spd parameters.
    config : ZORiemannianConfig or dict, optional
    seed : int
        Seeds the start (a random point of the space) and every direction.

    Raises
    ------
    ValueError
        A parameter without a tangent space (int, categorical, float grid), naming it.
    """

    def __init__(self, space: Space | Mapping[str, Any],
                 config: ZORiemannianConfig | Mapping[str, Any] | None = None, seed: int = 0) -> None:
        self.space = space if isinstance(space, Space) else Space(space)
        self.config = config if isinstance(config, ZORiemannianConfig) else ZORiemannianConfig.from_options(config)
        self.seed = check.integer(seed, "seed", minimum=0) % 2**32
        cfg = self.config
        self.adapter = SpaceManifold(self.space, ConformalBarrier(cfg.barrier))
        m = self.adapter.manifold
        start = self.space.sample(np.random.default_rng([self.seed, 2**31]))[0]
        horizon = max(1, cfg.budget // (2 * cfg.directions))
        schedule = Schedule(cfg.eta, cfg.mu, cfg.schedule, horizon, m.dim, m.radius)
        self.opt = ZORiemannianSGD(m, self.adapter.to_point(start), schedule, cfg.sampler, self.seed)
        self._dirs: list[_Direction] = []
        self.n_unmatched = 0

    # ------------------------------------------------------------------ steps
    @property
    def step_index(self) -> int:
        """``t``: steps taken."""
        return self.opt.t

    @property
    def x(self) -> dict[str, Any]:
        """The current iterate as an assignment."""
        return self.adapter.to_params(self.opt.x)

    def _complete(self) -> bool:
        return len(self._dirs) >= self.config.directions and all(d.done for d in self._dirs)

    def _advance(self) -> None:
        self.opt.step([d.probe for d in self._dirs])
        self._dirs = []

    def _open(self) -> _Direction:
        return _Direction(self.opt.probe(len(self._dirs)), self.adapter)

    def _find(self, key: tuple) -> tuple[_Direction, int] | None:
        for d in self._dirs:
            for i, s in enumerate(d.slots):
                if s.key == key:
                    return d, i
        return None

    def _match(self, params: Mapping[str, Any]) -> tuple[_Direction, int] | None:
        """The slot a point belongs to: this step's, its next direction's, or the next step's."""
        key = _key(params)
        hit = self._find(key)
        if hit is not None:
            return hit
        for _ in range(2):
            d = self._open()
            for i, s in enumerate(d.slots):
                if s.key == key:
                    self._dirs.append(d)
                    return d, i
            if not self._complete():
                return None
            self._advance()  # the next ask would advance too: same state either way
        return None

    # ------------------------------------------------------------------ protocol
    def ask(self, n: int) -> list[dict[str, Any]]:
        """The next ``n`` probe points (the current step's, then extra directions)."""
        n = check.integer(n, "n", minimum=1)
        out: list[dict[str, Any]] = []
        while len(out) < n:
            if self._complete():
                self._advance()
            slot = next((s for d in self._dirs if not d.done for s in d.slots if s.state == NEW), None)
            if slot is None:
                d = self._open()
                self._dirs.append(d)
                slot = d.slots[0]
            slot.state = OUT
            out.append(dict(slot.params))
        return out

    def tell(self, params: Mapping[str, Any], value: float | None) -> None:
        hit = self._match(params)
        if hit is None:
            self.n_unmatched += 1
            return
        d, i = hit
        d.slots[i].state = DONE
        if d.probe.failed:
            return
        if value is None or not math.isfinite(float(value)):
            d.probe.failed = True
        elif i == 0:
            d.probe.f_plus = float(value)
        else:
            d.probe.f_minus = float(value)

    def add_pending(self, params: Mapping[str, Any]) -> None:
        hit = self._match(params)
        if hit is not None and hit[0].slots[hit[1]].state == NEW:
            hit[0].slots[hit[1]].state = OUT

    def state_dict(self) -> dict[str, Any]:
        return {"t": self.opt.t, "x": self.opt.x.tolist(), "unmatched": self.n_unmatched,
                "directions": [{"slots": [s.state for s in d.slots], "f_plus": d.probe.f_plus,
                                "f_minus": d.probe.f_minus, "failed": d.probe.failed}
                               for d in self._dirs]}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.opt.t = int(state["t"])
        self.opt.x = np.asarray(state["x"], dtype=float)
        self.n_unmatched = int(state.get("unmatched", 0))
        self._dirs = []
        for rec in state["directions"]:
            d = self._open()
            for s, st in zip(d.slots, rec["slots"], strict=True):
                s.state = str(st)
            d.probe.f_plus, d.probe.f_minus = rec["f_plus"], rec["f_minus"]
            d.probe.failed = bool(rec["failed"])
            self._dirs.append(d)
