r"""KL divergence to the reference policy: chapter §6, eq. (8).

The per-sample estimators take log-probabilities of samples drawn from
:math:`\pi_\theta` and use the chapter's ratio
:math:`\rho = \pi_\mathrm{ref}(o)/\pi_\theta(o)` (Schulman's "Approximating KL
divergence", 2020). Each estimates :math:`\mathrm{KL}(\pi_\theta\,\|\,\pi_\mathrm{ref})`:

* k1 = :math:`-\log\rho` — unbiased, but negative on some samples, high variance;
* k2 = :math:`\tfrac12(\log\rho)^2` — always ≥ 0, biased, low variance;
* k3 = :math:`\rho - \log\rho - 1` — eq. (8): unbiased and always ≥ 0.

Their *gradients* are another matter (what the loss actually uses):
:math:`\mathbb E_{\pi_\theta}[\nabla k_1] = 0`,
:math:`\mathbb E_{\pi_\theta}[\nabla k_2] = \nabla\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})` and
:math:`\mathbb E_{\pi_\theta}[\nabla k_3] = \nabla\mathrm{KL}(\pi_\mathrm{ref}\|\pi_\theta)`, the KL with
its arguments swapped. Two production fixes restore the gradient of
:math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})`: :func:`kl_k3_ratio` (TRL's ``use_bias_correction_kl``)
and :func:`kl_k3_plus` (verl's ``"k3+"``). The words "forward" and "reverse" are avoided on purpose (the libraries
disagree on them: the book's "Production formulas" page); the arguments say which KL is meant.

Where :math:`\rho` is exponentiated, the log-ratio is clamped to
``[-LOG_RATIO_BOUND, LOG_RATIO_BOUND]`` = ±20 (``grpo_core.clipping.LOG_RATIO_BOUND``): k3 stays below
:math:`e^{20} - 21 \approx 4.9\cdot10^8` instead of overflowing, and its gradient is 0 beyond the bound (as a
clamp's is). :func:`kl_k3_ratio` multiplies two clamped factors, the ratio :math:`r \le e^{20}` and k3, so it stays
below :math:`e^{40} \approx 2.4\cdot10^{17}`. Log-probabilities of real policies rarely differ by more than 20 nats on
a sampled token. How the production trainers clamp k3: the same page, "Clamps on k3".
"""

from __future__ import annotations

import numpy as np

from grpo_core import _kernels as K
from grpo_core._validate import arrays, probabilities, same_shape


def kl_k1(logp, ref_logp):
    r"""k1 = :math:`\log\pi_\theta(o) - \log\pi_\mathrm{ref}(o)`, unbiased, can be negative."""
    logp, ref_logp = arrays(logp=logp, ref_logp=ref_logp)
    return logp - ref_logp


def kl_k2(logp, ref_logp):
    r"""k2 = :math:`\tfrac12(\log\pi_\mathrm{ref}(o) - \log\pi_\theta(o))^2`, nonnegative, biased."""
    logp, ref_logp = arrays(logp=logp, ref_logp=ref_logp)
    return 0.5 * (ref_logp - logp) ** 2


def kl_k3(logp, ref_logp):
    r"""Eq. (8), k3 = :math:`\frac{\pi_\mathrm{ref}}{\pi_\theta} - \log\frac{\pi_\mathrm{ref}}{\pi_\theta} - 1 \ge 0`.

    Unbiased for :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})` when
    :math:`o \sim \pi_\theta`, and nonnegative because :math:`e^x \ge 1 + x`.
    Written with ``expm1`` so that it is exactly 0 where the log-probs agree;
    the log-ratio is clamped to ±20 (module docstring).
    """
    logp, ref_logp = arrays(logp=logp, ref_logp=ref_logp)
    log_rho = K.clamped(ref_logp - logp)  # log ρ = log(π_ref / π_θ), clamped to ±20
    return K.namespace(log_rho).expm1(log_rho) - log_rho  # ρ - log ρ - 1, with expm1(log ρ) = ρ - 1


def kl_k3_ratio(logp, ref_logp, old_logp):
    r"""k3 times the importance ratio of eq. (6): :math:`r\,k_3`, :math:`r = \pi_\theta/\pi_{\theta_\mathrm{old}}`.

    TRL's ``use_bias_correction_kl=True`` (the *unclipped* ratio, gradient through
    both factors; the book's "Production formulas" page). Both factors are clamped
    (module docstring), so the product stays below :math:`e^{40}`: from valid
    log-probabilities ``kl_k3_ratio([-20], [0], [-40])`` is :math:`e^{20}(e^{20} - 21) \approx 2.35\cdot10^{17}`.
    For samples drawn from :math:`\pi_{\theta_\mathrm{old}}`,
    :math:`\mathbb E_{o\sim\pi_{\theta_\mathrm{old}}}[\nabla_\theta(r\,k_3)]
    = \nabla_\theta\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})`.
    """
    logp, ref_logp, old_logp = arrays(logp=logp, ref_logp=ref_logp, old_logp=old_logp)
    r, log_rho = K.ratio(logp, old_logp), K.log_ratio(ref_logp, logp)  # eq. (6); log ρ of eq. (8)
    return r * K.k3(log_rho)  # r · k3


def kl_k3_plus(logp, ref_logp):
    r"""The value of k3 with the gradient of k2 (straight-through), verl's ``"k3+"``.

    :math:`\mathbb E_{\pi_\theta}[\nabla k_2] = \nabla\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})`, while
    k3's own gradient estimates :math:`\nabla\mathrm{KL}(\pi_\mathrm{ref}\|\pi_\theta)`. On torch the result is
    ``(k2 - k2.detach()) + k3.detach()`` (verl's order of terms, so the value is k3 bit for bit; how verl clamps it:
    the book's "Production formulas" page); NumPy has no gradient and returns the k3 value.
    """
    logp, ref_logp = arrays(logp=logp, ref_logp=ref_logp)
    return K.k3_plus(K.log_ratio(ref_logp, logp))


def categorical_kl(p, q) -> np.ndarray:
    r"""Exact :math:`\mathrm{KL}(p\|q) = \sum_a p_a \log(p_a/q_a)` over the last axis.

    ``p`` may hold exact zeros (:math:`0\log 0 = 0`); ``q`` must be > 0 wherever ``p`` is.
    """
    p = probabilities(p, "p")
    q = probabilities(q, "q")
    same_shape(p=p, q=q)
    if bool(((q == 0) & (p > 0)).any()):
        raise ValueError("q must be > 0 wherever p > 0 (else KL(p||q) is infinite)")
    support = p > 0
    terms = np.where(support, p * (np.log(np.where(support, p, 1.0)) - np.log(np.where(support, q, 1.0))), 0.0)
    return np.maximum(terms.sum(axis=-1), 0.0)


def entropy(p) -> np.ndarray:
    r"""Shannon entropy :math:`H(p) = -\sum_a p_a \log p_a` in nats, over the last axis (:math:`0\log 0 = 0`)."""
    return K.entropy(probabilities(p, "p"))
