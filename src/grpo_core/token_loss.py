r"""Token-level GRPO loss (chapter §10, eqs. 6–9) in torch, with autograd.

A batch holds ``B`` completions padded to ``T`` tokens. Each token of
completion i has a log-probability under :math:`\pi_\theta` (``logps``, differentiable),
:math:`\pi_{\theta_\mathrm{old}}` and :math:`\pi_\mathrm{ref}`; completion i has one sequence-level advantage
:math:`\hat A_i` (eq. 3)
that is broadcast to every one of its tokens. The per-token term is

.. math:: \ell_{i,t} = -\min\big(r_{i,t}\hat A_i,\ \mathrm{clip}(r_{i,t},\,1-\varepsilon_\mathrm{low},
          \,1+\varepsilon_\mathrm{high})\,\hat A_i\big) + \beta\,k_3(i,t)

with :math:`r_{i,t}` the ratio of eq. (6) and :math:`k_3` the estimator of
eq. (8). β enters here, per token, before any averaging, so the KL term is
averaged exactly like the clipped term (as in TRL, and verl whose KL loss uses the
same ``loss_agg_mode``). OpenRLHF 0.11.2 differs: it averages its KL loss per token
in every mode (``aggregate_loss`` with its default ``token_level_loss=True``,
``openrlhf/trainer/ray/ppo_actor.py`` line 331), so its "seq-mean-token-mean" is
``grpo(β=0) + [bnpo(β) − bnpo(0)]`` in this function's terms
(``tests/test_production_formulas.py``). ``loss_type`` then says how the masked
terms are averaged — the source of length bias's per-token weights (§9):

``"grpo"``
    eq. (7): mean over each completion's own tokens, then over completions.
    A token of completion i weighs :math:`1/(B\,|o_i|)`: short completions
    weigh more per token.
``"bnpo"``
    sum over all tokens of the batch / number of tokens in the batch: every
    token weighs :math:`1/\sum_j |o_j|`.
``"dr_grpo"``
    sum over all tokens / (B × ``max_completion_length``), a constant
    (Dr. GRPO, Liu et al. 2025): every token weighs :math:`1/(B\,L_\mathrm{max})`.
    ``max_completion_length`` is required: the padded width ``T`` would be the
    longest completion that happened to be drawn, which changes from batch to
    batch, so the "constant" would not be one.
``"dapo"``
    sum / number of tokens in the *global* batch (DAPO, Yu et al. 2025). On
    one process it equals "bnpo"; a trainer that splits a batch over processes
    passes the token count of all of them as ``num_items_in_batch``.

When every completion is a single token all four agree, and the loss is
minus the bandit objective :func:`grpo_core.objective.grpo_objective`.

Masked positions never matter: the log-ratios are masked with ``where``
*before* anything is exponentiated, so whatever sits at a padded position
(finite garbage, NaN, inf) the loss, its gradient (exactly 0 there) and every
metric are bit for bit the same.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from grpo_core import _kernels as K
from grpo_core._kernels import KL_ESTIMATORS
from grpo_core._validate import (
    MAX_TOKENS,
    choice,
    clip_band,
    masked_log_ratio,
    nonnegative,
    positive_int,
    tensor,
    token_batch,
)

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")


def _tokens_per_row(flags: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Unmasked tokens flagged, per completion. A masked token has the token ratio exp(0) = 1,
    inside every band, so a (B, T) flag needs no mask; a (B, 1) sequence flag covers its completion's tokens."""
    return flags[:, 0] * lengths if flags.shape[-1] == 1 else flags.sum(-1)


class _Options(NamedTuple):
    """The knobs of :func:`grpo_token_loss`, validated against its batch."""

    low: float  # the clip band of eq. (7)
    high: float
    delta: float | None  # the cap of the unclipped branch
    beta: float
    sequence: bool  # GSPO's sequence ratio instead of the token ratio
    divisor: torch.Tensor | int | None  # what the masked token sum is divided by (None: each completion's length)


def _options(
    lengths: torch.Tensor,
    width: int,
    has_ref: bool,
    eps_low,
    eps_high,
    beta,
    loss_type,
    max_completion_length,
    num_items_in_batch,
    kl_estimator,
    delta,
    importance_sampling_level,
) -> _Options:
    """The checks of :func:`grpo_token_loss`'s knobs, given its batch's token counts per completion (``lengths``)
    and padded length (``width``)."""
    low, high, delta = clip_band(eps_low, eps_high, delta)
    beta = nonnegative(beta, "beta")
    if not has_ref and beta > 0:
        raise TypeError("ref_logps must be a torch.Tensor when beta > 0 (it is None)")
    choice(loss_type, "loss_type", LOSS_TYPES)
    choice(kl_estimator, "kl_estimator", KL_ESTIMATORS)
    choice(importance_sampling_level, "importance_sampling_level", IMPORTANCE_SAMPLING_LEVELS)
    num_tokens, longest = lengths.sum(), int(lengths.max())
    if max_completion_length is None:
        if loss_type == "dr_grpo":  # the padded width would make the constant depend on the batch
            raise ValueError('max_completion_length is required with loss_type="dr_grpo" (the configured L_max)')
        max_completion_length = width  # unused by the other loss types
    max_completion_length = positive_int(max_completion_length, "max_completion_length", maximum=MAX_TOKENS)
    if loss_type == "dr_grpo" and max_completion_length < longest:
        raise ValueError(
            f"max_completion_length must be >= the longest completion ({longest}), got {max_completion_length}"
        )
    if num_items_in_batch is not None:
        num_items_in_batch = positive_int(num_items_in_batch, "num_items_in_batch", maximum=MAX_TOKENS)
        if num_items_in_batch < int(num_tokens):
            raise ValueError(
                f"num_items_in_batch must be >= this batch's {int(num_tokens)} tokens, got {num_items_in_batch}"
            )
    divisor = {
        "grpo": None,
        "bnpo": num_tokens,
        "dr_grpo": len(lengths) * max_completion_length,
        "dapo": num_tokens if num_items_in_batch is None else num_items_in_batch,
    }[loss_type]
    return _Options(low, high, delta, beta, importance_sampling_level == "sequence", divisor)


def grpo_token_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    ref_logps: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float | None = None,
    beta: float = 0.04,
    loss_type: str = "grpo",
    max_completion_length: int | None = None,
    num_items_in_batch: int | None = None,
    kl_estimator: str = "k3",
    delta: float | None = None,
    importance_sampling_level: str = "token",
) -> tuple[torch.Tensor, dict[str, float]]:
    r"""The GRPO loss (the negative of eq. 9) over a batch of completions.

    Parameters
    ----------
    logps, old_logps, ref_logps : floating tensors of shape ``(B, T)``
        Per-token log-probabilities of the sampled tokens under :math:`\pi_\theta` (with
        autograd), :math:`\pi_{\theta_\mathrm{old}}` and :math:`\pi_\mathrm{ref}` (both treated as constants).
        ``ref_logps``
        may be ``None`` when ``beta == 0``; when it is given with ``beta == 0``
        the KL is still reported, but does not enter the loss. float16 and
        bfloat16 are computed in float32. Entries where ``mask`` is 0 are never
        read; entries where it is 1 must be finite.
    advantages : tensor of shape ``(B,)``
        One :math:`\hat A_i` per completion (eq. 3), broadcast over its tokens.
    mask : tensor of shape ``(B, T)``, bool or 0/1
        1 for a completion's tokens (its EOS included), 0 for padding. Every
        row needs at least one token: drop fully masked completions first.
    eps_low, eps_high : the clip band ``[1 - eps_low, 1 + eps_high]`` of eq. (7);
        ``eps_high=None`` means ``eps_low`` (symmetric).
    beta : the KL weight of eq. (9), >= 0.
    loss_type : {"grpo", "bnpo", "dr_grpo", "dapo"}, see the module docstring.
    max_completion_length : the constant :math:`L_\mathrm{max}` of "dr_grpo", the *configured*
        maximum completion length (TRL's ``max_completion_length``); it must be at
        least the longest completion. Required with "dr_grpo" (no default: the padded
        width ``T`` of a batch is not Dr. GRPO's constant); unused by the other types.
    num_items_in_batch : the token count of the global batch, for "dapo"
        (default: the tokens of this batch); at least the tokens of this batch.
    kl_estimator : {"k3", "k3_ratio", "k3_plus"}
        The per-token KL term β multiplies: k3 (eq. 8), r·k3 (TRL's
        ``use_bias_correction_kl``, :func:`grpo_core.kl.kl_k3_ratio`) or k3's
        value with k2's gradient (verl's "k3+", :func:`grpo_core.kl.kl_k3_plus`).
    delta : None or a number > 1 + eps_high
        Caps the unclipped branch at δ (TRL's two-sided clipping,
        :func:`grpo_core.clipping.clipped_surrogate`).
    importance_sampling_level : {"token", "sequence"}
        The ratio of eq. (6) per token, or GSPO's sequence ratio
        (:func:`grpo_core.clipping.sequence_importance_ratio`) on every token
        of the completion; the clip, its metrics and "k3_ratio" use it.

    Returns
    -------
    loss : scalar tensor, to be *minimised*.
    metrics : dict with the names TRL logs: ``"clip_ratio/low_mean"``,
        ``"clip_ratio/high_mean"``, ``"clip_ratio/region_mean"`` (fractions of
        tokens whose clip is active, as in :func:`grpo_core.clipping.clip_masks`),
        ``"kl"`` (the mean over tokens of the KL term, when ``ref_logps`` is
        given) and ``"loss"``.

    Every argument is checked once, before the arithmetic (the unmasked
    entries' finiteness on the masked log-ratios the loss needs anyway).
    """
    logps, old_logps, ref_logps, advantages, (mask, keep, lengths) = token_batch(
        logps, old_logps, ref_logps, tensor(advantages, "advantages"), mask
    )
    o = _options(
        lengths,
        logps.shape[1],
        ref_logps is not None,
        eps_low,
        eps_high,
        beta,
        loss_type,
        max_completion_length,
        num_items_in_batch,
        kl_estimator,
        delta,
        importance_sampling_level,
    )

    log_ratio, peak = masked_log_ratio(logps, old_logps.detach(), keep, "logps - old_logps")
    # per token, or GSPO's one per completion (the mean of its tokens'), clamped
    log_ratio = K.sequence_log_ratio(log_ratio, peak, lengths) if o.sequence else K.clamped_if_needed(log_ratio, peak)
    ratio = torch.exp(log_ratio)  # eq. (6): (B, T), or (B, 1) for the sequence ratio
    adv = advantages.to(ratio.dtype).unsqueeze(-1)  # Â_i on every token of completion i
    surrogate = K.surrogate(ratio, adv, o.low, o.high, o.delta).expand(logps.shape)
    per_token = -surrogate
    metrics: dict[str, float] = {}
    if ref_logps is not None:
        log_rho, peak = masked_log_ratio(ref_logps.detach(), logps, keep, "ref_logps - logps")
        kl = K.kl_term(kl_estimator, K.clamped_if_needed(log_rho, peak), ratio)  # 0 at masked positions
        if o.beta > 0:
            per_token = (o.beta * kl).sub_(surrogate)  # β·KL - surrogate, the same bits as -surrogate + β·KL
        with torch.no_grad():
            metrics["kl"] = float(kl.sum() / lengths.sum())

    token_sum = per_token * mask  # per_token is finite everywhere, so this is exactly 0 at masked positions
    # "grpo": each completion's mean, then the mean over completions; the others: one sum over one divisor
    loss = (token_sum.sum(-1) / lengths).mean() if o.divisor is None else token_sum.sum() / o.divisor

    with torch.no_grad():
        num_tokens = lengths.sum()
        low_count = (_tokens_per_row(ratio < o.low, lengths) * (advantages < 0)).sum()
        high_count = (_tokens_per_row(ratio > o.high, lengths) * (advantages > 0)).sum()
        metrics["clip_ratio/region_mean"] = float((low_count + high_count) / num_tokens)  # float32, as TRL logs it
        metrics["clip_ratio/low_mean"] = float(low_count / num_tokens)
        metrics["clip_ratio/high_mean"] = float(high_count / num_tokens)
    metrics["loss"] = float(loss.detach())
    if not math.isfinite(metrics["loss"]):
        raise ValueError("the loss exceeds the float range: advantages (or beta) too large; rescale them")
    return loss, metrics
