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
same ``loss_agg_mode``); OpenRLHF averages its KL loss per token in every mode (the
book's "Production formulas" page, "The loss: how token terms are averaged"). ``loss_type``
then says how the masked terms are averaged — the source of length bias's per-token weights (§9):

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
from dataclasses import dataclass

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


@dataclass(frozen=True)
class TokenLossOptions:
    """The knobs of :func:`grpo_token_loss` (its keyword arguments, documented there), checked when made."""

    eps_low: float = 0.2
    eps_high: float | None = None
    beta: float = 0.04
    loss_type: str = "grpo"
    max_completion_length: int | None = None
    num_items_in_batch: int | None = None
    kl_estimator: str = "k3"
    delta: float | None = None
    importance_sampling_level: str = "token"

    def __post_init__(self) -> None:
        clip_band(self.eps_low, self.eps_high, self.delta)
        nonnegative(self.beta, "beta")
        choice(self.loss_type, "loss_type", LOSS_TYPES)
        choice(self.kl_estimator, "kl_estimator", KL_ESTIMATORS)
        choice(self.importance_sampling_level, "importance_sampling_level", IMPORTANCE_SAMPLING_LEVELS)
        if self.max_completion_length is not None:
            positive_int(self.max_completion_length, "max_completion_length", maximum=MAX_TOKENS)
        elif self.loss_type == "dr_grpo":  # the padded width would make the constant depend on the batch
            raise ValueError('max_completion_length is required with loss_type="dr_grpo" (the configured L_max)')
        if self.num_items_in_batch is not None:
            positive_int(self.num_items_in_batch, "num_items_in_batch", maximum=MAX_TOKENS)

    def for_batch(self, ref_logps, lengths: torch.Tensor):
        """The clip band ``(1 - eps_low, 1 + eps_high)``, δ, β and what the masked token sum is divided by, given the
        batch's ``ref_logps`` and token count per completion (``None``: "grpo"'s mean of each completion's own
        tokens, then over completions)."""
        if ref_logps is None and self.beta > 0:
            raise TypeError("ref_logps must be a torch.Tensor when beta > 0 (it is None)")
        num_tokens, longest = lengths.sum(), int(lengths.max())
        if self.loss_type == "dr_grpo" and self.max_completion_length < longest:
            raise ValueError(
                f"max_completion_length must be >= the longest completion ({longest}), got {self.max_completion_length}"
            )
        if self.num_items_in_batch is not None and self.num_items_in_batch < int(num_tokens):
            raise ValueError(
                f"num_items_in_batch must be >= this batch's {int(num_tokens)} tokens, got {self.num_items_in_batch}"
            )
        divisor = {
            "grpo": None,
            "bnpo": num_tokens,
            "dr_grpo": len(lengths) * (self.max_completion_length or 0),
            "dapo": num_tokens if self.num_items_in_batch is None else self.num_items_in_batch,
        }[self.loss_type]
        return (*clip_band(self.eps_low, self.eps_high, self.delta), float(self.beta), divisor)


def _tokens_per_row(flags: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Unmasked tokens flagged, per completion. A masked token has the token ratio exp(0) = 1,
    inside every band, so a (B, T) flag needs no mask; a (B, 1) sequence flag covers its completion's tokens."""
    return flags[:, 0] * lengths if flags.shape[-1] == 1 else flags.sum(-1)


def _clip_metrics(ratio, advantages, lengths, low: float, high: float) -> dict[str, float]:
    """The fractions of tokens whose clip is active, with the names TRL logs them under (float32, as TRL's)."""
    num_tokens = lengths.sum()
    low_count = (_tokens_per_row(ratio < low, lengths) * (advantages < 0)).sum()
    high_count = (_tokens_per_row(ratio > high, lengths) * (advantages > 0)).sum()
    return {
        "clip_ratio/region_mean": float((low_count + high_count) / num_tokens),
        "clip_ratio/low_mean": float(low_count / num_tokens),
        "clip_ratio/high_mean": float(high_count / num_tokens),
    }


def grpo_token_loss(
    logps: torch.Tensor,
    old_logps: torch.Tensor,
    ref_logps: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    **options,
) -> tuple[torch.Tensor, dict[str, float]]:
    r"""The GRPO loss (the negative of eq. 9) over a batch of completions.

    ``options`` are the keyword arguments below after ``mask``, the fields of :class:`TokenLossOptions`.

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
    options = TokenLossOptions(**options)
    logps, old_logps, ref_logps, A, (mask, keep, lengths) = token_batch(
        logps, old_logps, ref_logps, tensor(advantages, "advantages"), mask
    )
    low, high, delta, beta, divisor = options.for_batch(ref_logps, lengths)

    log_ratio, peak = masked_log_ratio(logps, old_logps.detach(), keep, "logps - old_logps")  # 0 where masked
    if options.importance_sampling_level == "sequence":  # GSPO: one log-ratio per completion, its tokens' mean
        log_ratio = log_ratio.sum(-1, keepdim=True) / lengths.unsqueeze(-1)
    r = torch.exp(K.clamped_if_needed(log_ratio, peak))  # eq. (6): (B, T), or (B, 1) for the sequence ratio
    A = A.to(r.dtype).unsqueeze(-1)  # Â_i on every token of completion i
    surrogate = K.surrogate(r, A, low, high, delta).expand(logps.shape)  # eq. (7)'s min(r·Â, clip(r)·Â)
    per_token = -surrogate
    metrics: dict[str, float] = {}
    if ref_logps is not None:
        log_rho, peak = masked_log_ratio(ref_logps.detach(), logps, keep, "ref_logps - logps")
        kl = K.kl_term(options.kl_estimator, K.clamped_if_needed(log_rho, peak), r)  # eq. (8), 0 where masked
        per_token = beta * kl - surrogate if beta > 0 else per_token  # eq. (9), negated, per token
        metrics["kl"] = float(kl.detach().sum() / lengths.sum())

    token_sum = per_token * mask  # exactly 0 where masked (per_token is finite everywhere)
    # "grpo": each completion's mean, then the mean over completions; the others: one sum over one divisor
    loss = (token_sum.sum(-1) / lengths).mean() if divisor is None else token_sum.sum() / divisor

    with torch.no_grad():
        metrics |= _clip_metrics(r, A[:, 0], lengths, low, high)
    metrics["loss"] = float(loss.detach())
    if not math.isfinite(metrics["loss"]):
        raise ValueError("the loss exceeds the float range: advantages (or beta) too large; rescale them")
    return loss, metrics
