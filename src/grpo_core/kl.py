r"""KL divergence to the reference policy: chapter §6, eq. (8).

The per-sample estimators take log-probabilities of samples drawn from
:math:`\pi_\theta` and use the chapter's ratio
:math:`\rho = \pi_\mathrm{ref}(o)/\pi_\theta(o)` (Schulman's "Approximating KL
divergence", 2020). Each estimates :math:`\mathrm{KL}(\pi_\theta\,\|\,\pi_\mathrm{ref})`:

* k1 = :math:`-\log\rho` — unbiased, but negative on some samples, high variance;
* k2 = :math:`\tfrac12(\log\rho)^2` — always ≥ 0, biased, low variance;
* k3 = :math:`\rho - \log\rho - 1` — eq. (8): unbiased and always ≥ 0.
"""

from __future__ import annotations

import numpy as np

from grpo_core._backend import namespace
from grpo_core._validate import finite_array, probabilities, same_shape


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
