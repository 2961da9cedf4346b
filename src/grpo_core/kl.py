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
and :func:`kl_k3_plus` (verl's ``"k3+"``). (The words "forward" and "reverse" are avoided here on purpose:
TRL 1.16.0's ``grpo_config.py`` and OpenRLHF call :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})` the
*reverse* KL, as the variational-inference literature does, while some texts call it the forward one. The
arguments say which is meant.)

Where :math:`\rho` is exponentiated, the log-ratio is clamped to
``[-LOG_RATIO_BOUND, LOG_RATIO_BOUND]`` = ±20 (``grpo_core.clipping.LOG_RATIO_BOUND``), the bound verl 0.9.1 applies
to the log-ratio of its k3 (``kl_penalty_forward``, ``"low_var_kl"``) and of its token ratio
(``compute_policy_loss_vanilla``) in ``verl/trainer/ppo/core_algos.py``: k3 stays below
:math:`e^{20} - 21 \approx 4.9\cdot10^8` instead of overflowing, and its gradient is 0 beyond the bound (as a
clamp's is). verl also clamps the k3 *value* to [−10, 10] (so does OpenRLHF, whose k3 clamps the log-ratio from below
at −10 only); ``grpo_core`` does not, so the two agree wherever k3 < 10. :func:`kl_k3_ratio` multiplies two clamped
factors, the ratio :math:`r \le e^{20}` and k3, so it stays below :math:`e^{40} \approx 2.4\cdot10^{17}`.
Log-probabilities of real policies rarely differ by more than 20 nats on a sampled token.
"""

from __future__ import annotations

import numpy as np

from grpo_core import _kernels as K
from grpo_core._validate import arrays, overflow_checked, probabilities, same_shape


def kl_k1(logp, ref_logp):
    r"""k1 = :math:`\log\pi_\theta(o) - \log\pi_\mathrm{ref}(o)`, unbiased, can be negative."""
    logp, ref_logp = arrays(logp=logp, ref_logp=ref_logp)
    return overflow_checked(lambda: logp - ref_logp, "k1 = logp - ref_logp")


def kl_k2(logp, ref_logp):
    r"""k2 = :math:`\tfrac12(\log\pi_\mathrm{ref}(o) - \log\pi_\theta(o))^2`, nonnegative, biased."""
    logp, ref_logp = arrays(logp=logp, ref_logp=ref_logp)
    return overflow_checked(lambda: 0.5 * (logp - ref_logp) ** 2, "k2 = (logp - ref_logp)**2 / 2")


def kl_k3(logp, ref_logp):
    r"""Eq. (8), k3 = :math:`\frac{\pi_\mathrm{ref}}{\pi_\theta} - \log\frac{\pi_\mathrm{ref}}{\pi_\theta} - 1 \ge 0`.

    Unbiased for :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})` when
    :math:`o \sim \pi_\theta`, and nonnegative because :math:`e^x \ge 1 + x`.
    Written with ``expm1`` so that it is exactly 0 where the log-probs agree;
    the log-ratio is clamped to ±20 (module docstring).
    """
    logp, ref_logp = arrays(logp=logp, ref_logp=ref_logp)
    return K.k3(K.log_ratio(ref_logp, logp))


def kl_k3_ratio(logp, ref_logp, old_logp):
    r"""k3 times the importance ratio of eq. (6): :math:`r\,k_3`, :math:`r = \pi_\theta/\pi_{\theta_\mathrm{old}}`.

    TRL 1.16.0's ``use_bias_correction_kl=True`` (``per_token_kl * coef_1``,
    the *unclipped* ratio, gradient through both factors). Both factors are clamped
    (module docstring), so the product stays below :math:`e^{40}`: from valid
    log-probabilities ``kl_k3_ratio([-20], [0], [-40])`` is :math:`e^{20}(e^{20} - 21) \approx 2.35\cdot10^{17}`.
    For samples drawn from :math:`\pi_{\theta_\mathrm{old}}`,
    :math:`\mathbb E_{o\sim\pi_{\theta_\mathrm{old}}}[\nabla_\theta(r\,k_3)]
    = \nabla_\theta\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})`.
    """
    logp, ref_logp, old_logp = arrays(logp=logp, ref_logp=ref_logp, old_logp=old_logp)
    return K.ratio(logp, old_logp) * K.k3(K.log_ratio(ref_logp, logp))


def kl_k3_plus(logp, ref_logp):
    r"""The value of k3 with the gradient of k2 (straight-through), verl 0.9.1's ``kl_penalty(..., "k3+")``.

    :math:`\mathbb E_{\pi_\theta}[\nabla k_2] = \nabla\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})`, while
    k3's own gradient estimates :math:`\nabla\mathrm{KL}(\pi_\mathrm{ref}\|\pi_\theta)`. verl clamps the k3
    value to [−10, 10] (``grpo_core`` does not); the gradient, k2's, is unclamped in both. On torch the result is
    ``(k2 - k2.detach()) + k3.detach()`` (verl's order of terms, so the value is
    k3 bit for bit); NumPy has no gradient and returns the k3 value.
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
