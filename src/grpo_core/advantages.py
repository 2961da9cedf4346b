"""Group-relative advantages: chapter §4, eq. (3), Definition 3.1, Property 4.1.

Rewards come as shape ``(G,)`` for one group or ``(prompts, G)`` for a batch of
groups; every statistic is taken over the last axis, i.e. within a group and
never pooled across prompts (Definition 3.1), except where ``scale="batch"``
asks for the batch-wide std on purpose.
"""

from __future__ import annotations

import numpy as np

from grpo_core import _kernels as K
from grpo_core._kernels import power_of_two
from grpo_core._validate import choice, nonnegative, numpy_array, positive, positive_int

SCALES = ("group", "batch", "none")


def _rewards(rewards) -> np.ndarray:
    rewards = numpy_array(rewards, "rewards", ndim=(1, 2))
    if rewards.shape[-1] < 2:
        raise ValueError(f"rewards: a group needs G >= 2 samples to have a baseline, got G = {rewards.shape[-1]}")
    return rewards


OFFSET_RATIO = 2.0**20  # below it, the mean's rounding costs at most ~1e-10 of the spread


def _offset_removed(scaled) -> np.ndarray:
    """The (scaled) rewards minus their group's first reward where it exceeds ``OFFSET_RATIO`` × the spread.

    Rewards sharing a large offset (1e8 + small differences) then lose it
    exactly (Sterbenz: each difference is exact), so the mean no longer rounds
    at the offset's precision; other groups are left as they are (``x - 0``),
    bit for bit.
    """
    first = scaled[..., :1]
    spread = scaled.max(axis=-1, keepdims=True) - scaled.min(axis=-1, keepdims=True)
    return scaled - np.where(np.abs(first) > OFFSET_RATIO * spread, first, 0.0)


def _centered(scaled) -> tuple[np.ndarray, np.ndarray]:
    """``R - mean(R)`` per group of (scaled) rewards, and the offset-free rewards it was computed from.

    A zero-variance group gives exactly 0 (Property 4.1).
    """
    shifted = _offset_removed(scaled)
    centered = shifted - shifted.mean(axis=-1, keepdims=True)
    centered[scaled.max(axis=-1) == scaled.min(axis=-1)] = 0.0
    return centered, shifted


def _unscaled(values, scale, what: str) -> np.ndarray:
    """``values * scale``, refusing a result beyond the float64 range."""
    with np.errstate(over="ignore"):
        result = values * scale
    if not np.isfinite(result).all():
        raise ValueError(f"rewards: {what} exceeds the float64 range (rewards too far apart)")
    return result


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
    return K.mean(_rewards(rewards))


def centered_rewards(rewards) -> np.ndarray:
    """``R_i - mean(R)`` per group, exactly 0 in a zero-variance group.

    Floating-point ``mean`` of equal numbers can differ from them in the last
    bit; Property 4.1 says the difference is exactly zero, so it is set to zero.
    """
    rewards = _rewards(rewards)
    scale = power_of_two(rewards, -1)
    return _unscaled(_centered(rewards / scale)[0], scale, "R - mean(R)")


def group_std(rewards, ddof: int = 0) -> np.ndarray:
    r"""σ of eq. (3), per group: :math:`\sqrt{\tfrac{1}{G-\mathrm{ddof}}\sum_i (R_i - \bar R)^2}`.

    ``ddof=0`` is the population std of the chapter's §12; 1 is the sample std
    of ``torch.std`` (TRL, verl, OpenRLHF). Exactly 0 in a zero-variance group
    (Property 4.1), and scale-safe like :func:`group_advantages`.
    """
    ddof = positive_int(ddof, "ddof", minimum=0)
    if ddof > 1:
        raise ValueError(f"ddof must be 0 or 1, got {ddof}")
    rewards = _rewards(rewards)
    unit = power_of_two(rewards, -1)
    centered, _ = _centered(rewards / unit)
    spread = np.sqrt((centered**2).sum(axis=-1, keepdims=True) / (rewards.shape[-1] - ddof))
    return _unscaled(spread, unit, "std(R)")[..., 0]


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
    if scale == "none":
        return centered_rewards(rewards)
    unit = power_of_two(rewards, -1 if scale == "group" else None)
    scaled = rewards / unit
    centered, shifted = _centered(scaled)
    if scale == "group":
        std = shifted.std(axis=-1, ddof=ddof, keepdims=True)
    else:
        std = np.full((*rewards.shape[:-1], 1), scaled.std(ddof=ddof))
    with np.errstate(over="ignore"):  # eps / unit = inf for rewards near 1e-300: Â = 0, as eq. (3) gives
        denominator = np.broadcast_to(std + eps / unit, centered.shape)
    return np.divide(centered, denominator, out=np.zeros_like(centered), where=denominator > 0)


def rloo_advantages(rewards) -> np.ndarray:
    r"""RLOO (§8): :math:`R_i - b_i` with the leave-one-out baseline
    :math:`b_i = \frac{1}{G-1}\sum_{j \ne i} R_j`.

    Algebraically ``G / (G - 1) * (R_i - mean(R))``: the GRPO numerator,
    rescaled, with no division by the std.
    """
    rewards = _rewards(rewards)
    scale = power_of_two(rewards, -1)
    shifted = _offset_removed(rewards / scale)
    baseline = (shifted.sum(axis=-1, keepdims=True) - shifted) / (rewards.shape[-1] - 1)
    advantages = shifted - baseline
    advantages[zero_std_mask(rewards)] = 0.0
    return _unscaled(advantages, scale, "R_i - b_i")


def dr_grpo_advantages(rewards) -> np.ndarray:
    """Dr. GRPO (Liu et al., 2025): ``R_i - mean(R)``, the std division removed."""
    return group_advantages(rewards, scale="none")


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
    std_floor = positive(std_floor, "std_floor")
    rewards = _rewards(rewards)
    unit = power_of_two(rewards, -1)  # exact rescaling, as in eq. (3)
    centered, shifted = _centered(rewards / unit)
    with np.errstate(over="ignore"):  # a floor far above tiny rewards: Â = 0
        floor = std_floor / unit
    return centered / np.maximum(shifted.std(axis=-1, keepdims=True), floor)
