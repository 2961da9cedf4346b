r"""Two mitigations of §9's length bias ("Practical mitigation"), applied to the rewards before eq. (3).

* An explicit **length penalty**: :math:`R_i - \lambda\,|o_i|`.
* A **length-conditioned normalisation**: within each group, the baseline of eq. (3) is the group's least-squares
  line of :math:`R` on :math:`|o|` instead of its mean, so the advantage keeps only the part of the reward that the
  completion's length does not explain, standardised as in eq. (3).

Rewards and lengths come as shape ``(G,)`` for one group or ``(prompts, G)`` for a batch; statistics are taken within
each group (Definition 3.1).
"""

from __future__ import annotations

import numpy as np

from grpo_core._validate import nonnegative, numpy_array, same_shape
from grpo_core.advantages import group_advantages

#: A residual smaller than this fraction of its group's reward spread (or than 64 ulps of its largest reward) is
#: rounding error, set to exactly 0.
ROUND_OFF = 1e-9


def length_penalized_rewards(rewards, lengths, coef: float) -> np.ndarray:
    r"""§9's explicit length penalty: :math:`R_i - \lambda\,|o_i|` (``coef`` is λ per token), before eq. (3)."""
    rewards, lengths = _rewards_and_lengths(rewards, lengths)
    coef = nonnegative(coef, "coef")
    return rewards - coef * lengths


def length_conditioned_advantages(rewards, lengths, eps: float = 1e-8) -> np.ndarray:
    r"""§9's length-conditioned normalisation: eq. (3) on :math:`e_i = R_i - (a + b\,|o_i|)`.

    :math:`a + b\,|o|` is the group's least-squares line of the rewards on the lengths (:math:`b = 0` when every
    completion has the same length, which gives eq. (3) itself). The advantages are uncorrelated with the lengths
    within each group, and adding :math:`\kappa\,|o_i|` to the rewards (a reward model that likes length) leaves
    them unchanged. A group whose rewards the line explains exactly gets :math:`\hat A = 0` (Property 4.1).
    """
    rewards, lengths = _rewards_and_lengths(rewards, lengths)
    residuals = _length_residuals(rewards, lengths)
    return group_advantages(residuals, eps=eps)


def _length_residuals(rewards: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Rewards minus their group's least-squares line on the lengths; rounding-sized residuals set to 0."""
    centred_lengths = lengths - lengths.mean(axis=-1, keepdims=True)
    centred_rewards = rewards - rewards.mean(axis=-1, keepdims=True)
    spread = (centred_lengths**2).sum(axis=-1, keepdims=True)
    covariance = (centred_lengths * centred_rewards).sum(axis=-1, keepdims=True)
    slope = np.divide(covariance, spread, out=np.zeros_like(spread), where=spread > 0)  # equal lengths: b = 0
    residuals = centred_rewards - slope * centred_lengths
    spread = np.abs(centred_rewards).max(axis=-1, keepdims=True)
    size = np.abs(rewards).max(axis=-1, keepdims=True)  # rewards equal up to rounding leave residuals of its ulp
    residuals[np.abs(residuals) <= np.maximum(ROUND_OFF * spread, 64 * np.finfo(float).eps * size)] = 0.0
    return residuals


def _rewards_and_lengths(rewards, lengths) -> tuple[np.ndarray, np.ndarray]:
    rewards = numpy_array(rewards, "rewards", ndim=(1, 2))
    lengths = numpy_array(lengths, "lengths", ndim=(1, 2))
    same_shape(rewards=rewards, lengths=lengths)
    if rewards.shape[-1] < 2:
        raise ValueError(f"rewards: a group needs G >= 2 samples, got G = {rewards.shape[-1]}")
    if (lengths < 1).any():
        raise ValueError(f"lengths must be at least 1 token, got {lengths.min()}")
    return rewards, lengths
