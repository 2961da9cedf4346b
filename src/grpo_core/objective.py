"""The GRPO objective for one-action-per-sample data: chapter eqs. (7) and (9).

In the bandit view (§10–11) every completion is a single action, so
``|o_i| = 1`` and eq. (7) is a plain mean over the group. The token-level
version, with a mean over each completion's tokens, is
:func:`grpo_core.token_loss.grpo_token_loss`.
"""

from __future__ import annotations

from grpo_core._kernels import KL_ESTIMATORS, kl_term, log_ratio, ratio, surrogate
from grpo_core._validate import arrays, choice, clip_band, nonnegative

__all__ = ["KL_ESTIMATORS", "clip_objective", "grpo_objective"]


def clip_objective(
    logp, old_logp, advantages, eps_low: float = 0.2, eps_high: float | None = None, delta: float | None = None
):
    r"""Eq. (7) with one action per sample: :math:`\frac1G\sum_i \min(r_i\hat A_i,\ \mathrm{clip}(r_i)\hat A_i)`.

    ``delta`` caps the unclipped branch as in :func:`grpo_core.clipping.clipped_surrogate`.
    """
    logp, old_logp, A = arrays(logp=logp, old_logp=old_logp, advantages=advantages)
    low, high, delta = clip_band(eps_low, eps_high, delta)
    r = ratio(logp, old_logp)  # eq. (6)
    return surrogate(r, A, low, high, delta).mean()  # eq. (7): mean of min(r·Â, clip(r, 1-ε, 1+ε)·Â)


def grpo_objective(
    logp,
    old_logp,
    ref_logp,
    advantages,
    eps_low: float = 0.2,
    eps_high: float | None = None,
    beta: float = 0.04,
    kl_estimator: str = "k3",
    delta: float | None = None,
):
    r"""Eq. (9): :math:`\mathcal J_\mathrm{GRPO} = \mathcal J_\mathrm{clip} - \beta\,\mathbb E[\hat D_\mathrm{KL}]`.

    Here :math:`\mathbb E[\widehat{D}_\mathrm{KL}] = \frac1G\sum_i k_3(o_i)`.

    ``logp``, ``old_logp``, ``ref_logp`` are the log-probabilities of the
    sampled actions under :math:`\pi_\theta`, :math:`\pi_{\theta_\mathrm{old}}` and :math:`\pi_\mathrm{ref}`;
    ``advantages`` are the :math:`\hat A_i` of
    eq. (3). The KL term is the k3 estimator of eq. (8), inside the objective
    (not folded into the reward). NumPy in, a float out; torch in, a scalar
    tensor out, differentiable in ``logp``. This is to be *maximised*.

    ``kl_estimator`` picks the KL term: ``"k3"`` (eq. 8), ``"k3_ratio"``
    (:math:`r_i k_3`, :func:`grpo_core.kl.kl_k3_ratio`) or ``"k3_plus"`` (k3's value, k2's
    gradient, :func:`grpo_core.kl.kl_k3_plus`); ``delta`` caps the unclipped
    branch (:func:`grpo_core.clipping.clipped_surrogate`). With one action per
    sample the token and the sequence ratio coincide.
    """
    logp, old_logp, ref_logp, A = arrays(logp=logp, old_logp=old_logp, ref_logp=ref_logp, advantages=advantages)
    low, high, delta, beta = *clip_band(eps_low, eps_high, delta), nonnegative(beta, "beta")
    choice(kl_estimator, "kl_estimator", KL_ESTIMATORS)
    r = ratio(logp, old_logp)  # eq. (6), its log clamped to ±20
    J_clip = surrogate(r, A, low, high, delta).mean()  # eq. (7): mean of min(r·Â, clip(r, 1-ε, 1+ε)·Â)
    D_KL = kl_term(kl_estimator, log_ratio(ref_logp, logp), r).mean()  # eq. (8): k3 of ρ = π_ref/π_θ
    return J_clip - beta * D_KL  # eq. (9)
