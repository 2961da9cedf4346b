r"""The chapter's laboratory (§11): GRPO on a 4-armed bandit, gradients by hand.

One fixed prompt, actions A/B/C/D with the reward table
``R = [0.2, 0.9, 0.4, 0.1]`` (B is best) and a softmax policy
:math:`\pi_\theta = \mathrm{softmax}(\theta)`. A GRPO step (§7) freezes
θ_old, computes the group advantages of eq. (3) and takes ``inner_epochs``
steps of gradient ascent on eq. (9) against a frozen π_ref.

The gradient, derived by hand
-----------------------------
With one action per sample, :math:`\nabla_\theta \log\pi_\theta(a) = e_a - \pi_\theta`
(``e_a`` the one-hot vector of ``a``). For sample i with ratio
:math:`r_i = \pi_\theta(a_i)/\pi_{\theta_\mathrm{old}}(a_i)`:

* the clipped term :math:`\min(r_i\hat A_i, \mathrm{clip}(r_i)\hat A_i)` has
  gradient :math:`\hat A_i r_i (e_{a_i} - \pi_\theta)` where the clip is not
  active, and exactly 0 where it is (``r_i > 1+ε_high`` with ``Â_i > 0``, or
  ``r_i < 1-ε_low`` with ``Â_i < 0``), since there it is a constant;
* the k3 term of eq. (8), with :math:`\rho_i = \pi_\mathrm{ref}(a_i)/\pi_\theta(a_i)`,
  has :math:`\partial k_3/\partial\log\pi_\theta(a_i) = 1 - \rho_i`, so its
  gradient is :math:`(1 - \rho_i)(e_{a_i} - \pi_\theta)`.

Together, with :math:`c_i = [\text{not clipped}]\,\hat A_i r_i - \beta(1-\rho_i)`,

.. math:: \nabla_\theta \mathcal J_\mathrm{GRPO} = \frac1G \sum_i c_i\,(e_{a_i} - \pi_\theta)
          = \frac1G\Big(\sum_i c_i e_{a_i} - \pi_\theta \sum_i c_i\Big).

``tests/test_bandit.py`` checks this against torch autograd of
:func:`grpo_core.objective.grpo_objective`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace

import numpy as np

from grpo_core._validate import (
    choice,
    nonnegative,
    numpy_array,
    overflow_checked,
    positive,
    positive_int,
    probabilities,
    same_shape,
    seed_value,
)
from grpo_core.advantages import dr_grpo_advantages, group_advantages, rloo_advantages
from grpo_core.clipping import LOG_RATIO_BOUND, _clip_masks, _ratio, clip_range
from grpo_core.kl import categorical_kl, entropy
from grpo_core.objective import grpo_objective

CHAPTER_REWARDS = (0.2, 0.9, 0.4, 0.1)
ACTION_NAMES = ("A", "B", "C", "D")
ADVANTAGES = {
    "grpo": group_advantages,
    "rloo": rloo_advantages,
    "dr_grpo": dr_grpo_advantages,
}


def _logits(logits, name: str) -> np.ndarray:
    """Policy logits θ, shape (K,) or (prompts, K), as float64."""
    return numpy_array(logits, name, ndim=(1, 2))


def _softmax(logits: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # a logit 1.8e308 below the largest has probability exactly 0
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def _log_softmax(logits: np.ndarray, name: str) -> np.ndarray:
    with np.errstate(over="ignore"):
        shifted = logits - logits.max(axis=-1, keepdims=True)
    if not np.isfinite(shifted).all():
        raise ValueError(f"{name}: log π overflows float64, the spread max - min of the logits exceeds 1.8e308")
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def softmax(logits) -> np.ndarray:
    """π_θ = softmax(θ) over the last axis, computed stably."""
    return _softmax(_logits(logits, "logits"))


def log_softmax(logits) -> np.ndarray:
    """log π_θ, computed stably; logits whose spread exceeds the float64 range are refused (log π would be -inf)."""
    return _log_softmax(_logits(logits, "logits"), "logits")


def _generator(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    return rng


def sample_group(probs, group_size: int, rng: np.random.Generator) -> np.ndarray:
    """Eq. (1): draw ``group_size`` actions i.i.d. from π (one prompt's group)."""
    probs = numpy_array(probs, "probs", ndim=(1,))
    if (probs < 0).any() or (probs > 1).any() or not np.isclose(probs.sum(), 1.0, atol=1e-6):
        raise ValueError("probs must lie in [0, 1] and sum to 1")
    group_size = positive_int(group_size, "group_size")
    return _generator(rng).choice(probs.size, size=group_size, p=probs / probs.sum())


def reward_of(actions, reward_table=CHAPTER_REWARDS) -> np.ndarray:
    """Eq. (2): :math:`R_i = r(q, o_i)`, here a lookup in the bandit's reward table."""
    table = numpy_array(reward_table, "reward_table", ndim=(1,))
    return table[_actions(actions, table.size)]


def state_value(probs, reward_table=CHAPTER_REWARDS) -> float:
    r"""Eq. (4): :math:`V^\pi(q) = \mathbb E_{o\sim\pi}[r(q, o)] = \sum_a \pi(a)\,r(a)`, exactly.

    What a critic would have to learn; the group mean (eq. 5) estimates it.
    """
    probs = np.asarray(probabilities(probs, "probs"), dtype=float)
    table = numpy_array(reward_table, "reward_table", ndim=(1,))
    if table.shape != probs.shape[-1:]:
        raise ValueError(f"reward_table must have one entry per action ({probs.shape[-1]}), got {table.shape}")
    return probs @ table


def _actions(actions, num_actions: int) -> np.ndarray:
    actions = np.asarray(actions)
    if actions.ndim != 1 or actions.size == 0 or not np.issubdtype(actions.dtype, np.integer):
        raise TypeError(
            f"actions must be a non-empty 1-D array of integers, got dtype {actions.dtype}, shape {actions.shape}"
        )
    if actions.min() < 0 or actions.max() >= num_actions:
        raise ValueError(f"actions must lie in [0, {num_actions}), got {actions.min()}..{actions.max()}")
    return actions


def objective_gradient(logits, actions, old_logp, ref_logp, advantages, eps_low=0.2, eps_high=None, beta=0.04):
    """∇_θ of eq. (9) for the softmax bandit, by hand (see the module docstring).

    ``old_logp`` and ``ref_logp`` are log π_θ_old(a_i) and log π_ref(a_i) of the
    sampled actions; returns the gradient with the shape of ``logits`` (K,).
    """
    log_probs = _log_softmax(numpy_array(logits, "logits", ndim=(1,)), "logits")
    actions = _actions(actions, log_probs.size)
    old_logp, ref_logp, advantages = (
        numpy_array(value, name, ndim=(1,))
        for value, name in ((old_logp, "old_logp"), (ref_logp, "ref_logp"), (advantages, "advantages"))
    )
    same_shape(actions=actions, old_logp=old_logp, ref_logp=ref_logp, advantages=advantages)
    low, high = clip_range(eps_low, eps_high)
    beta = nonnegative(beta, "beta")
    return overflow_checked(
        lambda: _objective_gradient(log_probs, actions, old_logp, ref_logp, advantages, low, high, beta),
        "the gradient (advantages or beta too large)",
    )


def _objective_gradient(log_probs, actions, old_logp, ref_logp, advantages, low, high, beta) -> np.ndarray:
    """The kernel: c_i = [not clipped] Â_i r_i - β (1 - ρ_i); (Σ c_i e_{a_i} - π Σ c_i) / G.

    Where a log-ratio lies beyond the clamp of ±20 (grpo_core.clipping), its
    factor is a constant and contributes no gradient, exactly as autograd sees it.
    """
    probs = np.exp(log_probs)
    logp = log_probs[actions]
    ratio = _ratio(logp, old_logp)
    clipped_low, clipped_high = _clip_masks(ratio, advantages, low, high)
    surrogate = np.where(clipped_low | clipped_high, 0.0, advantages * ratio)
    surrogate[np.abs(logp - old_logp) > LOG_RATIO_BOUND] = 0.0
    ref_ratio = _ratio(ref_logp, logp)
    kl = np.where(np.abs(ref_logp - logp) > LOG_RATIO_BOUND, 0.0, 1.0 - ref_ratio)
    coef = surrogate - beta * kl
    return (np.bincount(actions, coef, minlength=probs.size) - probs * coef.sum()) / actions.size


def check_clipped_update(config) -> None:
    """Validate the knobs every clipped bandit update shares: ``eps_low``,
    ``eps_high`` (or ``None``), ``beta``, ``lr`` and ``inner_epochs``."""
    nonnegative(config.eps_low, "eps_low")
    if config.eps_high is not None:
        nonnegative(config.eps_high, "eps_high")
    nonnegative(config.beta, "beta")
    positive(config.lr, "lr")
    positive_int(config.inner_epochs, "inner_epochs")


@dataclass(frozen=True)
class GRPOConfig:
    """The knobs of a bandit GRPO step (the lab's sliders).

    ``group_size`` G, clip ``eps_low``/``eps_high`` (ε of eq. 7; ``None`` for a
    symmetric clip), ``beta`` (β of eq. 9), learning rate ``lr`` and
    ``inner_epochs`` of gradient ascent per group (§7), ``advantage`` in
    {"grpo", "rloo", "dr_grpo"}, ``adv_eps`` (ε of eq. 3).
    """

    group_size: int = 8
    eps_low: float = 0.2
    eps_high: float | None = None
    beta: float = 0.04
    lr: float = 1.0
    inner_epochs: int = 4
    advantage: str = "grpo"
    adv_eps: float = 1e-8

    def __post_init__(self) -> None:
        positive_int(self.group_size, "group_size", minimum=2)
        check_clipped_update(self)
        choice(self.advantage, "advantage", tuple(ADVANTAGES))
        nonnegative(self.adv_eps, "adv_eps")

    def advantages(self, rewards) -> np.ndarray:
        """Â for one group under the chosen variant."""
        if self.advantage == "grpo":
            return group_advantages(rewards, eps=self.adv_eps)
        return ADVANTAGES[self.advantage](rewards)


@dataclass(frozen=True)
class StepResult:
    """Everything one GRPO step on one group shows (the lab's views)."""

    actions: np.ndarray
    rewards: np.ndarray
    advantages: np.ndarray
    ratios: np.ndarray
    clipped: np.ndarray
    old_probs: np.ndarray
    probs: np.ndarray
    ref_probs: np.ndarray
    objective: float
    logits: np.ndarray = field(repr=False)

    @property
    def reward_mean(self) -> float:
        return float(self.rewards.mean())

    @property
    def reward_std(self) -> float:
        return float(self.rewards.std())

    @property
    def zero_variance(self) -> bool:
        return bool(self.rewards.max() == self.rewards.min())

    @property
    def clip_fraction(self) -> float:
        """Fraction of the group whose clip is active at the new policy."""
        return float(self.clipped.mean())

    @property
    def kl(self) -> float:
        """Exact KL(π_θ‖π_ref) of the new policy."""
        return float(categorical_kl(self.probs, self.ref_probs))

    @property
    def entropy(self) -> float:
        return float(entropy(self.probs))


def grpo_step(logits, ref_logits, actions, rewards, config: GRPOConfig = GRPOConfig()) -> StepResult:
    """One GRPO iteration (§7) on one sampled group: freeze θ_old, compute Â
    (eq. 3), ascend eq. (9) for ``config.inner_epochs`` steps of size ``config.lr``.
    """
    if not isinstance(config, GRPOConfig):
        raise TypeError(f"config must be a GRPOConfig, got {type(config).__name__}")
    old_log_probs = _log_softmax(numpy_array(logits, "logits", ndim=(1,)), "logits")
    ref_log_probs = _log_softmax(numpy_array(ref_logits, "ref_logits", ndim=(1,)), "ref_logits")
    if ref_log_probs.shape != old_log_probs.shape:
        raise ValueError(f"ref_logits must have the shape of logits {old_log_probs.shape}, got {ref_log_probs.shape}")
    actions = _actions(actions, old_log_probs.size)
    rewards = numpy_array(rewards, "rewards", ndim=(1,))
    if rewards.shape != actions.shape:
        raise ValueError(f"rewards must have one entry per action, got {rewards.shape} for actions {actions.shape}")
    advantages = config.advantages(rewards)
    old_logp, ref_logp = old_log_probs[actions], ref_log_probs[actions]
    theta = numpy_array(logits, "logits").copy()
    low_bound, high_bound = clip_range(config.eps_low, config.eps_high)
    for epoch in range(config.inner_epochs):
        log_probs = _log_softmax(theta, "logits")
        grad = _objective_gradient(
            log_probs, actions, old_logp, ref_logp, advantages, low_bound, high_bound, config.beta
        )
        with np.errstate(over="ignore", invalid="ignore"):
            theta += config.lr * grad
            diverged = not np.isfinite(np.ptp(theta))
        if diverged:
            raise ValueError(f"config.lr = {config.lr} made the logits overflow at inner epoch {epoch}: lower lr")
    log_probs = _log_softmax(theta, "logits")
    logp = log_probs[actions]
    ratios = _ratio(logp, old_logp)
    low, high = _clip_masks(ratios, advantages, low_bound, high_bound)
    return StepResult(
        actions=actions,
        rewards=rewards,
        advantages=advantages,
        ratios=ratios,
        clipped=low | high,
        old_probs=np.exp(old_log_probs),
        probs=np.exp(log_probs),
        ref_probs=np.exp(ref_log_probs),
        objective=float(
            grpo_objective(logp, old_logp, ref_logp, advantages, config.eps_low, config.eps_high, config.beta)
        ),
        logits=theta,
    )


class BanditTrainer(ABC):
    """A run of one method on the one-prompt bandit: the state every method shares.

    Holds the reward table, the policy logits θ, the frozen reference π_ref
    (captured at :meth:`reset`), a seeded ``numpy.random.Generator``, the
    number of completions drawn and the history of updates. GRPO
    (:class:`BanditGRPO`) and the §8 neighbours (RLOO, PPO, DPO) define
    :meth:`step`. It never imports a widget.
    """

    def __init__(self, rewards=CHAPTER_REWARDS, seed: int = 0, init_logits=None):
        self.reward_table = numpy_array(rewards, "rewards", ndim=(1,))
        if self.reward_table.size < 2:
            raise ValueError("rewards must list at least 2 actions")
        self.init_logits = (
            np.zeros_like(self.reward_table)
            if init_logits is None
            else numpy_array(init_logits, "init_logits", ndim=(1,))
        )
        if self.init_logits.shape != self.reward_table.shape:
            raise ValueError(f"init_logits must have shape {self.reward_table.shape}, got {self.init_logits.shape}")
        self.seed = seed_value(seed)
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Policy back to the start, π_ref ← π_θ, RNG reseeded, counter and history cleared."""
        if seed is not None:
            self.seed = seed_value(seed)
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
        actions = _actions(actions, self.logits.size)
        return log_softmax(self.logits)[actions], log_softmax(self.ref_logits)[actions]

    @abstractmethod
    def step(self):
        """One update of the method."""

    def run(self, steps: int) -> list:
        """Take ``steps`` updates."""
        return [self.step() for _ in range(positive_int(steps, "steps"))]


class BanditGRPO(BanditTrainer):
    """A GRPO run on the bandit: the engine under the lab and the notebooks.

    On top of :class:`BanditTrainer`: the knobs (:class:`GRPOConfig`), the
    pending group (sampled but not yet used for a step) and a way to put π
    anywhere (:meth:`set_policy`, e.g. near-greedy for Property 4.1).
    """

    def __init__(self, rewards=CHAPTER_REWARDS, config: GRPOConfig = GRPOConfig(), seed: int = 0, init_logits=None):
        self.config = config
        super().__init__(rewards, seed, init_logits)

    def reset(self, seed: int | None = None) -> None:
        """Policy back to the start, π_ref ← π_θ, history cleared, RNG reseeded."""
        super().reset(seed)
        self.pending: np.ndarray | None = None

    @property
    def config(self) -> GRPOConfig:
        return self._config

    @config.setter
    def config(self, config: GRPOConfig) -> None:
        if not isinstance(config, GRPOConfig):
            raise TypeError(f"config must be a GRPOConfig, got {type(config).__name__}")
        self._config = config

    def configure(self, **changes) -> None:
        """Change some knobs, e.g. ``run.configure(beta=0.1, group_size=4)``."""
        self.config = replace(self.config, **changes)

    def set_policy(self, probs) -> None:
        """Put π_θ at the given probabilities (π_ref unchanged), e.g. near-greedy."""
        probs = np.asarray(probabilities(probs, "probs"), dtype=float)
        if probs.shape != self.logits.shape:
            raise ValueError(f"probs must have shape {self.logits.shape}, got {probs.shape}")
        self.logits = np.log(probs)
        self.pending = None

    def sample(self) -> tuple[np.ndarray, np.ndarray]:
        """Draw a group of ``config.group_size`` actions from π_θ; return (actions, rewards)."""
        self.pending, rewards = self.draw(self.config.group_size)
        return self.pending, rewards

    def step(self) -> StepResult:
        """A GRPO step on the pending group (sampled first if there is none)."""
        if self.pending is None:
            self.sample()
        actions, self.pending = self.pending, None
        result = grpo_step(self.logits, self.ref_logits, actions, reward_of(actions, self.reward_table), self.config)
        self.logits = result.logits
        self.history.append(result)
        return result
