"""When to communicate: windows placed early, late or uniformly at an equal budget.

A :class:`Schedule` says, for every round of decentralized training, which topology mixes the
agents: the ``base`` topology (e.g. random gossip at rate ``R``) in ordinary rounds, the
``window`` topology (a full all-reduce by default) in the rounds of the communication windows,
and optionally one global merge after the last round.

The windows hold ``budget`` of the rounds (``round(budget * rounds)``, at least one when
``budget > 0``) whatever their placement, so early, late and uniform schedules spend the same
communication; only *when* differs:

- ``early``: the first rounds;
- ``late``: the last rounds (or from ``start``, a fraction of training: the paper's Fig. 2
  window starts at 0.9 and covers 0.05 of training);
- ``uniform``: spread evenly over training (round ``floor((j + 1/2) rounds / n)``, ``j < n``).

Zhu et al. (ICLR 2026, arXiv 2507.06542) find late windows beat early ones at an equal budget,
and that a single global merge after decentralized training lifts the merged model to about
the accuracy of (federated / parallel) training with full communication.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optiforge import validation as check

from .topology import AllReduce, NoCommunication, Topology

PLACEMENTS = ("early", "late", "uniform")


@dataclass(frozen=True)
class Windows:
    """``budget`` of the rounds, placed ``early``, ``late`` or ``uniform``.

    ``start`` (a fraction of training in ``[0, 1)``) overrides the placement's first round
    for consecutive windows (``early``/``late``).
    """

    placement: str = "late"
    budget: float = 0.1
    start: float | None = None

    def __post_init__(self) -> None:
        check.choice(self.placement, "placement", PLACEMENTS)
        check.unit(self.budget, "budget", closed=True)
        if self.start is not None:
            check.unit(self.start, "start")
            if self.placement == "uniform":
                raise ValueError("start: applies to early/late windows, not uniform ones")

    def count(self, rounds: int) -> int:
        """Rounds in windows out of ``rounds``: the same for every placement."""
        if self.budget == 0.0:
            return 0
        return min(rounds, max(1, round(self.budget * rounds)))

    def rounds(self, rounds: int) -> list[int]:
        """The (0-based, sorted) rounds that fall in a window."""
        n = self.count(rounds)
        if n == 0:
            return []
        if self.placement == "uniform":
            return [int((j + 0.5) * rounds / n) for j in range(n)]
        if self.start is not None:
            first = min(int(self.start * rounds), rounds - n)
        else:
            first = 0 if self.placement == "early" else rounds - n
        return list(range(first, first + n))


@dataclass(frozen=True)
class Schedule:
    """The topology of every round, and whether one global merge follows the last.

    Parameters
    ----------
    base : Topology
        Mixing in ordinary rounds (``NoCommunication()`` for local training only).
    windows : Windows, optional
        Rounds where ``window`` replaces ``base``.
    window : Topology
        Mixing inside the windows (``AllReduce()``: the paper's full all-reduce windows).
    final_merge : bool
        After the last round, every agent takes the global average (one all-reduce).
    """

    base: Topology = field(default_factory=NoCommunication)
    windows: Windows | None = None
    window: Topology = field(default_factory=AllReduce)
    final_merge: bool = True

    def __post_init__(self) -> None:
        for name in ("base", "window"):
            if not isinstance(getattr(self, name), Topology):
                raise TypeError(f"{name}: expected a Topology, got {type(getattr(self, name)).__name__}")
        if self.windows is not None and not isinstance(self.windows, Windows):
            raise TypeError(f"windows: expected Windows, got {type(self.windows).__name__}")
        check.boolean(self.final_merge, "final_merge")

    def plan(self, rounds: int) -> list[Topology]:
        """The topology of each of ``rounds`` rounds."""
        in_window = set(self.windows.rounds(rounds)) if self.windows is not None else set()
        return [self.window if t in in_window else self.base for t in range(rounds)]
