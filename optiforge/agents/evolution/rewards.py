"""CALM's tiered reward for one sampled heuristic (Eqs. 3-4 of the paper).

optiforge scores are lower-is-better; CALM's performance is ``g = -score``. Rewards are
measured against ``h_base``, the **best heuristic shown in the prompt** (not the global
best), which removes the "prompt bonus" a child would otherwise inherit from good parents.

Exact algebra used here (the paper's Eq. 4 is not available, see the research note)::

    Δ(new, base) = clip(|g_new - g_base| / max(min(|g_new|, |g_base|), eps), 0, 1)

    r = invalid                     (program unparsable / failed / invalid score)  = -0.8
      = duplicate                   (already-seen code, or same score as a parent)  = -0.6
      = -worse_weight * Δ           (valid, new, worse than h_base)                in [-0.5, 0)
      = 1 + Δ                       (valid, new, better than h_base)               in (1, 2]

so ``invalid < duplicate < worse < 0 < improving`` for **every** Δ: the values are checked
at construction (``invalid > -1``, ``invalid < duplicate < -worse_weight``). The guard for
g ≈ 0 is ``eps`` (1e-12): when either score is 0 (e.g. a 0 % gap) and they differ, Δ
saturates at 1 rather than dividing by zero, matching the clip's intent.

References
----------
Huang et al. "CALM: Co-evolution of Algorithms and Language Model for Automatic Heuristic
Design." arXiv:2505.12285 (2025), Sec. 3 (reward shaping, Eqs. 3-4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optiforge.agents.evolution.population import scores_equal

_EPS = 1e-12


@dataclass(frozen=True)
class RewardConfig:
    """Tier values of the CALM reward.

    Parameters
    ----------
    invalid : float
        Reward of an invalid program, in (-1, 0) as in CALM.
    duplicate : float
        Reward of a duplicate (seen code or same score as a parent).
    worse_weight : float
        A new-but-worse program gets ``-worse_weight * Δ``.
    """

    invalid: float = -0.8
    duplicate: float = -0.6
    worse_weight: float = 0.5

    def __post_init__(self) -> None:
        for name in ("invalid", "duplicate", "worse_weight"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise TypeError(f"{name}: expected a finite number, got {v!r}")
        if not -1.0 < self.invalid < 0.0:
            raise ValueError(f"invalid: must lie in (-1, 0), got {self.invalid}")
        if self.worse_weight <= 0.0:
            raise ValueError(f"worse_weight: must be > 0, got {self.worse_weight}")
        if not self.invalid < self.duplicate < -self.worse_weight:
            raise ValueError(
                "duplicate: tiers need invalid < duplicate < -worse_weight, got "
                f"invalid={self.invalid}, duplicate={self.duplicate}, worse_weight={self.worse_weight}"
            )


def relative_delta(score_new: float, score_base: float) -> float:
    """CALM's Δ between two heuristics, from lower-is-better scores.

    Parameters
    ----------
    score_new, score_base : float
        Scores (lower is better) of the new and the base heuristic.

    Returns
    -------
    float
        ``clip(|g_new - g_base| / max(min(|g_new|, |g_base|), 1e-12), 0, 1)`` with ``g = -score``.
    """
    g_new, g_base = -float(score_new), -float(score_base)
    denom = max(min(abs(g_new), abs(g_base)), _EPS)
    return min(max(abs(g_new - g_base) / denom, 0.0), 1.0)


def calm_reward(
    score: float | None,
    *,
    valid: bool,
    duplicate: bool,
    baseline: float | None,
    parent_scores: list[float] | tuple[float, ...] = (),
    config: RewardConfig | None = None,
) -> float:
    """Reward of one response.

    Parameters
    ----------
    score : float or None
        The program's score (lower is better); ignored when ``valid`` is false.
    valid : bool
        Whether the program parsed and evaluated to a valid, finite score.
    duplicate : bool
        Whether its code was already seen (hash match).
    baseline : float or None
        Score of ``h_base``: the best parent in the prompt, or (prompts without parents)
        the task's baseline-seed score. ``None`` when no baseline exists (all seeds
        invalid): then any valid new program gets ``1.0``.
    parent_scores : sequence of float
        Scores of all heuristics in the prompt; a score equal to any of them counts as a
        duplicate (CALM: "same g as a base heuristic").
    config : RewardConfig, optional
        Tier values.

    Returns
    -------
    float
        The tiered reward (see module docstring).
    """
    cfg = config or RewardConfig()
    if not valid or score is None or not math.isfinite(score):
        return cfg.invalid
    if duplicate or any(scores_equal(score, p) for p in parent_scores):
        return cfg.duplicate
    if baseline is None:
        return 1.0
    if scores_equal(score, baseline):
        return cfg.duplicate
    delta = relative_delta(score, baseline)
    if score < baseline:
        return 1.0 + delta
    return -cfg.worse_weight * delta
