"""Policy-gradient losses: GRPO's group-relative clipped objective and REINFORCE with a shared baseline.

Both families score whole samples (a completion, a route) with one reward and push the
log-probability of each sample's actions up or down by an *advantage*: the reward minus a
baseline built from the other samples, so no value network is needed.

GRPO [1]_ (``i`` a sample of a group of ``G`` answers to one prompt, ``t`` one of its tokens),
with TRL's definitions [2]_::

    A_i     = (r_i - mean_g(r)) / (std_g(r) + 1e-4)            (group-normalised advantage)
    rho_it  = pi_theta(o_it | q, o_<t) / pi_old(o_it | ...)     (token-level importance ratio)
    L_it    = -min(rho_it A_i, clip(rho_it, 1 - eps, 1 + eps) A_i) + beta KL_it
    KL_it   = exp(ref_it - logp_it) - (ref_it - logp_it) - 1    (Schulman's k3 estimator, >= 0)
    loss    = sum_{i,t} L_it / sum_i |o_i|                      (loss_type="dapo": token level)
            = mean_i (sum_t L_it / |o_i|)                       (loss_type="grpo": sequence level)

REINFORCE [3]_ with a shared baseline (POMO [4]_: ``G`` rollouts of one instance share the
mean of their rewards as baseline)::

    loss = -mean_i (r_i - b_i) sum_t log pi_theta(a_it | s_it)

Everything here is plain torch on tensors the caller computed (per-token / per-step
log-probabilities of the actions actually taken), so any trainer can use it: the GRPO learner
of the evolution agent, a routing policy trained with REINFORCE, or a user's own loop.

References
----------
.. [1] Z. Shao et al., "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open
   Language Models", arXiv:2402.03300, 2024 (GRPO, section 4.1).
.. [2] Hugging Face TRL, ``GRPOTrainer`` (``_compute_loss``: ratio clip, k3 KL, ``loss_type``
   "grpo" and "dapo"; advantages ``/ (std + 1e-4)`` with the unbiased std).
.. [3] R. J. Williams, "Simple Statistical Gradient-Following Algorithms for Connectionist
   Reinforcement Learning", Machine Learning 8, 1992.
.. [4] Y.-D. Kwon et al., "POMO: Policy Optimization with Multiple Optima for Reinforcement
   Learning", NeurIPS 2020 (shared baseline, eq. 4).
"""

from __future__ import annotations

import torch

from optiforge import validation as check

ADVANTAGE_EPS = 1e-4  # TRL's GRPOTrainer: advantages / (std + 1e-4)
LOSS_TYPES = ("dapo", "grpo")
BASELINES = ("group", "batch", "none")


def _check_tensor(name: str, value: object) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def _check_same_shape(name: str, value: object, like: torch.Tensor, like_name: str) -> torch.Tensor:
    t = _check_tensor(name, value)
    if t.shape != like.shape:
        raise ValueError(f"{name} must have the shape of {like_name} {tuple(like.shape)}, got {tuple(t.shape)}")
    return t


def group_advantages(rewards: torch.Tensor, *, scale: bool = True) -> torch.Tensor:
    """Group-relative advantages: each reward minus its group's mean, over its group's std.

    .. math:: A_i = \\frac{r_i - \\bar r}{s + 10^{-4}}, \\qquad
              s^2 = \\frac{1}{G - 1} \\sum_{j=1}^G (r_j - \\bar r)^2

    (GRPO's outcome supervision, with TRL's unbiased std and ``1e-4``). Without ``scale`` it
    is the group-mean (shared) baseline of POMO: :math:`A_i = r_i - \\bar r`.

    Parameters
    ----------
    rewards : torch.Tensor
        Shape ``(..., G)``: the last axis holds the ``G`` samples of one group (one prompt,
        one problem instance); leading axes index independent groups.
    scale : bool
        Divide by the group's std (GRPO). ``False`` keeps the raw centred rewards (POMO,
        Dr. GRPO).

    Returns
    -------
    torch.Tensor
        Float32, the shape of ``rewards``. All zeros for a group whose rewards are equal or
        that holds one sample (nothing to compare).

    Raises
    ------
    TypeError
        If ``rewards`` is not a tensor.
    ValueError
        If ``rewards`` is 0-dimensional.

    References
    ----------
    Shao et al. 2024 (DeepSeekMath, GRPO); TRL ``GRPOTrainer``; Kwon et al. 2020 (POMO).
    """
    rewards = _check_tensor("rewards", rewards)
    if rewards.dim() == 0:
        raise ValueError("rewards must have a group axis (shape (..., G)), got a scalar")
    rewards = rewards.to(torch.float32)
    if rewards.shape[-1] < 2:
        return torch.zeros_like(rewards)
    centred = rewards - rewards.mean(dim=-1, keepdim=True)
    if not scale:
        return centred
    return centred / (rewards.std(dim=-1, keepdim=True) + ADVANTAGE_EPS)


def k3_kl(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of ``KL(pi_theta || pi_ref)`` from sampled tokens.

    .. math:: \\mathrm{KL}_t = e^{d_t} - d_t - 1, \\qquad d_t = \\log\\pi_{ref}(o_t) - \\log\\pi_\\theta(o_t)

    Unbiased for tokens sampled from :math:`\\pi_\\theta`, and non-negative (``e^d >= 1 + d``),
    zero where the two policies agree (J. Schulman, "Approximating KL divergence", 2020; used
    by GRPO, eq. 4).

    Parameters
    ----------
    logps, ref_logps : torch.Tensor
        Same shape: log-probabilities of the sampled tokens under the policy and the reference.

    Returns
    -------
    torch.Tensor
        The shape of ``logps``.
    """
    diff = ref_logps - logps
    return torch.exp(diff) - diff - 1.0


def grpo_token_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    ref_logps: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    epsilon: float,
    beta: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token clipped GRPO loss with the k3 KL penalty, before aggregation.

    .. math:: L_{it} = -\\min\\big(\\rho_{it} A_i,\\ \\mathrm{clip}(\\rho_{it}, 1-\\epsilon,
              1+\\epsilon) A_i\\big) + \\beta\\,\\mathrm{KL}_{it}, \\qquad
              \\rho_{it} = e^{\\log\\pi_\\theta - \\log\\pi_{old}}

    With ``old_logps = logps.detach()`` (one optimizer step per batch) ``rho = 1`` and the
    gradient is the plain advantage-weighted policy gradient, ``dL/dlogp = -A`` (plus the
    KL term's). Aggregate with :func:`aggregate_token_loss`.

    Parameters
    ----------
    logps : torch.Tensor
        Shape ``(B, T)``: per-token log-probabilities of the sampled tokens under the current
        policy (differentiable).
    old_logps : torch.Tensor
        Shape ``(B, T)``, under the policy that sampled them (no gradient needed).
    ref_logps : torch.Tensor or None
        Shape ``(B, T)``, under the reference policy; ``None`` when ``beta == 0``.
    advantages : torch.Tensor
        Shape ``(B,)``: one advantage per sequence, shared by its tokens.
    mask : torch.Tensor
        Shape ``(B, T)``: 1 for completion tokens, 0 for padding.
    epsilon : float
        Clip range of the importance ratio, ``> 0`` (TRL's default 0.2).
    beta : float
        KL coefficient, ``>= 0`` (GRPO paper: 0.04).

    Returns
    -------
    per_token_loss, per_token_kl, clipped : torch.Tensor
        Each ``(B, T)`` and zero on padding; ``clipped`` is 1 where the clipped term was the
        active one (the token gets no gradient from the surrogate).

    Raises
    ------
    TypeError, ValueError
        On a non-tensor argument or a shape mismatch (the message names the argument), on
        ``epsilon <= 0`` or ``beta < 0``, or on ``beta > 0`` without ``ref_logps``.

    References
    ----------
    Shao et al. 2024 (DeepSeekMath), eq. 3; TRL ``GRPOTrainer``.
    """
    logps = _check_tensor("logps", logps)
    if logps.dim() != 2:
        raise ValueError(f"logps must have shape (B, T), got {tuple(logps.shape)}")
    _check_same_shape("old_logps", old_logps, logps, "logps")
    _check_same_shape("mask", mask, logps, "logps")
    advantages = _check_tensor("advantages", advantages)
    if advantages.shape != logps.shape[:1]:
        raise ValueError(f"advantages must have shape ({logps.shape[0]},), got {tuple(advantages.shape)}")
    check.positive(epsilon, "epsilon")
    check.nonneg(beta, "beta")
    if beta != 0.0 and ref_logps is None:
        raise ValueError("ref_logps is required when beta > 0 (the KL term needs the reference)")
    ratio = torch.exp(logps - old_logps)
    adv = advantages.unsqueeze(1)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + epsilon) * adv
    per_token_loss = -torch.min(unclipped, clipped)
    if ref_logps is not None and beta != 0.0:
        per_token_kl = k3_kl(logps, _check_same_shape("ref_logps", ref_logps, logps, "logps"))
        per_token_loss = per_token_loss + beta * per_token_kl
    else:
        per_token_kl = torch.zeros_like(logps)
    was_clipped = (clipped < unclipped).to(logps.dtype) * mask
    return per_token_loss * mask, per_token_kl * mask, was_clipped


def aggregate_token_loss(
    per_token_loss: torch.Tensor,
    mask: torch.Tensor,
    loss_type: str = "dapo",
    *,
    normalizer: float | None = None,
) -> torch.Tensor:
    """Reduce per-token losses to the scalar the optimizer differentiates.

    * ``"dapo"`` (TRL's default; DAPO's token-level loss): ``sum_{i,t} L_it / N_tok``, every
      token weighs the same, so long answers are not diluted;
    * ``"grpo"`` (the GRPO paper): ``sum_i (sum_t L_it / |o_i|) / N_seq``, every sequence
      weighs the same.

    Parameters
    ----------
    per_token_loss : torch.Tensor
        Shape ``(B, T)``, zero on padding (as :func:`grpo_token_loss` returns it).
    mask : torch.Tensor
        Shape ``(B, T)``: 1 for completion tokens.
    loss_type : {"dapo", "grpo"}
        The reduction.
    normalizer : float, optional
        ``N_tok`` (``"dapo"``) or ``N_seq`` (``"grpo"``) when this call sees a slice of a
        larger batch whose gradients are accumulated (several groups, one optimizer step).
        Default: this call's own count (``mask.sum()``, resp. ``B``). Counts below 1 count
        as 1.

    Returns
    -------
    torch.Tensor
        Scalar loss.

    Raises
    ------
    ValueError
        On an unknown ``loss_type``, a shape mismatch or ``normalizer < 0``.

    References
    ----------
    Shao et al. 2024 (DeepSeekMath), eq. 3; TRL ``GRPOTrainer`` (``loss_type``); Q. Yu et al.,
    "DAPO: An Open-Source LLM Reinforcement Learning System at Scale", arXiv:2503.14476, 2025
    (token-level policy-gradient loss).
    """
    check.choice(loss_type, "loss_type", LOSS_TYPES)
    per_token_loss = _check_tensor("per_token_loss", per_token_loss)
    if per_token_loss.dim() != 2:
        raise ValueError(f"per_token_loss must have shape (B, T), got {tuple(per_token_loss.shape)}")
    _check_same_shape("mask", mask, per_token_loss, "per_token_loss")
    if normalizer is None:
        normalizer = float(mask.sum()) if loss_type == "dapo" else float(per_token_loss.shape[0])
    # As TRL, at least 1: a batch of empty completions has zero loss, not a division by zero.
    denominator = max(check.nonneg(normalizer, "normalizer"), 1.0)
    if loss_type == "dapo":
        return per_token_loss.sum() / denominator
    return (per_token_loss.sum(-1) / mask.sum(-1).clamp(min=1.0)).sum() / denominator


def reinforce_loss(
    logps: torch.Tensor,
    rewards: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    baseline: str | torch.Tensor = "group",
) -> torch.Tensor:
    """REINFORCE loss over whole sequences with a shared baseline.

    .. math:: \\mathcal{L} = -\\frac{1}{N} \\sum_i (r_i - b_i) \\sum_t m_{it}
              \\log\\pi_\\theta(a_{it} \\mid s_{it})

    whose gradient is Williams' estimator of :math:`-\\nabla_\\theta \\mathbb{E}[r]`
    (the baseline lowers its variance; the advantage carries no gradient).

    Parameters
    ----------
    logps : torch.Tensor
        Shape ``(..., G, T)``: per-step log-probabilities of the actions taken (differentiable),
        e.g. ``(B, G, T)`` for ``G`` rollouts (POMO's start nodes, or samples) of each of
        ``B`` instances.
    rewards : torch.Tensor
        Shape ``(..., G)`` (``logps`` without its step axis); higher is better (a routing
        policy passes the negative tour length).
    mask : torch.Tensor, optional
        The shape of ``logps``: 1 for real steps, 0 after a rollout finished (padding).
        Default: every step counts.
    baseline : {"group", "batch", "none"} or torch.Tensor
        ``"group"``: the mean reward of the ``G`` rollouts of the same instance (POMO's
        shared baseline); ``"batch"``: the mean over all rollouts; ``"none"``: plain
        REINFORCE; a tensor broadcastable to ``rewards``: an external baseline (e.g. a greedy
        rollout's reward, Kool et al. 2019).

    Returns
    -------
    torch.Tensor
        Scalar loss, averaged over the ``N`` rollouts.

    Raises
    ------
    TypeError, ValueError
        On a non-tensor argument, mismatched shapes or an unknown ``baseline`` (the message
        names the argument).

    Notes
    -----
    The group mean includes the sample's own reward, so the ``"group"`` estimator is scaled by
    ``(G - 1) / G`` relative to the unbiased leave-one-out baseline; POMO uses it as is.

    References
    ----------
    Williams 1992 (REINFORCE); Kwon et al. 2020 (POMO), eq. 4; W. Kool, H. van Hoof,
    M. Welling, "Attention, Learn to Solve Routing Problems!", ICLR 2019 (rollout baseline).
    """
    logps = _check_tensor("logps", logps)
    rewards = _check_tensor("rewards", rewards)
    if logps.dim() < 2 or logps.shape[:-1] != rewards.shape:
        raise ValueError(
            f"logps must have shape rewards.shape + (T,) = {tuple(rewards.shape)} + (T,), got {tuple(logps.shape)}"
        )
    if mask is not None:
        _check_same_shape("mask", mask, logps, "logps")
        logps = logps * mask
    rewards = rewards.to(logps.dtype)
    if isinstance(baseline, torch.Tensor):
        try:
            advantage = rewards - torch.broadcast_to(baseline.to(rewards.dtype), rewards.shape)
        except RuntimeError:
            raise ValueError(
                f"baseline must broadcast to rewards' shape {tuple(rewards.shape)}, got {tuple(baseline.shape)}"
            ) from None
    elif check.choice(baseline, "baseline", BASELINES) == "group":
        advantage = group_advantages(rewards, scale=False).to(logps.dtype)
    elif baseline == "batch":
        advantage = rewards - rewards.mean()
    else:
        advantage = rewards
    return -(advantage.detach() * logps.sum(dim=-1)).mean()
