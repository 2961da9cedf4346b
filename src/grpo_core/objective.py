"""The GRPO objective for one-action-per-sample data: chapter eqs. (7) and (9).

In the bandit view (§10–11) every completion is a single action, so
``|o_i| = 1`` and eq. (7) is a plain mean over the group. The token-level
version, with a mean over each completion's tokens, is
:func:`grpo_core.token_loss.grpo_token_loss`.
"""

from __future__ import annotations

from grpo_core._validate import nonnegative
from grpo_core.clipping import clipped_surrogate, importance_ratio
from grpo_core.kl import kl_k3


def clip_objective(logp, old_logp, advantages, eps_low: float = 0.2, eps_high: float | None = None):
    r"""Eq. (7) with one action per sample: :math:`\frac1G\sum_i \min(r_i\hat A_i,\ \mathrm{clip}(r_i)\hat A_i)`."""
    ratio = importance_ratio(logp, old_logp)
    return clipped_surrogate(ratio, advantages, eps_low, eps_high).mean()


def grpo_objective(
    logp,
    old_logp,
    ref_logp,
    advantages,
    eps_low: float = 0.2,
    eps_high: float | None = None,
    beta: float = 0.04,
):
    r"""Eq. (9): :math:`\mathcal J_\mathrm{GRPO} = \mathcal J_\mathrm{clip} - \beta\,\mathbb E[\hat D_\mathrm{KL}]`.

    Here :math:`\mathbb E[\widehat{D}_\mathrm{KL}] = \frac1G\sum_i k_3(o_i)`.

    ``logp``, ``old_logp``, ``ref_logp`` are the log-probabilities of the
    sampled actions under π_θ, π_θ_old and π_ref; ``advantages`` are the Â_i of
    eq. (3). The KL term is the k3 estimator of eq. (8), inside the objective
    (not folded into the reward). NumPy in, a float out; torch in, a scalar
    tensor out, differentiable in ``logp``. This is to be *maximised*.
    """
    beta = nonnegative(beta, "beta")
    surrogate = clip_objective(logp, old_logp, advantages, eps_low, eps_high)
    return surrogate - beta * kl_k3(logp, ref_logp).mean()
