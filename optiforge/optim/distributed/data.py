"""Data for distributed training: a dataset container, Dirichlet(α) partitions, a synthetic task.

Non-IID partitions follow Hsu, Qi & Brown ("Measuring the effects of non-identical data
distribution for federated visual classification", arXiv 1909.06335), as used by both papers
of this package: for every class, the class's samples are split among the ``m`` agents in
proportions drawn from ``Dirichlet(alpha 1_m)``. Small ``alpha`` (0.1) gives each agent one or
two dominant classes; ``alpha -> inf`` approaches an IID split.

Deviation (common practice, e.g. NIID-Bench): the draw is repeated until every agent holds at
least ``min_size`` samples, so no agent is left without data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optiforge import validation as check


@dataclass
class Dataset:
    """A classification data set: float32 features, int64 labels, a train and a test split."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int

    @property
    def n_features(self) -> int:
        return int(self.x_train.shape[1])


def dirichlet_partition(labels: np.ndarray, n_agents: int, alpha: float,
                        rng: np.random.Generator, *, min_size: int = 2,
                        max_tries: int = 1000) -> list[np.ndarray]:
    """Split sample indices among ``n_agents`` with per-class ``Dirichlet(alpha)`` proportions.

    Parameters
    ----------
    labels : np.ndarray
        Integer class of each sample.
    n_agents : int
        Number of agents (clients).
    alpha : float
        Concentration; ``float("inf")`` gives an IID split (each class dealt evenly).
    rng : np.random.Generator
        Source of randomness.
    min_size : int
        Redraw until every agent has at least this many samples.

    Returns
    -------
    list of np.ndarray
        Sorted sample indices of each agent; together a partition of ``range(len(labels))``.
    """
    labels = np.asarray(labels)
    check.integer(n_agents, "agents", minimum=1)
    if not (isinstance(alpha, (int, float)) and alpha > 0):
        raise ValueError(f"alpha: must be > 0, got {check.shown(alpha)}")
    if n_agents * min_size > len(labels):
        raise ValueError(f"agents: {n_agents} agents need at least {n_agents * min_size} samples, "
                         f"the data has {len(labels)}")
    classes = np.unique(labels)
    for _ in range(max_tries):
        parts: list[list[np.ndarray]] = [[] for _ in range(n_agents)]
        for c in classes:
            idx = rng.permutation(np.flatnonzero(labels == c))
            if np.isinf(alpha):
                props = np.full(n_agents, 1.0 / n_agents)
            else:
                props = rng.dirichlet(np.full(n_agents, float(alpha)))
            cuts = np.rint(np.cumsum(props)[:-1] * len(idx)).astype(int)  # rint: 0.7 * 100 is 69.99...
            for agent, chunk in enumerate(np.split(idx, cuts)):
                parts[agent].append(chunk)
        shards = [np.sort(np.concatenate(p)) for p in parts]
        if min(len(s) for s in shards) >= min_size:
            return shards
    raise ValueError(f"alpha: no Dirichlet({alpha}) split gave every one of {n_agents} agents "
                     f"{min_size} samples in {max_tries} draws; use fewer agents or a larger alpha")


def synthetic_classification(n_train: int = 2000, n_test: int = 500, n_features: int = 20,
                             n_classes: int = 10, seed: int = 0) -> Dataset:
    """A seeded, non-linearly separable classification task generated in-project.

    Each class is a mixture of two Gaussian blobs around random centres; the features are then
    passed through a fixed random ``tanh`` layer, so a linear model is not enough.
    """
    check.integer(n_train, "n_train", minimum=n_classes)
    check.integer(n_test, "n_test", minimum=1)
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 1.6, size=(n_classes, 2, n_features))
    mix = rng.normal(0.0, 1.0 / np.sqrt(n_features), size=(n_features, n_features))

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, n_classes, size=n)
        blob = rng.integers(0, 2, size=n)
        z = centres[y, blob] + rng.normal(size=(n, n_features))
        x = np.tanh(z @ mix) * 2.0
        return x.astype(np.float32), y.astype(np.int64)

    x_train, y_train = draw(n_train)
    x_test, y_test = draw(n_test)
    return Dataset("synthetic", x_train, y_train, x_test, y_test, n_classes)
