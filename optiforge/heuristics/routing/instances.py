"""TSPTW and TSPDL instances: the generators of PIP [1]_ (as LMask [2]_ uses them), seeded, as ``.npz``.

Size convention (PIP, LMask): ``n`` counts the depot, so "n = 50" is the depot and 49 customers.
Node 0 is the depot. Travel time is the Euclidean distance; service time is 0.

TSPTW (coordinates and windows divided by 100 afterwards):

* **easy / medium** (the JAMPR generator): coordinates ~ U[0, 100]^2, ``T = 55 n``,
  window start ``e_i ~ randint(0, T)``, end ``l_i = min(e_i + round(T eps), 2T)`` with
  ``eps ~ U[alpha, beta]`` (easy 0.5-0.75, medium 0.1-0.2). Not feasible by construction.
* **hard** (Da Silva & Urrutia / Cappart): a random permutation from the depot, ``psi_i`` the
  cumulative distance along it, ``e_i ~ U[psi_i - 50, psi_i]`` (clamped at 0),
  ``l_i ~ U[psi_i, psi_i + 50]``. Feasible by construction (the permutation itself).
* The depot opens at 0 and closes at ``max_i(l_i + d_i0)``, so returning is never the binding
  constraint of a tour whose customers are on time.

TSPDL (draft limits): coordinates ~ U[0, 1]^2, demand 0 at the depot and 1 elsewhere
(``S = n - 1`` in all), every draft limit first ``S``; for ``floor(n sigma / 100)`` customers
(sigma = 75 medium, 90 hard) drawn without replacement, ``dl ~ randint(1, S)`` (upper bound
excluded, as numpy's and torch's ``randint``), redrawn until at most ``v`` customers have a
limit ``<= v`` for every ``v`` (then visiting customers by increasing limit is feasible).
Demand and drafts are divided by ``S``. Deviation: where ``floor(n sigma / 100)`` would limit every
customer (hard, n <= 10) one customer keeps ``S``, else no draw is ever accepted.

References
----------
.. [1] J. Bi et al., "Learning to Handle Complex Constraints for Vehicle Routing Problems"
   (PIP), NeurIPS 2024, appendix A; code ``jieyibi/PIP-constraint`` (``TSPTWEnv``, ``TSPDLEnv``).
.. [2] T. Li, H. Zou, J. Wu, Z. Wen, "Learn to Solve Constrained Routing Problems with Lazy
   Masking" (LMask), ICLR 2026, arXiv:2505.17938.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

PROBLEMS = ("tsptw", "tspdl")
HARDNESS: dict[str, tuple[str, ...]] = {"tsptw": ("easy", "medium", "hard"), "tspdl": ("medium", "hard")}
SIZES = (20, 50, 100)
SPLIT_SIZES = {"train": 1024, "validation": 128, "test": 1000}
"""Instances per fixed split (training draws fresh instances; this set is for reproducibility)."""

_TW_EPS = {"easy": (0.5, 0.75), "medium": (0.1, 0.2)}
_HARD_HALF_WIDTH = 50.0
_DL_SIGMA = {"medium": 75, "hard": 90}
_SPLIT_SEED = {"train": 11_000, "validation": 12_000, "test": 13_000}


@dataclass(frozen=True)
class RoutingInstances:
    """A batch of TSPTW or TSPDL instances of one size (node 0 is the depot).

    Attributes
    ----------
    problem : str
        ``"tsptw"`` or ``"tspdl"``.
    hardness : str
        The generator's level (``easy`` / ``medium`` / ``hard``), or ``"custom"``.
    coords : numpy.ndarray
        ``(B, n, 2)`` coordinates (normalised).
    tw_start, tw_end : numpy.ndarray or None
        ``(B, n)`` time windows (TSPTW): waiting for ``tw_start`` is allowed, arriving after
        ``tw_end`` is infeasible.
    demand, draft : numpy.ndarray or None
        ``(B, n)`` demands and draft limits (TSPDL): the load carried into node ``j`` plus
        ``demand[j]`` must not exceed ``draft[j]``.
    """

    problem: str
    hardness: str
    coords: np.ndarray
    tw_start: np.ndarray | None = None
    tw_end: np.ndarray | None = None
    demand: np.ndarray | None = None
    draft: np.ndarray | None = None
    _dist: list[np.ndarray] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.problem not in PROBLEMS:
            raise ValueError(f"problem: expected one of {', '.join(PROBLEMS)}, got {self.problem!r}")
        coords = np.asarray(self.coords, dtype=np.float64)
        if coords.ndim != 3 or coords.shape[2] != 2 or coords.shape[1] < 2:
            raise ValueError(f"coords: expected shape (B, n, 2) with n >= 2, got {coords.shape}")
        need = ("tw_start", "tw_end") if self.problem == "tsptw" else ("demand", "draft")
        for name in need:
            value = getattr(self, name)
            if value is None:
                raise ValueError(f"{name}: required for {self.problem}")
            arr = np.asarray(value, dtype=np.float64)
            if arr.shape != coords.shape[:2]:
                raise ValueError(f"{name}: expected shape {coords.shape[:2]}, got {arr.shape}")
            if not np.isfinite(arr).all():
                raise ValueError(f"{name}: must be finite")
            object.__setattr__(self, name, arr)
        if not np.isfinite(coords).all():
            raise ValueError("coords: must be finite")
        object.__setattr__(self, "coords", coords)

    @property
    def size(self) -> int:
        """Number of instances ``B``."""
        return int(self.coords.shape[0])

    @property
    def n(self) -> int:
        """Nodes per instance, depot included."""
        return int(self.coords.shape[1])

    def distances(self) -> np.ndarray:
        """``(B, n, n)`` Euclidean distance matrices (computed once)."""
        if not self._dist:
            diff = self.coords[:, :, None, :] - self.coords[:, None, :, :]
            self._dist.append(np.sqrt((diff**2).sum(-1)))
        return self._dist[0]

    def subset(self, index: slice | np.ndarray) -> RoutingInstances:
        """The instances selected by ``index`` (a slice or an index array)."""
        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[index]
        return RoutingInstances(self.problem, self.hardness, self.coords[index], pick(self.tw_start),
                                pick(self.tw_end), pick(self.demand), pick(self.draft))

    def save(self, path: str | Path) -> None:
        """Write the instances to ``path`` (``.npz``)."""
        arrays = {k: getattr(self, k) for k in ("coords", "tw_start", "tw_end", "demand", "draft")
                  if getattr(self, k) is not None}
        np.savez_compressed(path, problem=np.array(self.problem), hardness=np.array(self.hardness), **arrays)


def load_instances(path: str | Path) -> RoutingInstances:
    """Read instances written by :meth:`RoutingInstances.save`.

    Raises
    ------
    ValueError
        If the file is missing, not an ``.npz`` of routing instances, or its arrays have the
        wrong shapes.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"instances: no such file {str(path)!r}")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise ValueError(f"instances: {str(path)!r} is not a readable .npz file ({exc})") from exc
    if "problem" not in arrays or "coords" not in arrays:
        raise ValueError(f"instances: {str(path)!r} holds no routing instances (no 'problem'/'coords')")
    problem = str(arrays.pop("problem"))
    hardness = str(arrays.pop("hardness", "custom"))
    try:
        return RoutingInstances(problem, hardness, **arrays)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"instances: {str(path)!r}: {exc}") from exc


def _check(problem: str, hardness: str, n: int, count: int) -> None:
    if problem not in PROBLEMS:
        raise ValueError(f"problem: expected one of {', '.join(PROBLEMS)}, got {problem!r}")
    if hardness not in HARDNESS[problem]:
        raise ValueError(f"hardness: {problem} has {', '.join(HARDNESS[problem])}, got {hardness!r}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 3:
        raise ValueError(f"n: expected an int >= 3 (nodes, depot included), got {n!r}")
    if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 1:
        raise ValueError(f"count: expected an int >= 1, got {count!r}")


def generate(problem: str, hardness: str, n: int, count: int, seed: int = 0) -> RoutingInstances:
    """Draw ``count`` instances of ``n`` nodes (depot included) with PIP's generator.

    Parameters
    ----------
    problem : str
        ``"tsptw"`` or ``"tspdl"``.
    hardness : str
        TSPTW: ``easy``, ``medium`` or ``hard``; TSPDL: ``medium`` or ``hard``.
    n : int
        Nodes per instance, the depot included (>= 3).
    count : int
        Number of instances.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    RoutingInstances
    """
    _check(problem, hardness, n, count)
    rng = np.random.default_rng(seed)
    if problem == "tsptw":
        return _tsptw(rng, hardness, int(n), int(count))
    return _tspdl(rng, hardness, int(n), int(count))


def _tsptw(rng: np.random.Generator, hardness: str, n: int, count: int) -> RoutingInstances:
    coords = rng.uniform(0.0, 100.0, size=(count, n, 2))
    if hardness == "hard":
        order = np.argsort(rng.random((count, n - 1)), axis=1) + 1
        order = np.concatenate([np.zeros((count, 1), dtype=np.int64), order], axis=1)
        path = np.take_along_axis(coords, order[:, :, None], axis=1)
        legs = np.sqrt(((path[:, 1:] - path[:, :-1]) ** 2).sum(-1))
        psi_path = np.concatenate([np.zeros((count, 1)), np.cumsum(legs, axis=1)], axis=1)
        psi = np.empty_like(psi_path)
        np.put_along_axis(psi, order, psi_path, axis=1)
        start = np.maximum(rng.uniform(psi - _HARD_HALF_WIDTH, psi), 0.0)
        end = rng.uniform(psi, psi + _HARD_HALF_WIDTH)
    else:
        horizon = 55.0 * n
        lo, hi = _TW_EPS[hardness]
        start = rng.integers(0, int(horizon), size=(count, n)).astype(np.float64)
        eps = rng.uniform(lo, hi, size=(count, n))
        end = np.minimum(start + np.round(horizon * eps), 2.0 * horizon)
    coords, start, end = coords / 100.0, start / 100.0, end / 100.0
    start[:, 0] = 0.0
    back = np.sqrt(((coords[:, 1:] - coords[:, :1]) ** 2).sum(-1))
    end[:, 0] = (end[:, 1:] + back).max(axis=1)
    return RoutingInstances("tsptw", hardness, coords, tw_start=start, tw_end=end)


def _tspdl(rng: np.random.Generator, hardness: str, n: int, count: int) -> RoutingInstances:
    total = n - 1
    coords = rng.uniform(0.0, 1.0, size=(count, n, 2))
    demand = np.ones((count, n))
    demand[:, 0] = 0.0
    # With every customer limited below S no order is feasible (the draws exclude S), so at
    # tiny n (floor(n sigma / 100) = n - 1, e.g. hard n <= 10) one customer keeps the limit S.
    k = min(n * _DL_SIGMA[hardness] // 100, total - 1)
    draft = np.full((count, n), float(total))
    todo = np.arange(count)
    # Rejection sampling, vectorised: redraw every instance whose limits admit no feasible order.
    while todo.size:
        limits = np.full((todo.size, total), total, dtype=np.int64)
        picks = np.argsort(rng.random((todo.size, total)), axis=1)[:, :k]
        np.put_along_axis(limits, picks, rng.integers(1, total, size=(todo.size, k)), axis=1)
        counts = np.zeros((todo.size, total + 1), dtype=np.int64)
        np.add.at(counts, (np.repeat(np.arange(todo.size), total), limits.ravel()), 1)
        ok = (np.cumsum(counts, axis=1) <= np.arange(total + 1)).all(axis=1)
        draft[todo[ok], 1:] = limits[ok]
        todo = todo[~ok]
    return RoutingInstances("tspdl", hardness, coords, demand=demand / total, draft=draft / total)


@cache
def fixed_set(problem: str, hardness: str, n: int, split: str) -> RoutingInstances:
    """The fixed ``split`` (train / validation / test) for one problem, hardness and size.

    Sizes: :data:`SPLIT_SIZES`; seeds differ per split, problem, hardness and ``n``, so the
    sets never overlap by construction.
    """
    if split not in SPLIT_SIZES:
        raise ValueError(f"split: expected one of {', '.join(SPLIT_SIZES)}, got {split!r}")
    _check(problem, hardness, n, 1)
    seed = (_SPLIT_SEED[split] + 100 * PROBLEMS.index(problem)
            + 10 * HARDNESS[problem].index(hardness)) * 1000 + int(n)
    return generate(problem, hardness, n, SPLIT_SIZES[split], seed=seed)
