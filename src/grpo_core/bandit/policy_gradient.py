r"""REINFORCE on the softmax bandit, with and without a baseline (chapter §4–§5).

For :math:`\pi_\theta = \mathrm{softmax}(\theta)` the score is
:math:`\nabla_\theta\log\pi_\theta(a) = e_a - \pi_\theta`, so a group of actions
with advantages :math:`\hat A_i` gives the REINFORCE estimate
:math:`\frac1G\sum_i \hat A_i (e_{a_i} - \pi_\theta)`. Subtracting a baseline
``b`` from the rewards leaves its expectation unchanged (the baseline lemma
the chapter invokes in §4): :math:`\sum_a \pi(a)\,b\,(e_a - \pi) = b(\pi - \pi) = 0`.
"""

from __future__ import annotations

import numpy as np

from grpo_core import _kernels as K
from grpo_core._validate import numpy_array, scalar
from grpo_core.bandit.env import check_actions, softmax


def _policy(logits) -> np.ndarray:
    r""":math:`\pi_\theta = \mathrm{softmax}(\theta)` of one policy: ``logits`` must have shape (K,)."""
    return softmax(numpy_array(logits, "logits", ndim=(1,)))


def score(logits) -> np.ndarray:
    r"""The score :math:`\nabla_\theta\log\pi_\theta(a) = e_a - \pi_\theta` of every action ``a``.

    Row ``a`` of the returned (K, K) matrix; each row sums to 0.
    """
    probs = _policy(logits)
    return np.eye(probs.size) - probs


def reinforce_gradient(logits, actions, advantages) -> np.ndarray:
    r"""The REINFORCE estimate :math:`\frac1G\sum_i \hat A_i (e_{a_i} - \pi_\theta)`.

    Pass ``advantages = rewards`` for plain REINFORCE, ``rewards - mean`` for
    the group-mean baseline of eq. (5), or :func:`grpo_core.rloo_advantages`
    for RLOO (§8). There is no ratio and no clip: this is the on-policy
    gradient at :math:`\theta = \theta_\mathrm{old}`.
    """
    probs = _policy(logits)
    actions = check_actions(actions, probs.size)
    advantages = numpy_array(advantages, "advantages", ndim=(1,))
    if advantages.shape != actions.shape:
        raise ValueError(f"advantages must have one entry per action, got {advantages.shape} for {actions.shape}")
    return K.reinforce(probs, actions, advantages)


def expected_policy_gradient(logits, rewards, baseline: float = 0.0) -> np.ndarray:
    r"""The exact :math:`\mathbb E_{a\sim\pi}[(r(a) - b)(e_a - \pi)]`, by enumerating the actions.

    Equal for every constant ``baseline`` (the baseline lemma): only the
    variance of the sampled estimate depends on ``b``.
    """
    probs = _policy(logits)
    rewards = numpy_array(rewards, "rewards", ndim=(1,))
    if rewards.shape != probs.shape:
        raise ValueError(f"rewards must have one entry per action {probs.shape}, got {rewards.shape}")
    baseline = scalar(baseline, "baseline")
    return (probs * (rewards - baseline)) @ score(logits)
