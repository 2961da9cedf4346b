"""The GRPO objective for one-action-per-sample data: chapter eqs. (7) and (9).

In the bandit view (§10–11) every completion is a single action, so
``|o_i| = 1`` and eq. (7) is a plain mean over the group. The token-level
version, with a mean over each completion's tokens, is
:func:`grpo_core.token_loss.grpo_token_loss`.
"""

from __future__ import annotations

from grpo_core._validate import choice, nonnegative
from grpo_core.clipping import clipped_surrogate, importance_ratio
from grpo_core.kl import kl_k3, kl_k3_plus, kl_k3_ratio

KL_ESTIMATORS = ("k3", "k3_ratio", "k3_plus")


def clip_objective(
    logp, old_logp, advantages, eps_low: float = 0.2, eps_high: float | None = None, delta: float | None = None
):
    r"""Eq. (7) with one action per sample: :math:`\frac1G\sum_i \min(r_i\hat A_i,\ \mathrm{clip}(r_i)\hat A_i)`.

    ``delta`` is the two-sided clip of :func:`grpo_core.clipping.clipped_surrogate`.
    """
    ratio = importance_ratio(logp, old_logp)
    return clipped_surrogate(ratio, advantages, eps_low, eps_high, delta).mean()


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
    sampled actions under π_θ, π_θ_old and π_ref; ``advantages`` are the Â_i of
    eq. (3). The KL term is the k3 estimator of eq. (8), inside the objective
    (not folded into the reward). NumPy in, a float out; torch in, a scalar
    tensor out, differentiable in ``logp``. This is to be *maximised*.

    ``kl_estimator`` picks the KL term: ``"k3"`` (eq. 8), ``"k3_ratio"``
    (:func:`~grpo_core.kl.kl_k3_ratio`, TRL's ``use_bias_correction_kl=True``) or
    ``"k3_plus"`` (:func:`~grpo_core.kl.kl_k3_plus`, verl's ``"k3+"``); ``delta``
    is the two-sided clip. One action per sample: the token ratio is the sequence ratio.
    """
    beta = nonnegative(beta, "beta")
    choice(kl_estimator, "kl_estimator", KL_ESTIMATORS)
    surrogate = clip_objective(logp, old_logp, advantages, eps_low, eps_high, delta)
    if kl_estimator == "k3":
        kl = kl_k3(logp, ref_logp)
    elif kl_estimator == "k3_plus":
        kl = kl_k3_plus(logp, ref_logp)
    else:
        kl = kl_k3_ratio(logp, ref_logp, old_logp)
    return surrogate - beta * kl.mean()
