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
    Pass ``max_completion_length``: its default, the padded width ``T``, is the
    longest completion that happened to be drawn, which changes from batch to
    batch, so the "constant" is then not one.
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

import torch

from grpo_core._validate import choice, nonnegative, positive_int, tensor, token_batch
from grpo_core.clipping import _clamped, _masked_log_ratio, _surrogate, clip_range, delta_cap
from grpo_core.objective import KL_ESTIMATORS, _kl_term

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")


def _tokens_per_row(flags: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Unmasked tokens flagged, per completion. A masked token has the token ratio exp(0) = 1,
    inside every band, so a (B, T) flag needs no mask; a (B, 1) sequence flag covers its completion's tokens."""
    return flags[:, 0] * lengths if flags.shape[-1] == 1 else flags.sum(-1)


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
        least the longest completion. The default, the padded width ``T`` of this
        batch, is kept for one-off calls but is not Dr. GRPO's constant: set it.
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

    Everything is checked here, once, before the arithmetic; the finiteness of
    the unmasked entries is checked on the masked log-ratios the loss needs
    anyway.
    """
    logps, old_logps, ref_logps, advantages, (mask, keep, lengths) = token_batch(
        logps, old_logps, ref_logps, tensor(advantages, "advantages"), mask
    )
    shape = tuple(logps.shape)
    beta = nonnegative(beta, "beta")
    if ref_logps is None and beta > 0:
        raise TypeError("ref_logps must be a torch.Tensor when beta > 0 (it is None)")
    low, high = clip_range(eps_low, eps_high)
    delta = delta_cap(delta, high)
    choice(loss_type, "loss_type", LOSS_TYPES)
    choice(kl_estimator, "kl_estimator", KL_ESTIMATORS)
    choice(importance_sampling_level, "importance_sampling_level", IMPORTANCE_SAMPLING_LEVELS)
    num_tokens = lengths.sum()
    max_length = (
        shape[1] if max_completion_length is None else positive_int(max_completion_length, "max_completion_length")
    )
    if loss_type == "dr_grpo" and max_length < int(lengths.max()):
        raise ValueError(
            f"max_completion_length must be >= the longest completion ({int(lengths.max())}), got {max_length}"
        )
    if num_items_in_batch is not None:
        num_items = positive_int(num_items_in_batch, "num_items_in_batch")
        if num_items < int(num_tokens):
            raise ValueError(f"num_items_in_batch must be >= this batch's {int(num_tokens)} tokens, got {num_items}")

    sequence = importance_sampling_level == "sequence"
    log_ratio = _masked_log_ratio(logps, old_logps.detach(), keep, "logps - old_logps", clamp=not sequence)
    if sequence:  # GSPO: the mean log-ratio of each completion, then clamped
        log_ratio = _clamped(log_ratio.sum(-1, keepdim=True) / lengths.unsqueeze(-1))
    ratio = torch.exp(log_ratio)  # eq. (6): (B, T), or (B, 1) for the sequence ratio
    adv = advantages.to(ratio.dtype).unsqueeze(-1)  # Â_i on every token of completion i
    surrogate = _surrogate(ratio, adv, low, high, delta).expand(shape)
    per_token = -surrogate
    metrics: dict[str, float] = {}
    if ref_logps is not None:
        log_rho = _masked_log_ratio(ref_logps.detach(), logps, keep, "ref_logps - logps")
        kl = _kl_term(kl_estimator, log_rho, ratio)  # 0 at masked positions
        if beta > 0:
            per_token = (beta * kl).sub_(surrogate)  # β·KL - surrogate, the same bits as -surrogate + β·KL
        with torch.no_grad():
            metrics["kl"] = float(kl.sum() / num_tokens)

    token_sum = per_token * mask  # per_token is finite everywhere, so this is exactly 0 at masked positions
    if loss_type == "grpo":
        loss = (token_sum.sum(-1) / lengths).mean()
    elif loss_type == "dr_grpo":
        loss = token_sum.sum() / (shape[0] * max_length)
    elif loss_type == "dapo" and num_items_in_batch is not None:
        loss = token_sum.sum() / num_items
    else:  # "bnpo", and "dapo" on one process
        loss = token_sum.sum() / num_tokens

    with torch.no_grad():
        low_count = (_tokens_per_row(ratio < low, lengths) * (advantages < 0)).sum()
        high_count = (_tokens_per_row(ratio > high, lengths) * (advantages > 0)).sum()
        metrics["clip_ratio/region_mean"] = float((low_count + high_count) / num_tokens)  # float32, as TRL logs it
        metrics["clip_ratio/low_mean"] = float(low_count / num_tokens)
        metrics["clip_ratio/high_mean"] = float(high_count / num_tokens)
    metrics["loss"] = float(loss.detach())
    if not math.isfinite(metrics["loss"]):
        raise ValueError("the loss exceeds the float range: advantages (or beta) too large; rescale them")
    return loss, metrics
