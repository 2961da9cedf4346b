r"""DPO on the one-prompt bandit (chapter §8): offline preference pairs, no rollouts, no reward model.

Direct Preference Optimization (Rafailov et al., 2023) starts from the
KL-regularised RL problem :math:`\max_\pi \mathbb E_\pi[r] - \beta_\mathrm{RL}\,\mathrm{KL}(\pi\|\pi_\mathrm{ref})`,
whose optimum is :math:`\pi^*(a) \propto \pi_\mathrm{ref}(a)\,e^{r(a)/\beta_\mathrm{RL}}`
(:func:`kl_regularized_optimum`). Solving for the reward,
:math:`r(a) = \beta\log\frac{\pi(a)}{\pi_\mathrm{ref}(a)} + \text{const}`, and
plugging it into the Bradley–Terry model of preferences,
:math:`P(a \succ b) = \sigma(r(a) - r(b))`, turns RL into a logistic
regression on pairs (chosen :math:`y_w`, rejected :math:`y_l`):

.. math:: \mathcal L_\mathrm{DPO} = -\log\sigma\Big(\beta\big[(\log\pi_\theta(y_w) - \log\pi_\mathrm{ref}(y_w))
          - (\log\pi_\theta(y_l) - \log\pi_\mathrm{ref}(y_l))\big]\Big).

The gradient, by hand
---------------------
Call the bracket times β the margin :math:`h`. For :math:`\pi_\theta = \mathrm{softmax}(\theta)`,
:math:`\nabla_\theta[\log\pi_\theta(y_w) - \log\pi_\theta(y_l)] = (e_{y_w} - \pi_\theta) - (e_{y_l} - \pi_\theta)
= e_{y_w} - e_{y_l}` (the π terms cancel: the log-ratio is just :math:`\theta_{y_w} - \theta_{y_l}`, so
the loss is a logistic regression in θ, convex), and :math:`\frac{d}{dh}[-\log\sigma(h)] = -\sigma(-h)`, so

.. math:: \nabla_\theta\mathcal L_\mathrm{DPO} = -\beta\,\sigma(-h)\,(e_{y_w} - e_{y_l}):

each pair moves probability from the rejected to the chosen arm, weighted by
how wrong the current implicit reward still ranks them. ``tests/unit/test_dpo.py``
checks this against torch autograd.

If the pairs are labelled by a Bradley–Terry model with temperature τ,
:math:`P(a\succ b) = \sigma((r_a - r_b)/\tau)`, the population optimum of the
loss is :math:`\pi \propto \pi_\mathrm{ref}\,e^{r/(\beta\tau)}`: DPO with β on
such labels targets the same policy as KL-regularised RL with
:math:`\beta_\mathrm{RL} = \beta\tau`. With deterministic labels (τ → 0) the
margins can grow without bound and the logits diverge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_core import _kernels as K
from grpo_core._validate import entries, nonnegative, numpy_array, positive, positive_int, probabilities, same_shape
from grpo_core.bandit.env import check_rng, log_softmax
from grpo_core.bandit.trainer import BanditTrainer


def preference_probability(reward_a, reward_b, temperature: float = 0.0) -> np.ndarray:
    r"""Bradley–Terry: :math:`P(a \succ b) = \sigma((r_a - r_b)/\tau)`.

    ``temperature = 0`` is the deterministic limit: 1 if :math:`r_a > r_b`, 0 if
    :math:`r_a < r_b`, 1/2 on a tie.
    """
    reward_a, reward_b = numpy_array(reward_a, "reward_a"), numpy_array(reward_b, "reward_b")
    same_shape(reward_a=reward_a, reward_b=reward_b)
    temperature = nonnegative(temperature, "temperature")
    diff = reward_a - reward_b
    if temperature == 0:
        return 0.5 * (1.0 + np.sign(diff))
    with np.errstate(over="ignore"):  # a margin of 2e9 over a tiny τ: exp(-inf) = 0, P exactly 0 or 1
        return np.exp(-np.logaddexp(0.0, -diff / temperature))


def preference_pairs(rewards, ref_probs, num_pairs: int, rng: np.random.Generator, temperature: float = 0.0):
    r"""An offline preference dataset: ``num_pairs`` rows ``[chosen, rejected]``.

    Each pair is two *different* completions drawn from :math:`\pi_\mathrm{ref}` without
    replacement (the SFT model's samples, as in DPO), labelled by
    :func:`preference_probability` of their rewards: the reward table is
    consulted here, once, and never during training. ``ref_probs`` may hold
    exact zeros (actions never drawn), but at least two actions need a
    positive probability.
    """
    rewards = numpy_array(rewards, "rewards", ndim=(1,))
    ref_probs = probabilities(ref_probs, "ref_probs")
    if ref_probs.shape != rewards.shape or rewards.size < 2:
        raise ValueError(f"ref_probs must have the shape of rewards (>= 2 actions), got {ref_probs.shape}")
    if np.count_nonzero(ref_probs) < 2:
        raise ValueError("ref_probs must give at least 2 actions a positive probability (a pair holds two)")
    num_pairs = positive_int(num_pairs, "num_pairs")
    rng = check_rng(rng)
    temperature = nonnegative(temperature, "temperature")
    with np.errstate(divide="ignore"):  # log 0 = -inf: an action π_ref never draws
        return _preference_pairs(rewards, np.log(ref_probs), num_pairs, rng, temperature)


def _preference_pairs(rewards, ref_log_probs, num_pairs: int, rng: np.random.Generator, temperature: float):
    r"""The kernel of :func:`preference_pairs`, from :math:`\log\pi_\mathrm{ref}` (finite for a trainer's
    reference, whose probabilities may have underflowed to 0 while their logarithms have not)."""
    # Gumbel-top-2 = drawing two actions from π_ref one after the other, without replacement
    keys = ref_log_probs + rng.gumbel(size=(num_pairs, rewards.size))
    first, second = np.argsort(-keys, axis=1)[:, :2].T
    first_wins = rng.random(num_pairs) < preference_probability(rewards[first], rewards[second], temperature)
    return np.where(first_wins[:, None], np.stack([first, second], 1), np.stack([second, first], 1))


def _pairs(pairs, num_actions: int) -> np.ndarray:
    pairs = np.asarray(entries(pairs, "pairs"))
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0 or not np.issubdtype(pairs.dtype, np.integer):
        raise TypeError(f"pairs must be a non-empty (N, 2) integer array [chosen, rejected], got {pairs.shape}")
    if pairs.min() < 0 or pairs.max() >= num_actions:
        raise ValueError(f"pairs must hold actions in [0, {num_actions}), got {pairs.min()}..{pairs.max()}")
    if (pairs[:, 0] == pairs[:, 1]).any():
        raise ValueError("pairs: chosen and rejected must differ in every row")
    return pairs


def _log_ratio(logits, ref_logits) -> np.ndarray:
    r""":math:`\log\pi_\theta(a) - \log\pi_\mathrm{ref}(a)` of every action, both logit vectors validated by name."""
    log_probs = log_softmax(numpy_array(logits, "logits", ndim=(1,)))
    ref_log_probs = log_softmax(numpy_array(ref_logits, "ref_logits", ndim=(1,)), "ref_logits")
    if ref_log_probs.shape != log_probs.shape:
        raise ValueError(f"ref_logits must have the shape of logits {log_probs.shape}, got {ref_log_probs.shape}")
    return log_probs - ref_log_probs


def _margins(log_ratio, pairs, beta: float) -> np.ndarray:
    with np.errstate(over="ignore"):
        margins = beta * (log_ratio[pairs[:, 0]] - log_ratio[pairs[:, 1]])
    if not np.isfinite(margins).all():
        raise ValueError(f"beta = {beta} times a log-ratio margin overflows float64: lower beta")
    return margins


def _checked(logits, ref_logits, pairs, beta) -> tuple[np.ndarray, np.ndarray, int]:
    """The margins :math:`h_n` of the validated inputs, the validated pairs and the number of actions."""
    log_ratio = _log_ratio(logits, ref_logits)
    pairs = _pairs(pairs, log_ratio.size)
    return _margins(log_ratio, pairs, positive(beta, "beta")), pairs, log_ratio.size


def dpo_margins(logits, ref_logits, pairs, beta: float) -> np.ndarray:
    r"""The margin per pair,
    :math:`h = \beta[(\log\pi(y_w) - \log\pi_\mathrm{ref}(y_w)) - (\log\pi(y_l) - \log\pi_\mathrm{ref}(y_l))]`."""
    return _checked(logits, ref_logits, pairs, beta)[0]


def dpo_loss(logits, ref_logits, pairs, beta: float) -> float:
    r"""The DPO loss :math:`\mathrm{mean}_n\,[-\log\sigma(h_n)]` (see the module docstring), computed stably."""
    return float(np.logaddexp(0.0, -_checked(logits, ref_logits, pairs, beta)[0]).mean())


def dpo_gradient(logits, ref_logits, pairs, beta: float) -> np.ndarray:
    r""":math:`\nabla_\theta` of :func:`dpo_loss`, by hand (module docstring).

    :math:`\mathrm{mean}_n[-\beta\,\sigma(-h_n)(e_{y_w} - e_{y_l})]`. Takes what
    :func:`dpo_loss` takes (NumPy, torch, sequences) and returns a NumPy array.
    """
    margins, pairs, size = _checked(logits, ref_logits, pairs, beta)
    weight = float(beta) * np.exp(-np.logaddexp(0.0, margins))  # β σ(-h), without overflow
    chosen, rejected = pairs.T
    return (np.bincount(rejected, weight, minlength=size) - np.bincount(chosen, weight, minlength=size)) / margins.size


def implicit_rewards(logits, ref_logits, beta: float) -> np.ndarray:
    r"""DPO's implicit reward :math:`\hat r(a) = \beta\log(\pi_\theta(a)/\pi_\mathrm{ref}(a))` of every action."""
    log_ratio = _log_ratio(logits, ref_logits)
    beta = positive(beta, "beta")
    with np.errstate(over="ignore"):
        rewards = beta * log_ratio
    if not np.isfinite(rewards).all():
        raise ValueError(f"beta = {beta} times log π/π_ref overflows float64: lower beta")
    return rewards


def kl_regularized_optimum(ref_probs, rewards, beta: float) -> np.ndarray:
    r""":math:`\pi^*(a) = \pi_\mathrm{ref}(a)\,e^{r(a)/\beta} / Z`.

    The maximiser of :math:`\mathbb E_\pi[r] - \beta\,\mathrm{KL}(\pi\|\pi_\mathrm{ref})` (Rafailov et al., eq. 4).
    Computed in log space; ``ref_probs`` must be > 0 (π* is 0 wherever :math:`\pi_\mathrm{ref}` is).
    """
    ref_probs = probabilities(ref_probs, "ref_probs", positive=True)
    rewards = numpy_array(rewards, "rewards", ndim=(1,))
    if rewards.shape != ref_probs.shape:
        raise ValueError(f"rewards must have the shape of ref_probs {ref_probs.shape}, got {rewards.shape}")
    beta = positive(beta, "beta")
    with np.errstate(over="ignore"):
        logits = np.log(ref_probs) + rewards / beta
    if not np.isfinite(logits).all() or not np.isfinite(np.ptp(logits)):
        raise ValueError(f"rewards / beta overflows float64 (beta = {beta}): raise beta or rescale the rewards")
    return np.exp(log_softmax(logits, "rewards / beta"))


@dataclass(frozen=True)
class DPOConfig:
    """The knobs of bandit DPO: dataset size ``num_pairs`` and label ``temperature`` τ,
    the DPO ``beta``, ``lr``, and ``batch_size`` pairs per step (``None``: the whole dataset)."""

    #: Size of the offline preference dataset.
    num_pairs: int = 64
    #: τ of the Bradley–Terry labels (0 for deterministic labels).
    temperature: float = 0.1
    #: DPO's β.
    beta: float = 0.4
    #: Step size of gradient descent on the DPO loss.
    lr: float = 1.0
    #: Pairs per step (``None`` for the whole dataset).
    batch_size: int | None = None

    def __post_init__(self) -> None:
        positive_int(self.num_pairs, "num_pairs")
        nonnegative(self.temperature, "temperature")
        positive(self.beta, "beta")
        positive(self.lr, "lr")
        if self.batch_size is not None:
            positive_int(self.batch_size, "batch_size")


@dataclass(frozen=True)
class DPOStep:
    """One DPO update: the indices of the pairs used and their loss before the step."""

    #: Indices of the pairs used.
    batch: np.ndarray
    #: Their DPO loss before the step.
    loss: float


class BanditDPO(BanditTrainer):
    r"""DPO on the bandit.

    :meth:`start` draws the offline dataset from :math:`\pi_\mathrm{ref}` (that is all the sampling
    DPO does: ``samples_drawn = 2 * num_pairs``); :meth:`update` is a gradient
    step on a batch of pairs.
    """

    config_type = DPOConfig

    def start(self) -> None:
        r"""Draw and label the pair dataset from :math:`\pi_\mathrm{ref}`."""
        cfg = self.config
        ref_log_probs = K.log_softmax(self.ref_logits)
        self.pairs = _preference_pairs(self.reward_table, ref_log_probs, cfg.num_pairs, self.rng, cfg.temperature)
        self.samples_drawn = 2 * cfg.num_pairs

    def update(self) -> DPOStep:
        """Gradient descent on :func:`dpo_loss` over the whole dataset, or a seeded batch of ``batch_size`` pairs."""
        cfg = self.config
        if cfg.batch_size is None:
            batch = np.arange(cfg.num_pairs)
        else:
            batch = self.rng.integers(0, cfg.num_pairs, size=cfg.batch_size)
        pairs = self.pairs[batch]
        loss = dpo_loss(self.logits, self.ref_logits, pairs, cfg.beta)
        self.logits = self.logits - cfg.lr * dpo_gradient(self.logits, self.ref_logits, pairs, cfg.beta)
        return DPOStep(batch, loss)
