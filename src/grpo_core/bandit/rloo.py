r"""RLOO on the one-prompt bandit (chapter §8): REINFORCE with a leave-one-out baseline.

REINFORCE Leave-One-Out (Kool et al., 2019; Ahmadian et al., 2024, "Back to
Basics") draws ``G`` samples per prompt and gives sample i the baseline
:math:`b_i = \frac1{G-1}\sum_{j\ne i} R_j`, the mean of the *other* samples:
because :math:`b_i` does not depend on :math:`a_i`, the estimate stays unbiased.
The update is one plain policy-gradient step,

.. math:: \theta \leftarrow \theta + \alpha\,\frac1G\sum_i (R_i - b_i)\,\nabla_\theta\log\pi_\theta(a_i),

with no importance ratio, no clip and no std division (so no inner epochs: a
second step on the same samples would be off-policy with nothing to correct
it). As in Ahmadian et al. and RLHF-PPO, the KL to :math:`\pi_\mathrm{ref}` enters through the
reward, :math:`R_i - \beta\log(\pi(a_i)/\pi_\mathrm{ref}(a_i))`
(:func:`grpo_core.bandit.ppo.kl_penalized_rewards`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_core import _kernels as K
from grpo_core._validate import numpy_array, positive_int
from grpo_core.advantages import rloo_advantages
from grpo_core.bandit.env import check_actions, softmax
from grpo_core.bandit.policy_gradient import reinforce_gradient
from grpo_core.bandit.ppo import kl_penalized_rewards
from grpo_core.bandit.trainer import BanditTrainer
from grpo_core.config import PolicyUpdate


def rloo_gradient(logits, actions, rewards) -> np.ndarray:
    r"""The RLOO estimate :math:`\frac1G\sum_i (R_i - b_i)(e_{a_i} - \pi_\theta)`, :math:`b_i` leave-one-out."""
    probs = softmax(numpy_array(logits, "logits", ndim=(1,)))
    actions = check_actions(actions, probs.size)
    rewards = numpy_array(rewards, "rewards", ndim=(1,))
    if rewards.shape != actions.shape:
        raise ValueError(f"rewards must have one entry per action, got {rewards.shape} for {actions.shape}")
    return K.reinforce(probs, actions, rloo_advantages(rewards))


@dataclass(frozen=True)
class RLOOConfig(PolicyUpdate):
    """The knobs of a bandit RLOO step: ``group_size`` (the paper's k), and ``lr`` and ``beta`` (KL-in-reward) of
    :class:`~grpo_core.config.PolicyUpdate`."""

    #: k, samples per prompt (at least 2).
    group_size: int = 8

    def __post_init__(self) -> None:
        super().__post_init__()
        positive_int(self.group_size, "group_size", minimum=2)


@dataclass(frozen=True)
class RLOOStep:
    """One RLOO update: the group, its rewards (after the KL penalty) and the advantages :math:`R_i - b_i`."""

    #: The group's actions.
    actions: np.ndarray
    #: Their rewards :math:`R_i`.
    rewards: np.ndarray
    #: The rewards with the KL penalty folded in.
    shaped_rewards: np.ndarray
    #: :math:`R_i - b_i` with the leave-one-out baseline :math:`b_i`.
    advantages: np.ndarray


class BanditRLOO(BanditTrainer):
    """RLOO on the bandit: sample G, shape rewards with the KL, one REINFORCE step with the leave-one-out baseline."""

    config_type = RLOOConfig

    def update(self) -> RLOOStep:
        r"""Sample a group from :math:`\pi_\theta`, shape its rewards, take one REINFORCE step with the leave-one-out
        baseline."""
        cfg = self.config
        actions, rewards = self.draw(cfg.group_size)
        logp, ref_logp = self.sampled_log_probs(actions)
        shaped = kl_penalized_rewards(rewards, logp, ref_logp, cfg.beta)
        advantages = rloo_advantages(shaped)
        self.logits = self.logits + cfg.lr * reinforce_gradient(self.logits, actions, advantages)
        return RLOOStep(actions, rewards, shaped, advantages)
