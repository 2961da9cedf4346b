"""Group-relative advantages: chapter §4, eq. (3), Definition 3.1, Property 4.1.

Rewards come as shape ``(G,)`` for one group or ``(prompts, G)`` for a batch of
groups; every statistic is taken over the last axis, i.e. within a group and
never pooled across prompts (Definition 3.1), except where ``scale="batch"``
asks for the batch-wide std on purpose.
"""

from __future__ import annotations

import numpy as np

from grpo_core._kernels import centered, inf_where_zero
from grpo_core._validate import choice, nonnegative, numpy_array, positive, positive_int

SCALES = ("group", "batch", "none")


def _rewards(rewards) -> np.ndarray:
    rewards = numpy_array(rewards, "rewards", ndim=(1, 2))
    if rewards.shape[-1] < 2:
        raise ValueError(f"rewards: a group needs G >= 2 samples to have a baseline, got G = {rewards.shape[-1]}")
    return rewards


def _ddof(ddof) -> int:
    ddof = positive_int(ddof, "ddof", minimum=0)
    if ddof > 1:
        raise ValueError(f"ddof must be 0 or 1, got {ddof}")
    return ddof


def zero_std_mask(rewards) -> np.ndarray:
    """True for each group whose rewards are all equal (Property 4.1).

    Such a group has ``std(R) = 0``: every advantage is exactly 0 and the group
    contributes no policy-gradient signal. Shape: ``()`` for one group,
    ``(prompts,)`` for a batch.
    """
    R = _rewards(rewards)
    return R.max(axis=-1) == R.min(axis=-1)


def zero_std_fraction(rewards) -> float:
    """Fraction of groups that carry no signal (all rewards equal)."""
    return float(np.mean(zero_std_mask(rewards)))


def group_mean(rewards) -> np.ndarray:
    r"""Eq. (5): :math:`\frac1G\sum_i R_i`, the Monte Carlo estimate of :math:`V^{\pi_{\theta_\mathrm{old}}}(q)`.

    The zero-parameter "critic" of GRPO (§5): one value per group, shape ``()``
    for one group or ``(prompts,)`` for a batch.
    """
    R = _rewards(rewards)
    return R.mean(axis=-1)


def centered_rewards(rewards) -> np.ndarray:
    """``R_i - mean(R)`` per group, exactly 0 in a zero-variance group.

    Floating-point ``mean`` of equal numbers can differ from them in the last
    bit; Property 4.1 says the difference is exactly zero, so it is set to zero.
    """
    return centered(_rewards(rewards))


def group_std(rewards, ddof: int = 0) -> np.ndarray:
    r"""σ of eq. (3), per group: :math:`\sqrt{\tfrac{1}{G-\mathrm{ddof}}\sum_i (R_i - \bar R)^2}`.

    ``ddof=0`` is the population std of the chapter's §12; 1 is the sample std
    of ``torch.std`` (the production trainers: the book's "Production formulas" page). Exactly 0 in a
    zero-variance group (Property 4.1).
    """
    R, ddof = _rewards(rewards), _ddof(ddof)
    G = R.shape[-1]
    return np.sqrt((centered(R) ** 2).sum(axis=-1) / (G - ddof))  # R.std(ddof=ddof), exactly 0 with no spread


def group_advantages(rewards, eps: float = 1e-8, ddof: int = 0, scale: str = "group") -> np.ndarray:
    r"""Eq. (3): :math:`\hat A_i = (R_i - \mathrm{mean}(R)) / (\mathrm{std}(R) + \varepsilon)`.

    Parameters
    ----------
    rewards : array of shape ``(G,)`` or ``(prompts, G)``
        One scalar reward per completion (eq. 2), ``G >= 2``.
    eps : float >= 0
        Added to the std in the denominator (the chapter's ``ε ≈ 1e-8``; the
        production trainers' values are on the book's "Production formulas" page).
    ddof : 0 or 1
        0 is the population std that the chapter's §12 numbers use; 1 is the
        sample std of ``torch.std``.
    scale : {"group", "batch", "none"}
        Divide by the std of the group (the chapter, eq. 3), by the std of the
        whole batch (TRL's ``scale_rewards="batch"``), or not at all (Dr. GRPO:
        ``Â_i = R_i - mean(R)``).

    A group whose rewards are all equal gets ``Â = 0`` exactly (Property 4.1),
    also when ``eps = 0``: ``centered`` is ``R - R.mean()`` with exact zeros there, and
    ``inf_where_zero`` makes a divisor of 0 (ε = 0 and no measurable spread) give Â = 0.
    """
    R, eps, ddof, scale = _rewards(rewards), nonnegative(eps, "eps"), _ddof(ddof), choice(scale, "scale", SCALES)
    if scale == "none":
        return centered(R)  # Dr. GRPO: R - R.mean()
    std = R.std(axis=-1 if scale == "group" else None, ddof=ddof, keepdims=True)
    return centered(R) / inf_where_zero(std + eps)  # (R - R.mean()) / (R.std() + eps)


def rloo_advantages(rewards) -> np.ndarray:
    r"""RLOO (§8): :math:`R_i - b_i` with the leave-one-out baseline
    :math:`b_i = \frac{1}{G-1}\sum_{j \ne i} R_j`.

    Algebraically ``G / (G - 1) * (R_i - mean(R))``: the GRPO numerator,
    rescaled, with no division by the std. Exactly 0 in a zero-variance group.
    """
    R = _rewards(rewards)
    G = R.shape[-1]
    b = (R.sum(axis=-1, keepdims=True) - R) / (G - 1)
    return np.where(zero_std_mask(R)[..., None], 0.0, R - b)


def dr_grpo_advantages(rewards) -> np.ndarray:
    """Dr. GRPO (Liu et al., 2025): ``R_i - mean(R)``, the std division removed (exactly 0 in a zero-variance
    group)."""
    R = _rewards(rewards)
    return centered(R)  # R - R.mean()


def zero_signal_probability(success_rate, group_size: int):
    r"""Probability that a group of binary rewards carries no signal (Property 4.1).

    With success rate ``p`` per sample, all ``G`` rewards agree with
    probability :math:`p^G + (1-p)^G`: the "competence frontier" — prompts the
    policy always or never solves teach it nothing.
    """
    p = numpy_array(success_rate, "success_rate")
    if (p < 0).any() or (p > 1).any():
        raise ValueError("success_rate must lie in [0, 1]")
    group_size = positive_int(group_size, "group_size")
    return p**group_size + (1.0 - p) ** group_size


def std_floor_advantages(rewards, std_floor: float) -> np.ndarray:
    r""":math:`\hat A_i = (R_i - \mathrm{mean}(R)) / \max(\mathrm{std}(R),\ s_\mathrm{min})`, eq. (3) with a floor.

    Where the group std is at least ``std_floor`` this is eq. (3) with ε = 0;
    below it the centred rewards are divided by the floor, so a spread far
    smaller than the floor stays far smaller than 1 instead of being blown up
    to unit scale. Zero-variance groups still give exactly 0 (Property 4.1).
    """
    R, std_floor = _rewards(rewards), positive(std_floor, "std_floor")
    return centered(R) / np.maximum(R.std(axis=-1, keepdims=True), std_floor)
