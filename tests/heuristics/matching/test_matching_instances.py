"""The data: seeded, metric, the shapes and sources the docs promise."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.heuristics.matching import FAMILIES, make_instance
from optiforge.heuristics.matching.instances import digits_pool


@pytest.mark.parametrize("family", FAMILIES)
def test_instances_are_seeded_metric_and_read_only(family):
    a, b = make_instance(family, 40, seed=4), make_instance(family, 40, seed=4)
    assert np.array_equal(a.cost, b.cost) and a.description == b.description
    assert not np.array_equal(a.cost, make_instance(family, 40, seed=5).cost)
    assert a.cost.shape == (40, 40) and a.server_cost.shape == (40, 40)
    assert np.all(np.isfinite(a.cost)) and a.cost.min() >= 0
    s = a.server_cost
    assert np.allclose(s, s.T) and np.allclose(np.diag(s), 0)
    # Triangle inequality through every server k: d(r, j) <= d(r, k) + d(k, j).
    assert np.all(a.cost[:, None, :] <= a.cost[:, :, None] + s[None] + 1e-9)
    with pytest.raises(ValueError):
        a.cost[0, 0] = 1.0


def test_fewer_requests_than_servers():
    inst = make_instance("taxi", 30, seed=0, n_requests=12)
    assert inst.cost.shape == (12, 30) and inst.dim == 2


def test_digits_come_from_the_bundled_dataset_with_l1():
    pool = digits_pool()
    assert pool.shape == (1797 * 9, 64) and pool.max() == 16
    inst = make_instance("digits", 25, seed=0)
    assert inst.metric == "l1" and inst.dim == 64
    assert np.allclose(inst.cost[0, 0], np.abs(inst.requests[0] - inst.servers[0]).sum())


@pytest.mark.parametrize(
    ("args", "match"),
    [(("mnist", 10), "data"), (("uniform", 0), "n"), (("uniform", 10, -1), "seed")],
)
def test_bad_arguments_name_the_argument(args, match):
    with pytest.raises(ValueError, match=match):
        make_instance(*args)
    with pytest.raises(ValueError, match="n_requests"):
        make_instance("uniform", 5, n_requests=6)
