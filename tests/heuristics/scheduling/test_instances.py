import numpy as np
import pytest

from optiforge.heuristics.scheduling.instances import (
    ARRIVAL_RATE,
    holdout_instances,
    make_instance,
    train_instances,
)
from optiforge.heuristics.scheduling.workflows import SCALES


def test_holdout_sets_are_fixed_and_distinct_per_gamma():
    a = holdout_instances("S", 1.5, n=3)
    b = holdout_instances("S", 1.5, n=3)
    assert all(np.array_equal(x.arrivals, y.arrivals) for x, y in zip(a, b, strict=True))
    assert [w.name for w in a[0].workflows] == [w.name for w in b[0].workflows]
    c = holdout_instances("S", 2.0, n=3)
    assert not np.array_equal(a[0].arrivals, c[0].arrivals)
    assert len(a[0].workflows) == 30
    assert not np.array_equal(train_instances(1.5, 1)[0].arrivals[:3], a[0].arrivals[:3])


def test_poisson_arrivals_and_scale_sizes():
    inst = make_instance("M", 1.25, 4000, seed=1)
    gaps = np.diff(np.concatenate([[0.0], inst.arrivals]))
    assert np.mean(gaps) == pytest.approx(1 / ARRIVAL_RATE, rel=0.05)
    assert np.std(gaps) == pytest.approx(1 / ARRIVAL_RATE, rel=0.08)  # exponential: std = mean
    assert {w.n_tasks for w in inst.workflows} == set(SCALES["M"].values())
    kinds = [w.name.split("_")[0] for w in inst.workflows]
    assert min(kinds.count(k) for k in set(kinds)) > 900  # uniform over the four types


@pytest.mark.parametrize("kwargs, match", [
    ({"scale": "XL"}, "scale"), ({"gamma": 0.0}, "gamma"), ({"gamma": float("nan")}, "gamma"),
    ({"n_workflows": 0}, "n_workflows"),
])
def test_bad_instance_arguments(kwargs, match):
    args = {"scale": "S", "gamma": 1.5, "n_workflows": 3, "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=match):
        make_instance(**args)
