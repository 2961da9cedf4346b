r"""The pieces §9's failure modes need that eqs. (1)–(9) do not already give.

* :func:`verifier_rewards` — binary RLVR rewards :math:`R_i \in \{0, 1\}` with a
  success probability per arm, so that groups can come back all-correct or
  all-wrong (Property 4.1);
* :func:`noisy_reward_model` — a learned reward model's score: the true reward
  plus Gaussian noise, and optionally one bad arm that is sometimes scored
  very high (the "lucky" completion of §9's reward-hacking item);
* :func:`~grpo_core.advantages.std_floor_advantages` — eq. (3) with the std clamped from below, one
  mitigation of std collapse;
* :class:`PromptSetGRPO` — GRPO over several prompts of different difficulty,
  with three ways of treating zero-variance groups: keep them in the batch
  mean, mask them out of it, or DAPO's dynamic sampling (Yu et al., 2025),
  which drops them and draws new groups until the batch is full, counting
  every sample it spends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_core._validate import (
    choice,
    nonnegative,
    numpy_array,
    positive_int,
    scalar,
    unit_interval,
)
from grpo_core.advantages import zero_std_fraction, zero_std_mask
from grpo_core.bandit.env import check_actions, check_rng, log_softmax, sample_group
from grpo_core.bandit.grpo import GRPOConfig, objective_gradient
from grpo_core.bandit.trainer import BanditTrainer


def _success_probs(success_probs, ndim: tuple[int, ...]) -> np.ndarray:
    success_probs = numpy_array(success_probs, "success_probs", ndim=ndim)
    if (success_probs < 0).any() or (success_probs > 1).any():
        raise ValueError("success_probs must lie in [0, 1]")
    return success_probs


def verifier_rewards(actions, success_probs, rng: np.random.Generator) -> np.ndarray:
    r"""Binary rewards: :math:`R_i = 1` with probability ``success_probs[a_i]``, else 0 (eq. 2, RLVR)."""
    success_probs = _success_probs(success_probs, (1,))
    actions = check_actions(actions, success_probs.size)
    return (check_rng(rng).random(actions.size) < success_probs[actions]).astype(float)


def noisy_reward_model(
    actions,
    true_rewards,
    rng: np.random.Generator,
    noise_std: float,
    lucky_action: int | None = None,
    lucky_prob: float = 0.0,
    lucky_reward: float = 0.0,
) -> np.ndarray:
    r"""A reward model's score: :math:`R_i = r(a_i) + \sigma\,\xi_i`, :math:`\xi_i \sim \mathcal N(0, 1)`.

    If ``lucky_action`` is given, each of its samples is instead scored
    ``lucky_reward`` with probability ``lucky_prob``: a bad completion the
    reward model sometimes loves.
    """
    true_rewards = numpy_array(true_rewards, "true_rewards", ndim=(1,))
    actions = check_actions(actions, true_rewards.size)
    noise_std = nonnegative(noise_std, "noise_std")
    lucky_prob = unit_interval(lucky_prob, "lucky_prob")
    lucky_reward = scalar(lucky_reward, "lucky_reward")
    rng = check_rng(rng)
    scores = true_rewards[actions] + noise_std * rng.standard_normal(actions.size)
    if lucky_action is not None:
        positive_int(lucky_action, "lucky_action", minimum=0, maximum=true_rewards.size - 1)
        lucky = (actions == lucky_action) & (rng.random(actions.size) < lucky_prob)
        scores = np.where(lucky, lucky_reward, scores)
    return scores


ZERO_STD_HANDLING = ("keep", "mask", "resample")


@dataclass(frozen=True)
class PromptSetStep:
    """One batch update of :class:`PromptSetGRPO`.

    ``prompts``/``actions``/``rewards`` are the groups the update used;
    ``zero_std_fraction`` is measured on the first pass (one group per prompt),
    before any group is dropped; ``groups_drawn`` counts every group sampled,
    kept or not, so ``samples_drawn = groups_drawn * G``.
    """

    #: The prompt of each group in the batch.
    prompts: np.ndarray
    #: The batch's actions, shape (groups, G).
    actions: np.ndarray
    #: Their binary rewards, shape (groups, G).
    rewards: np.ndarray
    #: Fraction of zero-variance groups in the first pass.
    zero_std_fraction: float
    #: Every group sampled in this step, kept or not.
    groups_drawn: int
    #: groups_drawn × G.
    samples_drawn: int


class PromptSetGRPO(BanditTrainer):
    r"""GRPO on P prompts at once, binary rewards, one softmax policy per prompt.

    Prompt p has per-arm success probabilities ``success_probs[p]``. Each step
    draws one group per prompt (the first pass), then forms the batch and
    ascends :math:`\frac1n\sum_{g\in\text{batch}} \mathcal J_\mathrm{GRPO}^{(g)}`
    (eq. 9 per group) for ``config.inner_epochs`` steps of size ``config.lr``:

    ``"keep"``
        the batch is the first pass and ``n = P``. Zero-variance groups have
        Â = 0, so they add nothing to the clipped term — but they still count
        in ``n`` and (if β > 0) still pull towards :math:`\pi_\mathrm{ref}` through their KL term.
    ``"mask"``
        zero-variance groups are dropped from the batch and from ``n``. With
        β = 0 the sum is unchanged and only ``n`` shrinks: masking is a larger
        step for the groups that carry signal, nothing more.
    ``"resample"``
        DAPO's dynamic sampling: zero-variance groups are dropped and new
        groups are drawn for prompts picked uniformly at random, each kept only
        if its rewards vary, until the batch holds P groups or ``max_groups``
        groups have been drawn in this step; ``n`` is the number kept.

    If no group in the batch carries signal (``n = 0``), the step changes nothing.
    """

    config_type = GRPOConfig
    reward_ndim = 2

    def __init__(
        self,
        success_probs,
        config: GRPOConfig | None = None,
        zero_std: str = "keep",
        seed: int = 0,
        max_groups: int | None = None,
    ):
        success_probs = _success_probs(success_probs, (2,))
        if success_probs.shape[1] < 2:
            raise ValueError("success_probs must list at least 2 arms per prompt")
        super().__init__(success_probs, config, seed)
        self.zero_std = choice(zero_std, "zero_std", ZERO_STD_HANDLING)
        num_prompts = self.reward_table.shape[0]
        self.max_groups = (
            16 * num_prompts if max_groups is None else positive_int(max_groups, "max_groups", minimum=num_prompts)
        )

    @property
    def success_probs(self) -> np.ndarray:
        """Per prompt, each arm's probability of R = 1 (the reward table of binary rewards)."""
        return self.reward_table

    @property
    def expected_reward(self) -> float:
        """The success rate averaged over the prompts, exactly (eq. 4 per prompt, then the mean)."""
        return float(self.success_rate.mean())

    @property
    def success_rate(self) -> np.ndarray:
        r"""The probability of R = 1 for each prompt under the current policy, :math:`\sum_a \pi(a\mid p)\,s_p(a)`,
        exactly."""
        return (self.probs * self.success_probs).sum(axis=-1)

    def _draw_group(self, prompt: int) -> tuple[int, np.ndarray, np.ndarray]:
        actions = sample_group(self.probs[prompt], self.config.group_size, self.rng)
        return prompt, actions, verifier_rewards(actions, self.success_probs[prompt], self.rng)

    def _batch(self) -> tuple[list, float, int]:
        groups = [self._draw_group(prompt) for prompt in range(len(self.logits))]
        first_pass = zero_std_fraction(np.array([rewards for _, _, rewards in groups]))
        drawn = len(groups)
        if self.zero_std != "keep":
            groups = [group for group in groups if not zero_std_mask(group[2])]
        if self.zero_std == "resample":
            while len(groups) < len(self.logits) and drawn < self.max_groups:
                group = self._draw_group(int(self.rng.integers(len(self.logits))))
                drawn += 1
                if not zero_std_mask(group[2]):
                    groups.append(group)
        return groups, first_pass, drawn

    def update(self) -> PromptSetStep:
        """Draw the batch (see the class docstring) and ascend the batch mean of eq. (9)."""
        cfg = self.config
        groups, first_pass, drawn = self._batch()
        old_log_probs, ref_log_probs = log_softmax(self.logits), log_softmax(self.ref_logits)
        theta = self.logits.copy()
        for _ in range(cfg.inner_epochs if groups else 0):
            grad = np.zeros_like(theta)
            for prompt, actions, rewards in groups:
                grad[prompt] += objective_gradient(
                    theta[prompt],
                    actions,
                    old_log_probs[prompt, actions],
                    ref_log_probs[prompt, actions],
                    cfg.advantages(rewards),
                    cfg.eps_low,
                    cfg.eps_high,
                    cfg.beta,
                )
            theta += cfg.lr * grad / len(groups)
        self.logits = theta
        self.samples_drawn += drawn * cfg.group_size
        shape = (len(groups), cfg.group_size)
        return PromptSetStep(
            prompts=np.array([prompt for prompt, _, _ in groups], dtype=int),
            actions=np.array([actions for _, actions, _ in groups], dtype=int).reshape(shape),
            rewards=np.array([rewards for _, _, rewards in groups], dtype=float).reshape(shape),
            zero_std_fraction=first_pass,
            groups_drawn=drawn,
            samples_drawn=drawn * cfg.group_size,
        )
