"""The state and the flow every bandit method shares (chapter §8): one prompt, one softmax policy."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from grpo_core._validate import finite_array, positive_int
from grpo_core.bandit.env import (
    CHAPTER_REWARDS,
    check_actions,
    log_softmax,
    reward_of,
    sample_group,
    softmax,
    state_value,
)


class BanditTrainer(ABC):
    """A run of one method on the one-prompt bandit: the state every method shares.

    Holds the reward table, the policy logits θ, the frozen reference π_ref
    (captured at :meth:`reset`), a seeded ``numpy.random.Generator``, the
    number of completions drawn and the history of updates. GRPO
    (:class:`~grpo_core.bandit.grpo.BanditGRPO`) and the §8 neighbours (RLOO, PPO, DPO) define
    :meth:`step`. It never imports a widget.
    """

    def __init__(self, rewards=CHAPTER_REWARDS, seed: int = 0, init_logits=None):
        self.reward_table = np.asarray(finite_array(rewards, "rewards", ndim=(1,)), dtype=float)
        if self.reward_table.size < 2:
            raise ValueError("rewards must list at least 2 actions")
        self.init_logits = (
            np.zeros_like(self.reward_table)
            if init_logits is None
            else np.asarray(finite_array(init_logits, "init_logits", ndim=(1,)), dtype=float)
        )
        if self.init_logits.shape != self.reward_table.shape:
            raise ValueError(f"init_logits must have shape {self.reward_table.shape}, got {self.init_logits.shape}")
        self.seed = positive_int(seed, "seed", minimum=0)
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Policy back to the start, π_ref ← π_θ, RNG reseeded, counter and history cleared."""
        if seed is not None:
            self.seed = positive_int(seed, "seed", minimum=0)
        self.logits = self.init_logits.copy()
        self.ref_logits = self.logits.copy()
        self.rng = np.random.default_rng(self.seed)
        self.samples_drawn = 0
        self.history: list = []

    @property
    def probs(self) -> np.ndarray:
        return softmax(self.logits)

    @property
    def ref_probs(self) -> np.ndarray:
        return softmax(self.ref_logits)

    @property
    def expected_reward(self) -> float:
        """V^π(q) of the current policy, eq. (4), computed exactly."""
        return float(state_value(self.probs, self.reward_table))

    def draw(self, num_samples: int) -> tuple[np.ndarray, np.ndarray]:
        """Eqs. (1)-(2): draw ``num_samples`` actions from π_θ, count them, return (actions, rewards)."""
        actions = sample_group(self.probs, num_samples, self.rng)
        self.samples_drawn += actions.size
        return actions, reward_of(actions, self.reward_table)

    def sampled_log_probs(self, actions) -> tuple[np.ndarray, np.ndarray]:
        """log π_θ(a_i) and log π_ref(a_i) of the given actions."""
        actions = check_actions(actions, self.logits.size)
        return log_softmax(self.logits)[actions], log_softmax(self.ref_logits)[actions]

    @abstractmethod
    def step(self):
        """One update of the method."""

    def run(self, steps: int) -> list:
        """Take ``steps`` updates."""
        return [self.step() for _ in range(positive_int(steps, "steps"))]
