import math

import numpy as np
import pytest

from optiforge.agents.hollm.partition import Region
from optiforge.agents.hollm.scores import alpha_schedule, region_scores, sample_regions


def test_alpha_cosine_schedule():
    assert alpha_schedule(0, 100) == pytest.approx(1.0)
    assert alpha_schedule(50, 100) == pytest.approx(0.505)
    assert alpha_schedule(100, 100) == pytest.approx(0.01)
    assert alpha_schedule(500, 100) == pytest.approx(0.01)
    vals = [alpha_schedule(t, 100, 0.7, 0.05) for t in range(101)]
    assert all(a >= b for a, b in zip(vals, vals[1:], strict=False))


def _region(lo, hi, idx):
    return Region(np.array(lo, float), np.array(hi, float), np.array(idx))


def test_scores_by_hand():
    regions = [_region([0, 0], [0.5, 1], [0, 1]), _region([0.5, 0], [1, 0.5], [2]),
               _region([0.5, 0.5], [1, 1], [3, 4, 5, 6])]
    values = np.array([3.0, 1.0, 5.0, 2.0, 4.0, 4.0, 6.0])  # lower is better
    s = region_scores(regions, values, alpha=0.5, budget=100)
    y = -values - (-values).min() + 1e-6
    assert s["exploit"] == pytest.approx([y[1], y[2], y[3]])
    assert s["volume"] == pytest.approx([math.sqrt(0.5), 0.5, 0.5])
    # UCB-V with L = log(T / (K n)): the fixed precedence.
    L1, L3 = math.log(100 / (3 * 2)), math.log(100 / (3 * 4))
    assert s["ucbv"][0] == pytest.approx(math.sqrt(2 * np.var(y[[0, 1]], ddof=1) * L1 / 2) + L1 / 2)
    L2 = math.log(100 / 3)
    assert s["ucbv"][1] == pytest.approx(math.sqrt(2 * 0.01 * L2) + L2)
    assert s["ucbv"][2] == pytest.approx(math.sqrt(2 * np.var(y[3:], ddof=1) * L3 / 4) + L3 / 4)
    assert s["prob"].sum() == pytest.approx(1.0)
    # Region 0 holds the best point and the largest volume: it scores highest.
    assert int(np.argmax(s["score"])) == 0


def test_ucbv_bonus_shrinks_as_a_leaf_fills():
    # With the public code's log(T/K*n) the bonus would grow with n; with the fix it shrinks.
    values = np.zeros(12)
    few = _region([0, 0], [0.5, 1], [0, 1])
    many = _region([0.5, 0], [1, 1], list(range(2, 12)))
    s = region_scores([few, many], values + np.arange(12) * 0.0, alpha=1.0, budget=100)
    assert s["ucbv"][0] > s["ucbv"][1]


def test_no_exploration_when_alpha_zero():
    regions = [_region([0], [0.5], [0]), _region([0.5], [1], [1])]
    s = region_scores(regions, np.array([1.0, 0.0]), alpha=0.0, budget=10)
    assert s["score"] == pytest.approx([0.0, 1.0])


def test_sampling_without_replacement_proportional():
    rng = np.random.default_rng(0)
    p = np.array([0.7, 0.1, 0.1, 0.1])
    counts = np.zeros(4)
    for _ in range(4000):
        pick = sample_regions(p, 1, rng)
        counts[pick] += 1
    assert counts / 4000 == pytest.approx(p, abs=0.03)
    two = sample_regions(p, 2, rng)
    assert len(set(two.tolist())) == 2
    assert sample_regions(p, 9, rng).tolist() == [0, 1, 2, 3]
