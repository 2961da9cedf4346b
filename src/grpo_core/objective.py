"""The GRPO objective for one-action-per-sample data: chapter eqs. (7) and (9).

In the bandit view (§10–11) every completion is a single action, so
``|o_i| = 1`` and eq. (7) is a plain mean over the group. The token-level
version, with a mean over each completion's tokens, is
:func:`grpo_core.token_loss.grpo_token_loss`.
"""

from __future__ import annotations

from grpo_core import _kernels as K
from grpo_core._kernels import KL_ESTIMATORS
from grpo_core._validate import arrays, choice, clip_band, nonnegative, overflow_checked

__all__ = ["KL_ESTIMATORS", "clip_objective", "grpo_objective"]


def clip_objective(
    logp, old_logp, advantages, eps_low: float = 0.2, eps_high: float | None = None, delta: float | None = None
):
    r"""Eq. (7) with one action per sample: :math:`\frac1G\sum_i \min(r_i\hat A_i,\ \mathrm{clip}(r_i)\hat A_i)`.

    ``delta`` caps the unclipped branch as in :func:`grpo_core.clipping.clipped_surrogate`.
    """
    logp, old_logp, advantages = arrays(logp=logp, old_logp=old_logp, advantages=advantages)
    low, high, delta = clip_band(eps_low, eps_high, delta)
    return overflow_checked(
        lambda: K.clip_objective(logp, old_logp, advantages, low, high, delta), "the mean of r·advantages"
    )


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
    (:math:`r_i k_3`, TRL's ``use_bias_correction_kl``, see
    :func:`grpo_core.kl.kl_k3_ratio`) or ``"k3_plus"`` (k3's value, k2's
    gradient, :func:`grpo_core.kl.kl_k3_plus`); ``delta`` caps the unclipped
    branch (:func:`grpo_core.clipping.clipped_surrogate`). With one action per
    sample the token and the sequence ratio coincide.
    """
    logp, old_logp, ref_logp, advantages = arrays(
        logp=logp, old_logp=old_logp, ref_logp=ref_logp, advantages=advantages
    )
    low, high, delta = clip_band(eps_low, eps_high, delta)
    beta = nonnegative(beta, "beta")
    choice(kl_estimator, "kl_estimator", KL_ESTIMATORS)
    return overflow_checked(
        lambda: K.grpo_objective(logp, old_logp, ref_logp, advantages, low, high, beta, kl_estimator, delta),
        "the objective (advantages or beta too large)",
    )
