r"""RLHF-style PPO on the one-prompt bandit (chapter §2, §8): a learned baseline and the KL in the reward.

PPO (Schulman et al., 2017) as used for RLHF (Ziegler et al., 2019; Ouyang et
al., 2022) differs from GRPO in two places the chapter names in §8:

1. **The baseline is learned.** A critic :math:`V_\phi` is regressed on the
   returns and the advantage is :math:`A_i = R_i - V_\phi`. With one state and
   one-step episodes, GAE(γ, λ) has a single TD error,
   :math:`\delta = R - V(q)`, so :math:`A = R - V` for every γ, λ. Our critic
   is one scalar ``V`` (the bandit has one state) fitted by a few SGD steps on
   the squared error :math:`\tfrac12\,\mathrm{mean}_i (V - R_i)^2`. Each step
   moves ``V`` a fraction ``value_lr`` of the way to the batch mean, so
   ``value_steps`` steps are an exponential moving average of batch means with
   rate :math:`1 - (1 - \mathrm{value\_lr})^{\mathrm{value\_steps}}`
   (:func:`fit_value`): the critic lags behind the policy, as a real one does.
2. **The KL is folded into the reward**, before advantages are computed:
   :math:`\tilde R_i = R_i - \beta\,\log\frac{\pi_{\theta_\mathrm{old}}(a_i)}{\pi_\mathrm{ref}(a_i)}`
   (the k1 estimator of eq. 8's target, treated as part of the reward: no
   gradient flows through it). Its score-function gradient is an unbiased
   estimate of :math:`-\beta\nabla\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})`.
   GRPO instead subtracts β·k3 from the objective (eq. 9).

The policy update is the clipped surrogate of eq. (7) — the same
:func:`grpo_core.bandit.objective_gradient` with β = 0 — for ``inner_epochs``
steps. PPO implementations usually whiten the advantages over the batch; with
one state and one batch, :math:`(A - \mathrm{mean}A)/\mathrm{std}A` equals
eq. (3) on the shaped rewards for *any* V: whitening makes the critic drop
out (``normalize_advantages=True`` shows it; the default keeps the critic).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_core._validate import (
    boolean,
    nonnegative,
    numpy_array,
    positive,
    positive_int,
    same_shape,
    scalar,
)
from grpo_core.advantages import group_advantages
from grpo_core.bandit.grpo import objective_gradient
from grpo_core.bandit.trainer import BanditTrainer
from grpo_core.config import ClippedUpdate


def kl_penalized_rewards(rewards, logp, ref_logp, beta: float) -> np.ndarray:
    r""":math:`\tilde R_i = R_i - \beta\,(\log\pi(a_i) - \log\pi_\mathrm{ref}(a_i))`: RLHF's KL-in-reward.

    ``logp`` are the log-probabilities of the sampled actions under the
    sampling policy :math:`\pi_{\theta_\mathrm{old}}`; the penalty is the per-sample k1 estimate of
    :math:`\mathrm{KL}(\pi\|\pi_\mathrm{ref})` (chapter eq. 8 uses k3 and puts it in the loss instead).
    """
    rewards = numpy_array(rewards, "rewards", ndim=(1,))
    logp, ref_logp = numpy_array(logp, "logp", ndim=(1,)), numpy_array(ref_logp, "ref_logp", ndim=(1,))
    same_shape(rewards=rewards, logp=logp, ref_logp=ref_logp)
    beta = nonnegative(beta, "beta")
    return rewards - beta * (logp - ref_logp)


def fit_value(value: float, targets, lr: float, steps: int) -> float:
    r"""Fit the scalar critic: ``steps`` SGD steps on :math:`\tfrac12\,\mathrm{mean}_i (V - R_i)^2`.

    Each step is :math:`V \leftarrow V - \mathrm{lr}\,(V - \bar R)`, so the
    result is :math:`\bar R + (1 - \mathrm{lr})^{\mathrm{steps}}(V - \bar R)`:
    an exponential moving average of batch means. ``lr`` must lie in (0, 1]
    (beyond 1 the iteration overshoots the mean; beyond 2 it diverges).
    """
    value = scalar(value, "value")
    targets = numpy_array(targets, "targets", ndim=(1,))
    lr = positive(lr, "lr")
    if lr > 1:
        raise ValueError(f"lr must lie in (0, 1], got {lr}")
    steps = positive_int(steps, "steps")
    for _ in range(steps):
        value -= lr * np.mean(value - targets)
    return float(value)


def ppo_advantages(rewards, value: float, normalize: bool = False, eps: float = 1e-8) -> np.ndarray:
    r"""One-state GAE: :math:`A_i = R_i - V`; with ``normalize``, whitened over the batch.

    Whitening is :math:`(A_i - \mathrm{mean}A)/(\mathrm{std}A + \varepsilon)`,
    which for one state is eq. (3) applied to ``rewards`` — V cancels.
    """
    rewards = numpy_array(rewards, "rewards", ndim=(1,))
    value = scalar(value, "value")
    boolean(normalize, "normalize")
    advantages = rewards - value
    return group_advantages(advantages, eps=eps) if normalize else advantages


@dataclass(frozen=True)
class PPOConfig(ClippedUpdate):
    """The knobs of a bandit PPO step.

    ``batch_size`` rollouts per update, the critic's ``value_lr``/``value_steps``/``value_init``,
    ``normalize_advantages`` and its ``adv_eps``, and the knobs every clipped update shares
    (:class:`~grpo_core.config.ClippedUpdate`; here β weighs the KL folded into the reward).
    """

    #: Rollouts per update (at least 2).
    batch_size: int = 8
    #: The critic's step size, in (0, 1].
    value_lr: float = 0.1
    #: The critic's SGD steps per batch.
    value_steps: int = 4
    #: The critic's value V at the start.
    value_init: float = 0.0
    #: Whiten A = R̃ − V over the batch (the critic then drops out).
    normalize_advantages: bool = False
    #: ε of the whitening's std.
    adv_eps: float = 1e-8

    def __post_init__(self) -> None:
        super().__post_init__()
        positive_int(self.batch_size, "batch_size", minimum=2)
        if positive(self.value_lr, "value_lr") > 1:
            raise ValueError(f"value_lr must lie in (0, 1], got {self.value_lr}")
        positive_int(self.value_steps, "value_steps")
        scalar(self.value_init, "value_init")
        boolean(self.normalize_advantages, "normalize_advantages")
        nonnegative(self.adv_eps, "adv_eps")


@dataclass(frozen=True)
class PPOStep:
    """One PPO update: the batch, the shaped rewards, the critic before/after, the advantages used."""

    #: The batch's actions.
    actions: np.ndarray
    #: Their rewards :math:`R_i`.
    rewards: np.ndarray
    #: R̃_i, the rewards with the KL penalty folded in.
    shaped_rewards: np.ndarray
    #: The critic's V before the update (the baseline used).
    value: float
    #: The critic's V after fitting it to this batch.
    new_value: float
    #: The advantages :math:`A_i` used by the policy update.
    advantages: np.ndarray


class BanditPPO(BanditTrainer):
    """PPO with a scalar critic and KL-in-reward on the bandit (see the module docstring)."""

    config_type = PPOConfig

    def start(self) -> None:
        """The critic at ``value_init``."""
        self.value = float(self.config.value_init)

    def update(self) -> PPOStep:
        r"""Roll out a batch from :math:`\pi_{\theta_\mathrm{old}}`, shape the rewards, compute A = R̃ − V, fit V,
        ascend eq. (7)."""
        cfg = self.config
        actions, rewards = self.draw(cfg.batch_size)
        old_logp, ref_logp = self.sampled_log_probs(actions)
        shaped = kl_penalized_rewards(rewards, old_logp, ref_logp, cfg.beta)
        value = self.value
        advantages = ppo_advantages(shaped, value, cfg.normalize_advantages, cfg.adv_eps)
        self.value = fit_value(value, shaped, cfg.value_lr, cfg.value_steps)
        theta = self.logits.copy()
        for _ in range(cfg.inner_epochs):
            theta += cfg.lr * objective_gradient(
                theta, actions, old_logp, ref_logp, advantages, cfg.eps_low, cfg.eps_high, beta=0.0
            )
        self.logits = theta
        return PPOStep(actions, rewards, shaped, value, self.value, advantages)

    def snapshot(self) -> dict[str, float]:
        """The policy's :meth:`~grpo_core.bandit.trainer.BanditTrainer.snapshot` and the critic's ``value``."""
        return {**super().snapshot(), "value": self.value}
