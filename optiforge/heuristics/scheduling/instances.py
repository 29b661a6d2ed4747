"""Workload instances: Poisson workflow arrivals with deadlines, and the fixed train / test sets.

An instance is a stream of workflows arriving as a Poisson process (lambda = 0.01 /s, i.e.
exponential gaps with mean 100 s), each of a type drawn uniformly from the four, in the
sizes of the scale, and a deadline coefficient gamma: workflow ``i`` is due at
``a_i + gamma * CP_i / 48``, its critical path on the fastest (48-vCPU) VM [1]_.

Fixed sets (seeded, identical in every process):

* ``test``: 30 instances of 30 workflows per (scale, gamma), seed 42 (GATES' test set);
* ``train``: scale S, instances of 10 workflows (DEFT pre-trains experts on 10-workflow
  instances), one seed stream per gamma.

References
----------
.. [1] Y. Shen, G. Chen, H. Ma, M. Zhang, "Deft Scheduling of Dynamic Cloud Workflows with Varying
   Deadlines via Mixture-of-Experts", ICLR 2026 (arXiv 2606.01162).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from optiforge.heuristics.scheduling.workflows import SCALES, WORKFLOW_TYPES, Workflow, template

ARRIVAL_RATE = 0.01
"""Workflows per second (lambda)."""
EXPERT_GAMMAS = (1.25, 1.75, 2.25, 5.0)
"""Deadline coefficients of DEFT's four experts (stage 1)."""
TEST_GAMMAS = (1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 3.0)
"""Deadline coefficients of stage 2 and of the test sets."""
TEST_INSTANCES = 30
WORKFLOWS_PER_TEST_INSTANCE = 30
WORKFLOWS_PER_TRAIN_INSTANCE = 10
TEST_SEED = 42


@dataclass(frozen=True)
class Instance:
    """One workload: workflows with arrival times and a deadline coefficient.

    Attributes
    ----------
    workflows : tuple of Workflow
        In arrival order.
    arrivals : np.ndarray
        Arrival time of each workflow in seconds (non-decreasing).
    gamma : float
        Deadline coefficient (> 0).
    """

    workflows: tuple[Workflow, ...]
    arrivals: np.ndarray
    gamma: float

    def __post_init__(self) -> None:
        if len(self.workflows) != len(self.arrivals):
            raise ValueError("arrivals: need one arrival time per workflow")
        if len(self.arrivals) and np.any(np.diff(self.arrivals) < 0):
            raise ValueError("arrivals: must be non-decreasing")
        if not np.isfinite(self.gamma) or self.gamma <= 0:
            raise ValueError(f"gamma: must be a positive number, got {self.gamma!r}")

    @property
    def n_tasks(self) -> int:
        return sum(w.n_tasks for w in self.workflows)


def check_scale(scale: str) -> str:
    if scale not in SCALES:
        raise ValueError(f"scale: unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    return scale


def check_gamma(gamma: float) -> float:
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not np.isfinite(gamma) or gamma <= 0:
        raise ValueError(f"gamma: must be a positive number, got {gamma!r}")
    return float(gamma)


def make_instance(scale: str, gamma: float, n_workflows: int, seed: int,
                  rate: float = ARRIVAL_RATE) -> Instance:
    """Draw one instance: Poisson arrivals, uniform workflow types, the scale's sizes.

    Raises
    ------
    ValueError
        If ``scale`` is unknown, ``gamma`` or ``rate`` not positive, or ``n_workflows`` < 1.
    """
    check_scale(scale)
    gamma = check_gamma(gamma)
    if isinstance(n_workflows, bool) or not isinstance(n_workflows, (int, np.integer)) or n_workflows < 1:
        raise ValueError(f"n_workflows: must be an integer >= 1, got {n_workflows!r}")
    if not rate > 0:
        raise ValueError(f"rate: must be positive, got {rate!r}")
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate, size=n_workflows))
    kinds = rng.integers(0, len(WORKFLOW_TYPES), size=n_workflows)
    wfs = tuple(template(WORKFLOW_TYPES[k], SCALES[scale][WORKFLOW_TYPES[k]]) for k in kinds)
    return Instance(workflows=wfs, arrivals=arrivals, gamma=gamma)


def _seed(*parts: float | str) -> int:
    # A stable integer from the set's coordinates (hash() is salted per process).
    return zlib.crc32(repr(parts).encode())


def holdout_instances(scale: str, gamma: float, n: int = TEST_INSTANCES,
             n_workflows: int = WORKFLOWS_PER_TEST_INSTANCE) -> list[Instance]:
    """The fixed test instances of (``scale``, ``gamma``): seed 42, the same in every process."""
    check_scale(scale)
    rng = np.random.default_rng([TEST_SEED, _seed(scale, float(check_gamma(gamma))) ])
    seeds = rng.integers(0, 2**31, size=n)
    return [make_instance(scale, gamma, n_workflows, int(s)) for s in seeds]


def train_instances(gamma: float, n: int, n_workflows: int = WORKFLOWS_PER_TRAIN_INSTANCE,
              scale: str = "S", offset: int = 0) -> list[Instance]:
    """``n`` training instances at ``gamma`` (scale S by default), disjoint from the test sets.

    ``offset`` selects a later block of the same stream (e.g. a new batch per ES generation).
    """
    rng = np.random.default_rng([7, _seed(scale, float(check_gamma(gamma))) % 2**32, int(offset)])
    seeds = rng.integers(0, 2**31, size=n)
    return [make_instance(scale, gamma, n_workflows, int(s)) for s in seeds]
