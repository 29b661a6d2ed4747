"""Dirichlet(α) partitions: a partition of the data; small α concentrates classes."""

import numpy as np
import pytest

from optiforge.optim.distributed import dirichlet_partition, synthetic_classification


def _labels() -> np.ndarray:
    return np.repeat(np.arange(10), 100)


def _class_entropy(labels, shards) -> float:
    ent = []
    for s in shards:
        p = np.bincount(labels[s], minlength=10) / len(s)
        p = p[p > 0]
        ent.append(-(p * np.log(p)).sum())
    return float(np.mean(ent))


def test_partition_covers_every_sample_once():
    labels = _labels()
    shards = dirichlet_partition(labels, 16, 0.1, np.random.default_rng(0), min_size=5)
    allidx = np.concatenate(shards)
    assert len(allidx) == len(labels) and len(np.unique(allidx)) == len(labels)
    assert min(len(s) for s in shards) >= 5


def test_small_alpha_is_non_iid_and_inf_is_iid():
    labels = _labels()
    rng = np.random.default_rng(0)
    low = _class_entropy(labels, dirichlet_partition(labels, 16, 0.1, rng))
    high = _class_entropy(labels, dirichlet_partition(labels, 16, 100.0, rng))
    iid = dirichlet_partition(labels, 10, float("inf"), rng)
    assert low < 1.5 and high > 2.0  # ~1-3 dominant classes vs nearly all ten (log 10 = 2.30)
    for s in iid:
        assert (np.bincount(labels[s], minlength=10) == 10).all()


def test_same_seed_same_split():
    labels = _labels()
    a = dirichlet_partition(labels, 8, 0.5, np.random.default_rng(4))
    b = dirichlet_partition(labels, 8, 0.5, np.random.default_rng(4))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize(("kwargs", "word"), [({"n_agents": 0}, "agents"), ({"alpha": 0.0}, "alpha"),
                                              ({"alpha": -1}, "alpha"), ({"n_agents": 600}, "agents")])
def test_bad_arguments_name_themselves(kwargs, word):
    args = {"labels": _labels(), "n_agents": 4, "alpha": 0.5, "rng": np.random.default_rng()} | kwargs
    with pytest.raises((ValueError, TypeError), match=word):
        dirichlet_partition(**args)


def test_synthetic_is_seeded():
    a, b = synthetic_classification(seed=3), synthetic_classification(seed=3)
    assert np.array_equal(a.x_train, b.x_train) and a.x_train.dtype == np.float32
    assert set(np.unique(a.y_train)) == set(range(10))
