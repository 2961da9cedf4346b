r"""The unchecked kernels: each formula of the chapter once, on values the public functions have validated.

A public function checks its arguments (:mod:`grpo_core._validate`) and calls
one of these; a trainer whose state is already valid (the bandit's θ, its
sampled actions) calls them directly, so each value is checked once, where it
enters the package. They act element-wise on NumPy arrays and torch tensors
alike (:func:`namespace` picks the library; autograd flows through the torch
path) and raise nothing: a caller that passes unchecked
values gets whatever NumPy or torch makes of them.

Every log-ratio is clamped to ±``LOG_RATIO_BOUND`` before it is exponentiated,
the bound of verl 0.9.1 (``compute_policy_loss`` and ``kl_penalty_forward`` in
``verl/trainer/ppo/core_algos.py``: ``torch.clamp(..., min=-20.0, max=20.0)``):
a ratio stays in :math:`[e^{-20}, e^{20}]` instead of overflowing, and its
gradient is 0 beyond the bound. A NumPy difference of finite log-probs beyond
the float range (1e308 - (-1e308)) is ±inf, which the clamp makes ±20, the value
the clamp gives any log-ratio beyond it; its overflow warning is silenced.
"""

from __future__ import annotations

import math
import sys

import numpy as np


def is_torch(x) -> bool:
    """True for a ``torch.Tensor`` (checked without importing torch: it is imported only when a tensor is passed).

    While another thread imports torch, the module is in ``sys.modules`` before it has a ``Tensor``; no tensor
    exists yet, so ``x`` is none (the grader checks two submissions at once, in two threads)."""
    tensor = getattr(sys.modules.get("torch"), "Tensor", None)
    return tensor is not None and isinstance(x, tensor)


def namespace(x):
    """The module whose ``exp``, ``log``, ``minimum``, ``clip`` act on ``x``: NumPy, or torch for a tensor."""
    return sys.modules["torch"] if is_torch(x) else np


#: The bound on every log-ratio before it is exponentiated, ±20 as in verl 0.9.1, so a ratio stays below :math:`e^{20}`.
LOG_RATIO_BOUND = 20.0
#: The KL terms β multiplies in eq. (9): k3 (eq. 8), r·k3 (TRL's ``use_bias_correction_kl``), k3 with k2's gradient.
KL_ESTIMATORS = ("k3", "k3_ratio", "k3_plus")


def clamped(log_ratio):
    """The log-ratio clamped to ±``LOG_RATIO_BOUND`` (verl's bound), before it is exponentiated."""
    return namespace(log_ratio).clip(log_ratio, -LOG_RATIO_BOUND, LOG_RATIO_BOUND)


def log_ratio(top, bottom):
    r""":math:`\log(\pi_\mathrm{top}/\pi_\mathrm{bottom}) = \mathrm{top} - \mathrm{bottom}`, clamped to ±20."""
    if is_torch(top):
        return clamped(top - bottom)
    with np.errstate(over="ignore"):  # ±inf beyond the float range, clamped to ±20 like any log-ratio beyond 20
        return clamped(top - bottom)


def ratio(logp, old_logp):
    r"""Eq. (6): :math:`r = \exp(\log\pi_\theta - \log\pi_{\theta_\mathrm{old}})`, the log-ratio clamped."""
    return namespace(logp).exp(log_ratio(logp, old_logp))


def surrogate(r, advantages, low: float, high: float, delta: float | None):
    r"""Eq. (7): :math:`\min(r\hat A,\ \mathrm{clip}(r, \mathrm{low}, \mathrm{high})\hat A)`, the unclipped branch
    capped at δ if given."""
    xp = namespace(r)
    unclipped = r if delta is None else xp.clip(r, None, delta)
    return xp.minimum(unclipped * advantages, xp.clip(r, low, high) * advantages)


def clip_masks(r, advantages, low: float, high: float):
    """Where eq. (7)'s clip is active: ``r < low`` with Â < 0, and ``r > high`` with Â > 0."""
    return (r < low) & (advantages < 0), (r > high) & (advantages > 0)


def k3(log_rho):
    r"""Eq. (8): :math:`k_3 = \rho - \log\rho - 1` from the clamped :math:`\log\rho`, with ``expm1``: exactly 0
    where the log-probs agree."""
    return namespace(log_rho).expm1(log_rho) - log_rho


def k3_plus(log_rho):
    r"""k3's value with k2 = :math:`\tfrac12(\log\rho)^2`'s gradient (straight-through; NumPy: the value)."""
    value = k3(log_rho)
    if not is_torch(value):
        return value
    k2 = 0.5 * log_rho**2
    return (k2 - k2.detach()) + value.detach()


def kl_term(estimator: str, log_rho, r):
    r"""The per-sample KL term of eq. (9), from the clamped :math:`\log\rho = \log\pi_\mathrm{ref} - \log\pi_\theta`:
    k3, :math:`r\,k_3` (``"k3_ratio"``) or k3 with k2's gradient (``"k3_plus"``)."""
    if estimator == "k3_plus":
        return k3_plus(log_rho)
    return r * k3(log_rho) if estimator == "k3_ratio" else k3(log_rho)


def clip_objective(logp, old_logp, advantages, low, high, delta):
    r"""Eq. (7) with one action per sample: :math:`\mathrm{mean}(\min(r\hat A, \mathrm{clip}(r)\hat A))`."""
    return overall_mean(surrogate(ratio(logp, old_logp), advantages, low, high, delta))


def grpo_objective(logp, old_logp, ref_logp, advantages, low, high, beta, estimator, delta):
    r"""Eq. (9) with one action per sample: :math:`\mathrm{mean}(\min(r\hat A, \mathrm{clip}(r)\hat A))
    - \beta\,\mathrm{mean}(\mathrm{KL\ term})`."""
    r = ratio(logp, old_logp)
    kl = kl_term(estimator, log_ratio(ref_logp, logp), r)
    return overall_mean(surrogate(r, advantages, low, high, delta)) - beta * overall_mean(kl)


def power_of_two(values, axis) -> np.ndarray:
    """A power of two ``s`` with ``max|values| / s`` in [1, 2) (1 for all-zero values).

    Dividing by it is exact, and every step of a mean, a sum or eq. (3)
    commutes with it bit for bit, so values can be brought near 1 before they
    are summed (no overflow for 1e308, no underflow of a variance for 1e-200)
    without changing any result that did not overflow.
    """
    peak = np.abs(values).max(axis=axis, keepdims=True)
    return np.where(peak > 0, np.ldexp(1.0, np.frexp(peak)[1] - 1), 1.0)


def unit(peak: float) -> float:
    """A power of two ``s`` with ``peak / s`` in [1, 2) (1 for 0): dividing by it is exact."""
    return math.ldexp(1.0, math.frexp(peak)[1] - 1) if 0 < peak < math.inf else 1.0


def overall_mean(values):
    """The mean of all entries of a NumPy array or tensor, summed at a power-of-two scale: finite whenever the
    mean is representable, bit for bit ``values.mean()`` wherever that did not overflow."""
    scale = unit(float(abs(values.detach() if is_torch(values) else values).max()))
    return (values / scale).mean() * scale


def mean(values, axis: int = -1):
    """The mean of finite NumPy values over ``axis``, taken at a power-of-two scale: finite whenever the mean is
    representable, bit for bit ``values.mean(axis)`` wherever that did not overflow."""
    scale = power_of_two(values, axis)
    return ((values / scale).mean(axis=axis, keepdims=True) * scale).squeeze(axis)


def clamped_if_needed(log_ratio, peak: float):
    """:func:`clamped`, skipped with its backward pass when the largest magnitude ``peak`` is within the bound."""
    return log_ratio if peak <= LOG_RATIO_BOUND else clamped(log_ratio)


def sequence_log_ratio(log_ratio, peak: float, lengths):
    """GSPO's log-ratio of each completion, shape ``(B, 1)``: its masked token log-ratios summed over its
    ``lengths`` tokens, then clamped.

    The rows are summed at the power-of-two scale of ``peak`` (the largest
    magnitude), so a sum of finite terms never overflows to ±inf (nor
    ``inf - inf`` to NaN); dividing by a power of two is exact, so any sum that
    did not overflow is unchanged bit for bit.
    """
    scale = unit(peak)
    return clamped((log_ratio / scale).sum(-1, keepdim=True) / lengths.unsqueeze(-1) * scale)


def std(values) -> float:
    """The (population) std of finite NumPy values, taken at a power-of-two scale like :func:`mean`."""
    scale = power_of_two(values, None)
    return float((values / scale).std() * scale.item())


# The softmax policy of the bandit, :math:`\pi_\theta = \mathrm{softmax}(\theta)`, over the last axis.


def softmax(logits):
    r""":math:`\pi_\theta`; a logit more than 745 below the largest has probability exactly 0."""
    with np.errstate(over="ignore"):  # a logit 1.8e308 below the largest: exp(-inf) = 0
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def log_softmax(logits):
    r""":math:`\log\pi_\theta`, finite wherever the logits' spread is (an exact-zero probability has a finite log)."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def sample(probs, size: int, rng):
    r"""Eq. (1): ``size`` actions drawn i.i.d. from π with the NumPy generator ``rng``."""
    return rng.choice(probs.size, size=size, p=probs / probs.sum())


def reinforce(probs, actions, advantages):
    r"""The REINFORCE estimate :math:`\frac1G\sum_i \hat A_i (e_{a_i} - \pi_\theta)` of a softmax policy."""
    return (np.bincount(actions, advantages, minlength=probs.size) - probs * advantages.sum()) / actions.size


def entropy(p):
    r""":math:`H(p) = -\sum_a p_a \log p_a` over the last axis, with :math:`0\log 0 = 0`."""
    return -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(axis=-1)


def policy_kl(logits, ref_logits):
    r"""The exact :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref}) = \sum_a \pi_\theta(a)(\log\pi_\theta(a) -
    \log\pi_\mathrm{ref}(a))` of two softmax policies, from their logits: finite also where a probability has
    underflowed to 0 (its logarithm has not)."""
    log_probs = log_softmax(logits)
    terms = np.exp(log_probs) * (log_probs - log_softmax(ref_logits))
    return np.maximum(terms.sum(axis=-1), 0.0)
