"""Importance ratio and clipped surrogate: chapter §6, eqs. (6) and (7).

Each function acts element-wise on NumPy arrays or torch tensors (autograd
flows through the torch path); one element is one token, or one bandit sample.

The log-ratio is clamped to ±``LOG_RATIO_BOUND`` = ±20 before it is
exponentiated, the bound verl 0.9.1 uses on its token ratio (``compute_policy_loss_vanilla``:
``torch.clamp(negative_approx_kl, min=-20.0, max=20.0)``; OpenRLHF 0.11.2's ``PolicyLoss``
clamps the same, TRL 1.16.0 does not clamp; for GSPO's sequence ratio see
:func:`sequence_importance_ratio`): the ratio stays in
:math:`[e^{-20}, e^{20}]` instead of overflowing to inf, and its gradient is 0
beyond the bound. Such a ratio is far outside any clip band, so the clipped
surrogate is unchanged wherever its clip is active.
"""

from __future__ import annotations

import math

from grpo_core._validate import (
    all_finite,
    finite_array,
    namespace,
    nonnegative,
    overflow_checked,
    real_number,
    same_shape,
    token_batch,
)

#: The bound on every log-ratio before it is exponentiated, ±20 as in verl 0.9.1, so a ratio stays below :math:`e^{20}`.
LOG_RATIO_BOUND = 20.0


def _clamped(log_ratio):
    """The log-ratio clamped to ±``LOG_RATIO_BOUND`` (verl's bound), before it is exponentiated."""
    return namespace(log_ratio).clip(log_ratio, -LOG_RATIO_BOUND, LOG_RATIO_BOUND)


def _ratio(logp, old_logp):
    r"""Eq. (6): :math:`r = \exp(\log\pi_\theta - \log\pi_{\theta_\mathrm{old}})`, the log-ratio clamped."""
    return namespace(logp).exp(_clamped(logp - old_logp))


def _surrogate(ratio, advantages, low: float, high: float, delta: float | None):
    """Eq. (7): min(r Â, clip(r, low, high) Â), the unclipped branch capped at δ if given."""
    xp = namespace(ratio)
    unclipped = ratio if delta is None else xp.clip(ratio, None, delta)
    return xp.minimum(unclipped * advantages, xp.clip(ratio, low, high) * advantages)


def clip_range(eps_low, eps_high) -> tuple[float, float]:
    """The band ``(1 - eps_low, 1 + eps_high)`` of eq. (7), validated; ``eps_high=None`` means ``eps_low``."""
    eps_low = nonnegative(eps_low, "eps_low")
    eps_high = eps_low if eps_high is None else nonnegative(eps_high, "eps_high")
    return 1.0 - eps_low, 1.0 + eps_high


def delta_cap(delta, high: float) -> float | None:
    """``delta`` validated: ``None`` or a number > 1 + eps_high."""
    if delta is None:
        return None
    delta = real_number(delta, "delta")
    if delta <= high:
        raise ValueError(f"delta must be > 1 + eps_high = {high}, got {delta}")
    return delta


def _pair(ratio, advantages):
    ratio = finite_array(ratio, "ratio")
    advantages = finite_array(advantages, "advantages")
    same_shape(ratio=ratio, advantages=advantages)
    return ratio, advantages


def importance_ratio(logp, old_logp):
    r"""Eq. (6): the importance ratio :math:`r = \pi_\theta(o)/\pi_{\theta_\mathrm{old}}(o)`.

    Computed from log-probabilities, which is how trainers hold them:
    :math:`r = \exp(\log\pi_\theta - \log\pi_{\theta_\mathrm{old}})`, the
    log-ratio clamped to ±20 (module docstring).
    """
    logp = finite_array(logp, "logp")
    old_logp = finite_array(old_logp, "old_logp")
    same_shape(logp=logp, old_logp=old_logp)
    return _ratio(logp, old_logp)


def sequence_importance_ratio(logps, old_logps, mask):
    r"""GSPO's sequence ratio (TRL's ``importance_sampling_level="sequence"``), shape ``(B, 1)``.

    :math:`s_i = \exp\big(\sum_t m_{i,t}\,\delta_{i,t} / \max(\sum_t m_{i,t}, 1)\big)` with
    :math:`\delta_{i,t} = \log\pi_\theta - \log\pi_{\theta_\mathrm{old}}` of token t,
    the geometric mean of completion i's token ratios. ``logps``, ``old_logps``
    and ``mask`` (bool or 0/1) have shape ``(B, T)``; values at masked
    positions are never read (they may even be NaN). The mean log-ratio is
    clamped to ±20 like every log-ratio here. Production bounds differ: TRL 1.16.0
    does not clamp it, verl 0.9.1's ``compute_policy_loss_gspo`` clamps it from above
    only, at 10, and OpenRLHF 0.11.2's GSPO mode does not clamp it: all agree while
    the mean log-ratio stays within ±10. GSPO's paper clips this ratio to
    [1 − 3e-4, 1 + 4e-4] (Zheng et al. 2025, §5.1), not eq. (7)'s ε = 0.2: a geometric
    mean of many token ratios moves far less than one of them.
    """
    logps, old_logps, _, _, (_, keep, _) = token_batch(logps, old_logps, None, None, mask, allow_empty_rows=True)
    return _sequence_ratio(logps, old_logps, keep)


def _masked_log_ratio(top, bottom, keep, names: str, *, clamp: bool = True):
    """``top - bottom`` where the mask is 1, exactly 0 elsewhere, clamped to ±``LOG_RATIO_BOUND`` if ``clamp``.

    One read-only pass (``aminmax``) both checks the unmasked entries finite
    and tells whether the clamp can change anything; when it cannot (the usual
    case) the clamp, a no-op, is skipped with its backward pass.
    """
    torch = namespace(top)  # (completions, tokens) tensors only
    log_ratio = torch.where(keep, top - bottom, 0.0)
    smallest, largest = (float(v) for v in torch.aminmax(log_ratio.detach()))
    if not (math.isfinite(smallest) and math.isfinite(largest)):
        first, second = names.split(" - ")
        for tensor, name in ((top, first), (bottom, second)):
            if not all_finite(torch.where(keep, tensor.detach(), 0.0)):
                raise ValueError(f"{name} must be finite (no NaN or inf) where mask is 1")
        raise ValueError(f"{names} overflows the float range where mask is 1")
    if not clamp or (smallest >= -LOG_RATIO_BOUND and largest <= LOG_RATIO_BOUND):
        return log_ratio
    return _clamped(log_ratio)


def _sequence_ratio(logps, old_logps, keep):
    """The kernel of :func:`sequence_importance_ratio`; ``keep`` is the boolean mask."""
    log_ratio = _masked_log_ratio(logps, old_logps, keep, "logps - old_logps", clamp=False)
    mean = log_ratio.sum(-1, keepdim=True) / keep.sum(-1, keepdim=True).clamp(min=1)
    return namespace(logps).exp(_clamped(mean))


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

    ``delta`` (> :math:`1 + \varepsilon_\mathrm{high}`) caps the unclipped branch too,
    :math:`\min(\min(r, \delta)\hat A,\ \mathrm{clip}(r)\hat A)`: TRL's "two-sided
    clipping" (INTELLECT-2), which bounds the term when Â < 0 and r is huge.
    """
    ratio, advantages = _pair(ratio, advantages)
    low, high = clip_range(eps_low, eps_high)
    delta = delta_cap(delta, high)
    return overflow_checked(lambda: _surrogate(ratio, advantages, low, high, delta), "r·advantages")


def _clip_masks(ratio, advantages, low: float, high: float):
    return (ratio < low) & (advantages < 0), (ratio > high) & (advantages > 0)


def clip_masks(ratio, advantages, eps_low: float = 0.2, eps_high: float | None = None):
    """Where the clip of eq. (7) is active, split as production trainers log it.

    Returns ``(low, high)`` boolean arrays: ``low`` where ``r < 1 - eps_low``
    and ``Â < 0``, ``high`` where ``r > 1 + eps_high`` and ``Â > 0``. Their union
    (``low | high``) is the "region" where the gradient of the term is zero.
    The comparison is made in the dtype of ``ratio`` (the bounds rounded to
    it), so NumPy and torch arrays of one dtype give the same masks.
    """
    ratio, advantages = _pair(ratio, advantages)
    return _clip_masks(ratio, advantages, *clip_range(eps_low, eps_high))


def clip_fractions(ratio, advantages, eps_low: float = 0.2, eps_high: float | None = None) -> dict[str, float]:
    """Fractions of terms clipped: ``{"low": …, "high": …, "region": …}``."""
    low, high = clip_masks(ratio, advantages, eps_low, eps_high)
    return {
        "low": float((low * 1.0).mean()),
        "high": float((high * 1.0).mean()),
        "region": float(((low | high) * 1.0).mean()),
    }
