"""Importance ratio and clipped surrogate: chapter §6, eqs. (6) and (7).

Each function acts element-wise on NumPy arrays or torch tensors (autograd
flows through the torch path); one element is one token, or one bandit sample.
"""

from __future__ import annotations

from grpo_core._backend import is_torch, namespace
from grpo_core._validate import finite_array, nonnegative, same_shape


def _clip_range(eps_low, eps_high) -> tuple[float, float]:
    eps_low = nonnegative(eps_low, "eps_low")
    eps_high = eps_low if eps_high is None else nonnegative(eps_high, "eps_high")
    return 1.0 - eps_low, 1.0 + eps_high


def importance_ratio(logp, old_logp):
    r"""Eq. (6): the importance ratio :math:`r = \pi_\theta(o)/\pi_{\theta_\mathrm{old}}(o)`.

    Computed from log-probabilities, which is how trainers hold them:
    :math:`r = \exp(\log\pi_\theta - \log\pi_{\theta_\mathrm{old}})`.
    """
    logp = finite_array(logp, "logp")
    old_logp = finite_array(old_logp, "old_logp")
    same_shape(logp=logp, old_logp=old_logp)
    return namespace(logp).exp(logp - old_logp)


def sequence_importance_ratio(logps, old_logps, mask):
    r"""GSPO's sequence ratio, TRL's ``importance_sampling_level="sequence"``; shape ``(B, 1)``.

    :math:`s_i = \exp\big(\sum_t m_{i,t}(\log\pi_\theta - \log\pi_{\theta_\mathrm{old}})
    / \max(\sum_t m_{i,t}, 1)\big)`: the geometric mean over completion i's
    tokens of the per-token ratios of eq. (6), one number per completion.
    ``logps``, ``old_logps`` and ``mask`` (0/1 or bool) are ``(B, T)``.
    """
    logps = finite_array(logps, "logps", ndim=(2,))
    old_logps = finite_array(old_logps, "old_logps", ndim=(2,))
    mask = finite_array(mask, "mask", ndim=(2,))
    same_shape(logps=logps, old_logps=old_logps, mask=mask)
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise ValueError("mask must hold only 0 and 1 (or be a bool array)")
    mask = mask.to(logps.dtype) if is_torch(mask) else mask
    count = mask.sum(-1)[..., None].clip(min=1)
    return namespace(logps).exp(((logps - old_logps) * mask).sum(-1)[..., None] / count)


def clipped_surrogate(
    ratio, advantages, eps_low: float = 0.2, eps_high: float | None = None, delta: float | None = None
):
    r"""Eq. (7), the clipped term: :math:`\min(r\hat A,\ \mathrm{clip}(r, 1-\varepsilon, 1+\varepsilon)\hat A)`.

    With an asymmetric band the clip is to
    :math:`[1-\varepsilon_\mathrm{low},\ 1+\varepsilon_\mathrm{high}]`.

    ``eps_high`` defaults to ``eps_low`` (the chapter's symmetric ``1 ± ε``);
    a larger ``eps_high`` is DAPO's "clip-higher". Where the clipped branch is
    the minimum and the ratio lies outside the band, the term is constant in θ
    and its gradient is exactly 0.

    ``delta`` (> 1 + ``eps_high``) caps the unclipped branch too,
    :math:`\min(\min(r, \delta)\hat A,\ \mathrm{clip}(r)\hat A)`: TRL's ``delta``,
    the two-sided clip of INTELLECT-2. It bounds the term of a negative-advantage
    token, whose ratio eq. (7) leaves unbounded above, at :math:`\delta\hat A`.
    """
    ratio = finite_array(ratio, "ratio")
    advantages = finite_array(advantages, "advantages")
    same_shape(ratio=ratio, advantages=advantages)
    low, high = _clip_range(eps_low, eps_high)
    xp = namespace(ratio)
    clipped = xp.clip(ratio, low, high) * advantages
    if delta is not None:
        delta = nonnegative(delta, "delta")
        if delta <= high:
            raise ValueError(f"delta must be > 1 + eps_high = {high}, got {delta}")
        ratio = xp.minimum(ratio, xp.full_like(ratio, delta))
    return xp.minimum(ratio * advantages, clipped)


def clip_masks(ratio, advantages, eps_low: float = 0.2, eps_high: float | None = None):
    """Where the clip of eq. (7) is active, split as production trainers log it.

    Returns ``(low, high)`` boolean arrays: ``low`` where ``r < 1 - eps_low``
    and ``Â < 0``, ``high`` where ``r > 1 + eps_high`` and ``Â > 0``. Their union
    (``low | high``) is the "region" where the gradient of the term is zero.
    """
    ratio = finite_array(ratio, "ratio")
    advantages = finite_array(advantages, "advantages")
    same_shape(ratio=ratio, advantages=advantages)
    low, high = _clip_range(eps_low, eps_high)
    return (ratio < low) & (advantages < 0), (ratio > high) & (advantages > 0)


def clip_fractions(ratio, advantages, eps_low: float = 0.2, eps_high: float | None = None) -> dict[str, float]:
    """Fractions of terms clipped: ``{"low": …, "high": …, "region": …}``."""
    low, high = clip_masks(ratio, advantages, eps_low, eps_high)
    return {
        "low": float((low * 1.0).mean()),
        "high": float((high * 1.0).mean()),
        "region": float(((low | high) * 1.0).mean()),
    }
