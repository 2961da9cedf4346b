"""Importance ratio and clipped surrogate: chapter §6, eqs. (6) and (7).

Each function acts element-wise on NumPy arrays or torch tensors (autograd
flows through the torch path); one element is one token, or one bandit sample.

The log-ratio is clamped to ±``LOG_RATIO_BOUND`` = ±20 before it is
exponentiated, as some production trainers do (which, and where: the book's "Production formulas" page,
"Clamps on the token ratio"): the ratio stays in
:math:`[e^{-20}, e^{20}]` instead of overflowing to inf, and its gradient is 0
beyond the bound. Such a ratio is far outside any clip band, so the clipped
surrogate is unchanged wherever its clip is active.
"""

from __future__ import annotations

import math

from grpo_core import _kernels as K
from grpo_core._kernels import LOG_RATIO_BOUND
from grpo_core._validate import arrays, clip_band, clip_range, masked_log_ratio, token_batch

__all__ = [
    "LOG_RATIO_BOUND",
    "clip_fractions",
    "clip_masks",
    "clipped_surrogate",
    "importance_ratio",
    "sequence_importance_ratio",
]


def importance_ratio(logp, old_logp):
    r"""Eq. (6): the importance ratio :math:`r = \pi_\theta(o)/\pi_{\theta_\mathrm{old}}(o)`.

    Computed from log-probabilities, which is how trainers hold them:
    :math:`r = \exp(\log\pi_\theta - \log\pi_{\theta_\mathrm{old}})`, the
    log-ratio clamped to ±20 (module docstring).
    """
    logp, old_logp = arrays(logp=logp, old_logp=old_logp)
    xp = K.namespace(logp)  # NumPy, or torch for tensors
    return xp.exp(K.clamped(logp - old_logp))  # r = exp(log π_θ - log π_θ_old), the log-ratio clamped to ±20


def sequence_importance_ratio(logps, old_logps, mask):
    r"""GSPO's sequence ratio (TRL's ``importance_sampling_level="sequence"``), shape ``(B, 1)``.

    :math:`s_i = \exp\big(\sum_t m_{i,t}\,\delta_{i,t} / \max(\sum_t m_{i,t}, 1)\big)` with
    :math:`\delta_{i,t} = \log\pi_\theta - \log\pi_{\theta_\mathrm{old}}` of token t,
    the geometric mean of completion i's token ratios. ``logps``, ``old_logps``
    and ``mask`` (bool or 0/1) have shape ``(B, T)``; values at masked
    positions are never read (they may even be NaN). The mean log-ratio is
    clamped to ±20 like every log-ratio here; the production trainers' bounds differ
    (the book's "Production formulas" page, "GSPO in verl and OpenRLHF"). GSPO's paper clips this ratio to
    [1 − 3e-4, 1 + 4e-4] (Zheng et al. 2025, §5.1), not eq. (7)'s ε = 0.2: a geometric
    mean of many token ratios moves far less than one of them.
    """
    logps, old_logps, _, _, (_, keep, lengths) = token_batch(logps, old_logps, None, None, mask, allow_empty_rows=True)
    delta, _ = masked_log_ratio(logps, old_logps, keep, "logps - old_logps")  # δ_{i,t}, exactly 0 where masked
    mean_delta = delta.sum(-1, keepdim=True) / lengths.clamp(min=1).unsqueeze(-1)  # Σ_t m δ / max(Σ_t m, 1)
    return K.clamped(mean_delta).exp()  # s_i, its log clamped to ±20


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
    r, A = arrays(ratio=ratio, advantages=advantages)
    low, high, delta = clip_band(eps_low, eps_high, delta)  # the band [1 - ε_low, 1 + ε_high] and δ
    xp = K.namespace(r)
    unclipped = r if delta is None else xp.clip(r, None, delta)  # r, capped at δ if given
    return xp.minimum(unclipped * A, xp.clip(r, low, high) * A)  # min(r·Â, clip(r, 1 - ε, 1 + ε)·Â)


def clip_masks(ratio, advantages, eps_low: float = 0.2, eps_high: float | None = None):
    """Where the clip of eq. (7) is active, split as production trainers log it.

    Returns ``(low, high)`` boolean arrays: ``low`` where ``r < 1 - eps_low``
    and ``Â < 0``, ``high`` where ``r > 1 + eps_high`` and ``Â > 0``. Their union
    (``low | high``) is the "region" where the gradient of the term is zero.
    The comparison is made in the dtype of ``ratio`` (the bounds rounded to
    it), so NumPy and torch arrays of one dtype give the same masks.
    """
    ratio, advantages = arrays(ratio=ratio, advantages=advantages)
    return K.clip_masks(ratio, advantages, *clip_range(eps_low, eps_high))


def clip_fractions(ratio, advantages, eps_low: float = 0.2, eps_high: float | None = None) -> dict[str, float]:
    """Fractions of terms clipped: ``{"low": …, "high": …, "region": …}``."""
    low, high = clip_masks(ratio, advantages, eps_low, eps_high)
    n = math.prod(low.shape)  # counts over n in Python's exact arithmetic: float64 for NumPy and torch alike
    return {"low": int(low.sum()) / n, "high": int(high.sum()) / n, "region": int((low | high).sum()) / n}
