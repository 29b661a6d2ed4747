"""Policy-gradient losses: hand-derived values on tiny tensors, and the direction of the update."""

from __future__ import annotations

import math

import pytest
import torch

from optiforge.optim.policy_gradient import (
    aggregate_token_loss,
    group_advantages,
    grpo_token_loss,
    k3_kl,
    reinforce_loss,
)

EPS = 1e-4  # TRL's std offset


# ----------------------------------------------------------------------------- advantages
def test_group_advantages_match_hand_values_per_group() -> None:
    # Row 1: mean 2, unbiased std 1. Row 2: mean 4, unbiased std 2.
    a = group_advantages(torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]]))
    expected = torch.tensor([[-1.0, 0.0, 1.0], [-2.0 / (2 + EPS), 0.0, 2.0 / (2 + EPS)]])
    expected[0] /= 1 + EPS
    torch.testing.assert_close(a, expected)
    torch.testing.assert_close(group_advantages(torch.tensor([1.0, 2.0, 3.0])), expected[0])
    # Unscaled: the group-mean (POMO) baseline.
    torch.testing.assert_close(group_advantages(torch.tensor([2.0, 4.0, 9.0]), scale=False),
                               torch.tensor([-3.0, -1.0, 4.0]))


def test_group_advantages_vanish_without_contrast() -> None:
    assert torch.equal(group_advantages(torch.tensor([0.7, 0.7, 0.7])), torch.zeros(3))
    assert torch.equal(group_advantages(torch.tensor([2.0])), torch.zeros(1))
    assert torch.equal(group_advantages(torch.tensor([[2.0], [5.0]])), torch.zeros(2, 1))


# ----------------------------------------------------------------------------- GRPO terms
def test_k3_kl_matches_hand_values() -> None:
    logps = torch.tensor([-1.0, -1.0, -1.0])
    ref = logps + torch.tensor([math.log(2.0), 0.0, -math.log(2.0)])
    # e^d - d - 1 at d = ln 2, 0, -ln 2
    expected = torch.tensor([1 - math.log(2.0), 0.0, math.log(2.0) - 0.5])
    torch.testing.assert_close(k3_kl(logps, ref), expected)


def test_grpo_token_loss_matches_hand_values() -> None:
    # Token 1: ratio 1; token 2: ratio 0.5 (below 1 - eps = 0.8).
    logps = torch.log(torch.tensor([[0.5, 0.25], [0.5, 0.25]]))
    old = torch.log(torch.tensor([[0.5, 0.5], [0.5, 0.5]]))
    ref = logps + torch.tensor([[math.log(2.0), 0.0], [0.0, 0.0]])
    adv = torch.tensor([2.0, -2.0])
    mask = torch.ones(2, 2)
    loss, kl, clipped = grpo_token_loss(logps, old, ref, adv, mask, epsilon=0.2, beta=0.5)
    # A = +2: -min(r A, clip(r) A) = -min([2, 1], [2, 1.6]) = [-2, -1]; the unclipped term is active.
    # A = -2: -min([-2, -1], [-2, -1.6]) = [2, 1.6]; the clip bound is active on token 2.
    kl_expected = torch.tensor([[1 - math.log(2.0), 0.0], [0.0, 0.0]])
    torch.testing.assert_close(kl, kl_expected)
    torch.testing.assert_close(loss, torch.tensor([[-2.0, -1.0], [2.0, 1.6]]) + 0.5 * kl_expected)
    assert clipped.tolist() == [[0.0, 0.0], [0.0, 1.0]]
    # Padding contributes nothing.
    loss_p, kl_p, clip_p = grpo_token_loss(logps, old, ref, adv, torch.tensor([[1.0, 0.0], [1.0, 0.0]]),
                                           epsilon=0.2, beta=0.5)
    assert loss_p[:, 1].abs().sum() == 0 and kl_p[:, 1].abs().sum() == 0 and clip_p.sum() == 0


def test_ratio_one_gives_advantage_weighted_policy_gradient() -> None:
    logps = torch.tensor([[-1.0, -2.0], [-0.5, -3.0]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    adv = torch.tensor([1.5, -0.5])
    loss, _, clipped = grpo_token_loss(logps, logps.detach(), None, adv, mask, epsilon=0.2, beta=0.0)
    assert clipped.sum() == 0
    loss.sum().backward()
    torch.testing.assert_close(logps.grad, -adv.unsqueeze(1) * mask)


@pytest.mark.parametrize(("adv", "shift", "grad_zero"), [
    (1.0, math.log(1.5), True),    # A > 0, ratio above 1 + eps: clipped, no push further up
    (1.0, math.log(0.7), False),   # A > 0, ratio below 1: unclipped, still pushed up
    (-1.0, math.log(0.5), True),   # A < 0, ratio below 1 - eps: clipped
    (-1.0, math.log(1.5), False),  # A < 0, ratio above 1: unclipped, pushed down
])
def test_clip_stops_gradient_only_outside_the_trust_region(adv: float, shift: float, grad_zero: bool) -> None:
    old = torch.tensor([[-1.0]])
    logps = (old + shift).clone().requires_grad_(True)
    loss, _, clipped = grpo_token_loss(logps, old, None, torch.tensor([adv]), torch.ones(1, 1),
                                       epsilon=0.2, beta=0.0)
    loss.sum().backward()
    assert (logps.grad.abs().item() == 0.0) is grad_zero
    assert bool(clipped.item()) is grad_zero


@pytest.mark.parametrize(("offset", "sign"), [(0.3, 1.0), (-0.3, -1.0), (0.0, 0.0)])
def test_kl_term_pulls_the_policy_back_to_the_reference(offset: float, sign: float) -> None:
    ref = torch.tensor([[-1.0]])
    logps = (ref + offset).clone().requires_grad_(True)
    loss, _, _ = grpo_token_loss(logps, logps.detach(), ref, torch.zeros(1), torch.ones(1, 1),
                                 epsilon=0.2, beta=0.1)
    loss.sum().backward()
    # d/dlogp of beta (e^{ref-logp} - (ref-logp) - 1) = beta (1 - e^{ref-logp})
    torch.testing.assert_close(logps.grad, 0.1 * (1 - torch.exp(ref - logps.detach())))
    # Minimising pushes logp down when above the reference, up when below.
    assert torch.sign(logps.grad).item() == sign


def test_aggregation_matches_hand_values_for_both_loss_types() -> None:
    per_token = torch.tensor([[1.0, 2.0], [3.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    # dapo: (1 + 2 + 3) / 3 tokens; grpo: ((1 + 2) / 2 + 3 / 1) / 2 sequences.
    assert aggregate_token_loss(per_token, mask, "dapo").item() == pytest.approx(2.0)
    assert aggregate_token_loss(per_token, mask, "grpo").item() == pytest.approx(2.25)
    # A slice of a larger batch is normalised by the whole batch's count.
    assert aggregate_token_loss(per_token, mask, "dapo", normalizer=6).item() == pytest.approx(1.0)
    assert aggregate_token_loss(per_token, mask, "grpo", normalizer=4).item() == pytest.approx(1.125)
    # Only empty completions: zero loss, not a division by zero.
    assert aggregate_token_loss(torch.zeros(2, 1), torch.zeros(2, 1), "dapo").item() == 0.0


@pytest.mark.parametrize("loss_type", ["dapo", "grpo"])
def test_one_grpo_step_moves_probability_to_the_rewarded_token(loss_type: str) -> None:
    # A one-step categorical policy sampled tokens 0, 1, 2 with rewards 1, 0, -1.
    logits = torch.zeros(4, requires_grad=True)
    tokens = torch.tensor([[0], [1], [2]])
    adv = group_advantages(torch.tensor([1.0, 0.0, -1.0]))

    def token_logps() -> torch.Tensor:
        return torch.log_softmax(logits, -1)[tokens]

    before = torch.log_softmax(logits, -1).detach()
    lp = token_logps()
    mask = torch.ones_like(lp)
    ptl, _, _ = grpo_token_loss(lp, lp.detach(), None, adv, mask, epsilon=0.2, beta=0.0)
    aggregate_token_loss(ptl, mask, loss_type).backward()
    with torch.no_grad():
        logits -= 0.5 * logits.grad
    after = torch.log_softmax(logits, -1).detach()
    assert after[0] > before[0] and after[2] < before[2]


# ----------------------------------------------------------------------------- REINFORCE
def test_reinforce_loss_matches_hand_values_for_each_baseline() -> None:
    # Two instances (B = 2), two rollouts each (G = 2), two steps; rollout (0, 1) stopped early.
    logps = torch.tensor([[[-1.0, -0.5], [-2.0, -7.0]],
                          [[-0.5, -0.5], [-1.0, -1.0]]], requires_grad=True)
    mask = torch.tensor([[[1.0, 1.0], [1.0, 0.0]],
                         [[1.0, 1.0], [1.0, 1.0]]])
    rewards = torch.tensor([[1.0, 3.0], [5.0, 7.0]])
    seq = torch.tensor([[-1.5, -2.0], [-1.0, -2.0]])  # masked sums of log-probs
    cases = {
        "group": torch.tensor([[-1.0, 1.0], [-1.0, 1.0]]),    # minus each instance's mean
        "batch": torch.tensor([[-3.0, -1.0], [1.0, 3.0]]),    # minus the mean of all four
        "none": rewards,
    }
    for baseline, adv in cases.items():
        loss = reinforce_loss(logps, rewards, mask, baseline=baseline)
        assert loss.item() == pytest.approx(float(-(adv * seq).mean())), baseline
        logps.grad = None
        loss.backward()
        # dL/dlogp_it = -A_i m_it / N: the advantage is a constant, masked steps get nothing.
        torch.testing.assert_close(logps.grad, -adv.unsqueeze(-1) * mask / 4, msg=baseline)
    greedy = torch.tensor([[2.0], [8.0]])  # an external baseline, one value per instance
    loss = reinforce_loss(logps, rewards, mask, baseline=greedy)
    assert loss.item() == pytest.approx(float(-(torch.tensor([[-1.0, 1.0], [-3.0, -1.0]]) * seq).mean()))


def test_reinforce_step_raises_the_better_rollouts_probability() -> None:
    # A 3-step policy with one categorical distribution per step; two rollouts of one instance.
    logits = torch.zeros(3, 4, requires_grad=True)
    actions = torch.tensor([[0, 1, 2], [3, 3, 3]])
    rewards = torch.tensor([[-4.0, -9.0]])  # negative tour lengths: rollout 0 is shorter

    def rollout_logps() -> torch.Tensor:
        return torch.log_softmax(logits, -1).gather(1, actions.T).T  # (G, T)

    before = rollout_logps().sum(-1).detach()
    reinforce_loss(rollout_logps().unsqueeze(0), rewards).backward()
    with torch.no_grad():
        logits -= 0.5 * logits.grad
    after = rollout_logps().sum(-1).detach()
    assert after[0] > before[0] and after[1] < before[1]


# ----------------------------------------------------------------------------- bad input
def test_bad_arguments_raise_errors_naming_them() -> None:
    lp = torch.zeros(2, 3)
    ones = torch.ones(2, 3)
    adv = torch.zeros(2)
    with pytest.raises(ValueError, match="advantages"):
        grpo_token_loss(lp, lp, None, torch.zeros(3), ones, epsilon=0.2, beta=0.0)
    with pytest.raises(ValueError, match="mask"):
        grpo_token_loss(lp, lp, None, adv, torch.ones(2, 4), epsilon=0.2, beta=0.0)
    with pytest.raises(ValueError, match="ref_logps"):
        grpo_token_loss(lp, lp, None, adv, ones, epsilon=0.2, beta=0.1)
    with pytest.raises(ValueError, match="epsilon"):
        grpo_token_loss(lp, lp, None, adv, ones, epsilon=0.0, beta=0.0)
    with pytest.raises(ValueError, match="beta"):
        grpo_token_loss(lp, lp, lp, adv, ones, epsilon=0.2, beta=-1.0)
    with pytest.raises(TypeError, match="old_logps"):
        grpo_token_loss(lp, [[0.0]], None, adv, ones, epsilon=0.2, beta=0.0)
    with pytest.raises(ValueError, match="loss_type"):
        aggregate_token_loss(lp, ones, "ppo")
    with pytest.raises(ValueError, match="normalizer"):
        aggregate_token_loss(lp, ones, "dapo", normalizer=-1.0)
    with pytest.raises(ValueError, match="rewards"):
        group_advantages(torch.tensor(1.0))
    with pytest.raises(ValueError, match="logps"):
        reinforce_loss(torch.zeros(2, 3), torch.zeros(3))
    with pytest.raises(ValueError, match="baseline"):
        reinforce_loss(torch.zeros(2, 3), torch.zeros(2), baseline="critic")
    with pytest.raises(ValueError, match="baseline"):
        reinforce_loss(torch.zeros(2, 3), torch.zeros(2), baseline=torch.zeros(3))
