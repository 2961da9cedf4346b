"""Group-relative advantages: chapter §4, eq. (3), Definition 3.1, Property 4.1.

Rewards come as shape ``(G,)`` for one group or ``(prompts, G)`` for a batch of
groups; every statistic is taken over the last axis, i.e. within a group and
never pooled across prompts (Definition 3.1), except where ``scale="batch"``
asks for the batch-wide std on purpose.
"""

from __future__ import annotations

import numpy as np

from grpo_core._validate import choice, finite_array, nonnegative, positive_int

SCALES = ("group", "batch", "none")


def _rewards(rewards) -> np.ndarray:
    rewards = np.asarray(finite_array(rewards, "rewards", ndim=(1, 2)), dtype=float)
    if rewards.shape[-1] < 2:
        raise ValueError(f"rewards: a group needs G >= 2 samples to have a baseline, got G = {rewards.shape[-1]}")
    return rewards


def zero_std_mask(rewards) -> np.ndarray:
    """True for each group whose rewards are all equal (Property 4.1).

    Such a group has ``std(R) = 0``: every advantage is exactly 0 and the group
    contributes no policy-gradient signal. Shape: ``()`` for one group,
    ``(prompts,)`` for a batch.
    """
    rewards = _rewards(rewards)
    return rewards.max(axis=-1) == rewards.min(axis=-1)


def zero_std_fraction(rewards) -> float:
    """Fraction of groups that carry no signal (all rewards equal)."""
    return float(np.mean(zero_std_mask(rewards)))


def group_mean(rewards) -> np.ndarray:
    r"""Eq. (5): :math:`\frac1G\sum_i R_i`, the Monte Carlo estimate of :math:`V^{\pi_{\theta_\mathrm{old}}}(q)`.

    The zero-parameter "critic" of GRPO (§5): one value per group, shape ``()``
    for one group or ``(prompts,)`` for a batch.
    """
    return _rewards(rewards).mean(axis=-1)


def centered_rewards(rewards) -> np.ndarray:
    """``R_i - mean(R)`` per group, exactly 0 in a zero-variance group.

    Floating-point ``mean`` of equal numbers can differ from them in the last
    bit; Property 4.1 says the difference is exactly zero, so it is set to zero.
    """
    rewards = _rewards(rewards)
    centered = rewards - group_mean(rewards)[..., None]
    centered[zero_std_mask(rewards)] = 0.0
    return centered


def group_advantages(rewards, eps: float = 1e-8, ddof: int = 0, scale: str = "group") -> np.ndarray:
    r"""Eq. (3): :math:`\hat A_i = (R_i - \mathrm{mean}(R)) / (\mathrm{std}(R) + \varepsilon)`.

    Parameters
    ----------
    rewards : array of shape ``(G,)`` or ``(prompts, G)``
        One scalar reward per completion (eq. 2), ``G >= 2``.
    eps : float >= 0
        Added to the std in the denominator (the chapter's ``ε ≈ 1e-8``; TRL
        uses 1e-4, verl 1e-6, OpenRLHF 1e-9).
    ddof : 0 or 1
        0 is the population std that the chapter's §12 numbers use; 1 is the
        sample std that ``torch.std`` (TRL, verl, OpenRLHF) uses.
    scale : {"group", "batch", "none"}
        Divide by the std of the group (the chapter, eq. 3), by the std of the
        whole batch (TRL's ``scale_rewards="batch"``), or not at all (Dr. GRPO:
        ``Â_i = R_i - mean(R)``).

    A group whose rewards are all equal gets ``Â = 0`` exactly (Property 4.1),
    also when ``eps = 0``.
    """
    eps = nonnegative(eps, "eps")
    ddof = positive_int(ddof, "ddof", minimum=0)
    if ddof > 1:
        raise ValueError(f"ddof must be 0 or 1, got {ddof}")
    choice(scale, "scale", SCALES)
    rewards = _rewards(rewards)
    centered = centered_rewards(rewards)
    if scale == "none":
        return centered
    if scale == "group":
        std = rewards.std(axis=-1, ddof=ddof, keepdims=True)
    else:
        std = np.full((*rewards.shape[:-1], 1), rewards.std(ddof=ddof))
    denominator = np.broadcast_to(std + eps, centered.shape)
    return np.divide(centered, denominator, out=np.zeros_like(centered), where=denominator > 0)


def rloo_advantages(rewards) -> np.ndarray:
    r"""RLOO (§8): :math:`R_i - b_i` with the leave-one-out baseline
    :math:`b_i = \frac{1}{G-1}\sum_{j \ne i} R_j`.

    Algebraically ``G / (G - 1) * (R_i - mean(R))``: the GRPO numerator,
    rescaled, with no division by the std.
    """
    rewards = _rewards(rewards)
    group_size = rewards.shape[-1]
    baseline = (rewards.sum(axis=-1, keepdims=True) - rewards) / (group_size - 1)
    advantages = rewards - baseline
    advantages[zero_std_mask(rewards)] = 0.0
    return advantages


def dr_grpo_advantages(rewards) -> np.ndarray:
    """Dr. GRPO (Liu et al., 2025): ``R_i - mean(R)``, the std division removed."""
    return group_advantages(rewards, scale="none")


def zero_signal_probability(success_rate, group_size: int):
    r"""Probability that a group of binary rewards carries no signal (Property 4.1).

    With success rate ``p`` per sample, all ``G`` rewards agree with
    probability :math:`p^G + (1-p)^G`: the "competence frontier" — prompts the
    policy always or never solves teach it nothing.
    """
    p = np.asarray(finite_array(success_rate, "success_rate"), dtype=float)
    if (p < 0).any() or (p > 1).any():
        raise ValueError("success_rate must lie in [0, 1]")
    group_size = positive_int(group_size, "group_size")
    return p**group_size + (1.0 - p) ** group_size
