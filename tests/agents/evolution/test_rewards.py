import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optiforge.agents.evolution.rewards import RewardConfig, calm_reward, relative_delta

CFG = RewardConfig()


def reward(score, base, *, valid=True, duplicate=False, parents=None):
    return calm_reward(score, valid=valid, duplicate=duplicate, baseline=base,
                       parent_scores=[base] if parents is None else parents)


def test_tiers():
    assert reward(None, 2.0, valid=False) == CFG.invalid
    assert reward(1.0, 2.0, duplicate=True) == CFG.duplicate
    assert reward(2.0, 2.0) == CFG.duplicate  # same score as the base heuristic
    assert reward(3.0, 2.0) == pytest.approx(-CFG.worse_weight * 0.5)  # g: -3 vs -2 -> Δ = 1/2
    assert reward(1.5, 2.0) == pytest.approx(1.0 + 0.5 / 1.5)


def test_lower_score_is_improvement_sign_convention():
    # optiforge scores are lower-is-better: a smaller gap must be rewarded positively.
    assert reward(0.9, 1.0) > 1.0
    assert reward(1.1, 1.0) < 0.0


def test_huge_improvement_clips_at_two_and_huge_loss_at_minus_weight():
    assert reward(0.001, 50.0) == pytest.approx(2.0)
    assert reward(500.0, 1.0) == pytest.approx(-CFG.worse_weight)


def test_zero_scores_guard():
    # Δ would divide by zero at g = 0 (a 0 % gap): it saturates instead.
    assert relative_delta(0.0, 1.0) == 1.0
    assert reward(0.0, 1.0) == pytest.approx(2.0)
    assert reward(1.0, 0.0) == pytest.approx(-CFG.worse_weight)
    assert reward(0.0, 0.0) == CFG.duplicate
    assert relative_delta(0.0, 0.0) == 0.0


def test_baseline_is_best_parent_not_global():
    # Child better than the global best of the run but worse than its best parent: negative.
    r = calm_reward(1.2, valid=True, duplicate=False, baseline=1.0, parent_scores=[1.0, 3.0])
    assert r < 0
    # Equal to the weaker parent also counts as a duplicate.
    assert calm_reward(3.0, valid=True, duplicate=False, baseline=1.0, parent_scores=[1.0, 3.0]) == CFG.duplicate


def test_no_baseline():
    assert calm_reward(5.0, valid=True, duplicate=False, baseline=None) == 1.0
    assert calm_reward(None, valid=False, duplicate=False, baseline=None) == CFG.invalid


def test_invalid_wins_over_duplicate_and_nan_is_invalid():
    assert calm_reward(1.0, valid=False, duplicate=True, baseline=2.0) == CFG.invalid
    assert calm_reward(math.nan, valid=True, duplicate=False, baseline=2.0) == CFG.invalid


scores = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)


@given(base=scores, a=scores, b=scores, c=scores)
def test_tier_ordering_for_all_scores(base, a, b, c):
    """invalid < duplicate < worse <= 0 < improving for every Δ."""
    inv = reward(None, base, valid=False)
    dup = reward(a, base, duplicate=True)
    assert inv < dup
    for s in (b, c):
        r = reward(s, base)
        assert r == CFG.duplicate or -CFG.worse_weight <= r <= 2.0
        if s < base and r != CFG.duplicate:
            assert r > 1.0
        elif s > base and r != CFG.duplicate:
            assert dup < r <= 0.0
    if b < c:  # monotone: a better score never gets a lower reward (outside the duplicate tier)
        rb, rc = reward(b, base), reward(c, base)
        if CFG.duplicate not in (rb, rc):
            assert rb >= rc


@given(x=st.floats(-1e9, 1e9), y=st.floats(-1e9, 1e9))
def test_delta_in_unit_interval_and_symmetric(x, y):
    d = relative_delta(x, y)
    assert 0.0 <= d <= 1.0
    assert d == pytest.approx(relative_delta(y, x))


def test_reward_config_validation():
    with pytest.raises(ValueError, match="invalid"):
        RewardConfig(invalid=-1.0)
    with pytest.raises(ValueError, match="duplicate"):
        RewardConfig(invalid=-0.8, duplicate=-0.4, worse_weight=0.5)
    with pytest.raises(ValueError, match="worse_weight"):
        RewardConfig(worse_weight=0.0)
    with pytest.raises(TypeError, match="invalid"):
        RewardConfig(invalid="x")  # type: ignore[arg-type]
