"""Random search as a :class:`~optiforge.agents.protocols.BlackboxAgent` (the baseline)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from optiforge.blackbox.space import Space


class RandomSearchAgent:
    """Uniform random points from the space (log-uniform where a parameter says so).

    Parameters
    ----------
    space : Space
        The search space.
    seed : int
        An ask's points depend only on the seed and on how many trials exist (told, failed
        and pending), so a rebuilt agent, or another process replaying the same trials,
        proposes the same points.
    """

    def __init__(self, space: Space, seed: int = 0) -> None:
        self.space = space
        self.seed = int(seed) % (2**32)
        self._pending: list[str] = []
        self._finished = 0

    def _key(self, params: Mapping[str, Any]) -> str:
        return repr(self.space.key(params))

    @property
    def n_total(self) -> int:
        """Told, failed and pending points."""
        return self._finished + len(self._pending)

    def ask(self, n: int) -> list[dict[str, Any]]:
        rng = np.random.default_rng([self.seed, self.n_total])
        points = self.space.sample(rng, int(n))
        self._pending.extend(self._key(p) for p in points)
        return points

    def tell(self, params: Mapping[str, Any], value: float | None) -> None:
        key = self._key(params)
        if key in self._pending:
            self._pending.remove(key)
        self._finished += 1

    def add_pending(self, params: Mapping[str, Any]) -> None:
        self._pending.append(self._key(params))

    def state_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "finished": self._finished,
                "pending": list(self._pending)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.seed = int(state["seed"])
        self._finished = int(state["finished"])
        self._pending = [str(k) for k in state["pending"]]
