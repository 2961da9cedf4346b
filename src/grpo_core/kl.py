r"""KL divergence to the reference policy: chapter §6, eq. (8).

The per-sample estimators take log-probabilities of samples drawn from
:math:`\pi_\theta` and use the chapter's ratio
:math:`\rho = \pi_\mathrm{ref}(o)/\pi_\theta(o)` (Schulman's "Approximating KL
divergence", 2020). Each estimates :math:`\mathrm{KL}(\pi_\theta\,\|\,\pi_\mathrm{ref})`:

* k1 = :math:`-\log\rho` — unbiased, but negative on some samples, high variance;
* k2 = :math:`\tfrac12(\log\rho)^2` — always ≥ 0, biased, low variance;
* k3 = :math:`\rho - \log\rho - 1` — eq. (8): unbiased and always ≥ 0.

Unbiased *values* do not make unbiased *gradients*. For :math:`o\sim\pi_\theta`,
:math:`\mathbb E[\nabla k_1] = 0`, :math:`\mathbb E[\nabla k_2] = \nabla\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})`
and :math:`\mathbb E[\nabla k_3] = \nabla\mathrm{KL}(\pi_\mathrm{ref}\|\pi_\theta)`, the other direction.
Two corrections restore the chapter's direction: :func:`kl_k3_ratio` (TRL's
``use_bias_correction_kl``) and :func:`kl_k3_plus` (verl's ``"k3+"``).
"""

from __future__ import annotations

import numpy as np

from grpo_core._backend import is_torch, namespace
from grpo_core._validate import finite_array, probabilities, same_shape
from grpo_core.clipping import importance_ratio


def _log_ratio(logp, ref_logp):
    logp = finite_array(logp, "logp")
    ref_logp = finite_array(ref_logp, "ref_logp")
    same_shape(logp=logp, ref_logp=ref_logp)
    return ref_logp - logp


def kl_k1(logp, ref_logp):
    r"""k1 = :math:`\log\pi_\theta(o) - \log\pi_\mathrm{ref}(o)`, unbiased, can be negative."""
    return -_log_ratio(logp, ref_logp)


def kl_k2(logp, ref_logp):
    r"""k2 = :math:`\tfrac12(\log\pi_\mathrm{ref}(o) - \log\pi_\theta(o))^2`, nonnegative, biased."""
    return 0.5 * _log_ratio(logp, ref_logp) ** 2


def kl_k3(logp, ref_logp):
    r"""Eq. (8), k3 = :math:`\frac{\pi_\mathrm{ref}}{\pi_\theta} - \log\frac{\pi_\mathrm{ref}}{\pi_\theta} - 1 \ge 0`.

    Unbiased for :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})` when
    :math:`o \sim \pi_\theta`, and nonnegative because :math:`e^x \ge 1 + x`.
    Written with ``expm1`` so that it is exactly 0 where the log-probs agree.
    """
    log_ratio = _log_ratio(logp, ref_logp)
    return namespace(log_ratio).expm1(log_ratio) - log_ratio


def kl_k3_ratio(logp, ref_logp, old_logp):
    r"""Eq. (8) times the ratio of eq. (6): :math:`r\,k_3`, TRL's ``use_bias_correction_kl=True``.

    TRL 1.16.0 multiplies each token's k3 by the *unclipped* importance ratio
    :math:`r = \pi_\theta/\pi_{\theta_\mathrm{old}}` (its default), and the
    gradient flows through both factors. For :math:`o\sim\pi_{\theta_\mathrm{old}}`,
    :math:`\mathbb E[\nabla(r\,k_3)] = \nabla\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})`,
    the chapter's direction, where plain k3 gives :math:`\nabla\mathrm{KL}(\pi_\mathrm{ref}\|\pi_\theta)`.
    """
    return importance_ratio(logp, old_logp) * kl_k3(logp, ref_logp)


def kl_k3_plus(logp, ref_logp):
    r"""The value of k3 (eq. 8) with the gradient of k2: verl's ``kl_penalty(..., "k3+")``.

    In torch, :math:`k_2 + (k_3 - k_2)` with the bracket detached (a
    straight-through estimator): the value is unbiased for
    :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})` and the expected gradient,
    for :math:`o\sim\pi_\theta`, is :math:`\nabla\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})`.
    On NumPy arrays, which carry no gradient, it is k3.
    """
    k3 = kl_k3(logp, ref_logp)
    if not is_torch(k3):
        return k3
    k2 = kl_k2(logp, ref_logp)
    return k2 + (k3 - k2).detach()


def categorical_kl(p, q) -> np.ndarray:
    r"""Exact :math:`\mathrm{KL}(p\|q) = \sum_a p_a \log(p_a/q_a)` over the last axis."""
    p = np.asarray(probabilities(p, "p"), dtype=float)
    q = np.asarray(probabilities(q, "q"), dtype=float)
    same_shape(p=p, q=q)
    return np.maximum((p * (np.log(p) - np.log(q))).sum(axis=-1), 0.0)


def entropy(p) -> np.ndarray:
    r"""Shannon entropy :math:`H(p) = -\sum_a p_a \log p_a` in nats, over the last axis."""
    p = np.asarray(probabilities(p, "p"), dtype=float)
    return -(p * np.log(p)).sum(axis=-1)
