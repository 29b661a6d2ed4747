import numpy as np
import pytest

from optiforge.agents.hollm.partition import kd_partition, leaf_size


@pytest.mark.parametrize(("n", "d", "m"), [(1, 2, 1), (7, 3, 2), (100, 3, 5), (300, 10, 5)])
def test_leaves_tile_the_cube_and_hold_the_points(n, d, m):
    X = np.random.default_rng(n).random((n, d))
    regions = kd_partition(X, m)
    assert sum(float(np.prod(r.hi - r.lo)) for r in regions) == pytest.approx(1.0)
    idx = np.concatenate([r.indices for r in regions])
    assert sorted(idx.tolist()) == list(range(n))
    for r in regions:
        assert 1 <= len(r.indices) <= m
        assert r.contains(X[r.indices]).all()
    # Random probes fall in exactly one leaf (boxes are disjoint up to their faces).
    probes = np.random.default_rng(0).random((500, d))
    hits = np.sum([r.contains(probes, tol=0.0) for r in regions], axis=0)
    assert (hits == 1).all()


def test_splits_follow_the_data():
    # Points clustered in one corner: the corner gets small leaves, the rest one big leaf.
    rng = np.random.default_rng(0)
    X = np.vstack([rng.random((60, 2)) * 0.1, [[0.9, 0.9]]])
    regions = kd_partition(X, 4)
    small = [r for r in regions if np.all(r.hi <= 0.1 + 1e-12)]
    assert len(small) >= 10
    assert max(r.volume_score for r in regions) > 0.5


def test_leaf_size_schedule():
    assert leaf_size(0, 10) == 5
    assert leaf_size(1000, 20) == 10
    assert leaf_size(0, 1) == 1
    assert leaf_size(0, 4, m0=2, lam=1.0) == 2
    assert leaf_size(99, 4, m0=2, lam=1.0) == 2 + int(np.ceil(np.log(100)))


def test_bad_points():
    with pytest.raises(ValueError, match="points"):
        kd_partition(np.zeros((0, 3)), 2)
