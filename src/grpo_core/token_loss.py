r"""Token-level GRPO loss (chapter §10, eqs. 6–9) in torch, with autograd.

A batch holds ``B`` completions padded to ``T`` tokens. Each token of
completion i has a log-probability under π_θ (``logps``, differentiable),
π_θ_old and π_ref; completion i has one sequence-level advantage Â_i (eq. 3)
that is broadcast to every one of its tokens. The per-token term is

.. math:: \ell_{i,t} = -\min\big(r_{i,t}\hat A_i,\ \mathrm{clip}(r_{i,t},\,1-\varepsilon_\mathrm{low},
          \,1+\varepsilon_\mathrm{high})\,\hat A_i\big) + \beta\,k_3(i,t)

with :math:`r_{i,t}` the ratio of eq. (6) and :math:`k_3` the estimator of
eq. (8). β enters here, per token, before any averaging (as in TRL, verl and
OpenRLHF). ``loss_type`` then says how the masked terms are averaged — the
only place where the trainers differ, and the source of length bias (§9):

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
``"dapo"``
    sum / number of tokens in the *global* batch (DAPO, Yu et al. 2025). On
    one process it equals "bnpo"; a trainer that splits a batch over processes
    passes the token count of all of them as ``num_items_in_batch``.

When every completion is a single token all four agree, and the loss is
minus the bandit objective :func:`grpo_core.objective.grpo_objective`.

Three options reproduce production variants of eqs. (6)–(8) (TRL 1.16.0):
``importance_sampling_level="sequence"`` replaces the per-token ratio by GSPO's
sequence ratio (:func:`~grpo_core.clipping.sequence_importance_ratio`);
``delta`` is the two-sided clip (:func:`~grpo_core.clipping.clipped_surrogate`);
``kl_estimator`` picks the KL term: ``"k3"`` (eq. 8), ``"k3_ratio"``
(:func:`~grpo_core.kl.kl_k3_ratio`, TRL's default ``use_bias_correction_kl=True``)
or ``"k3_plus"`` (:func:`~grpo_core.kl.kl_k3_plus`, verl's ``"k3+"``).
"""

from __future__ import annotations

import torch

from grpo_core._validate import choice, finite_array, nonnegative, positive_int
from grpo_core.clipping import clip_masks, clipped_surrogate, importance_ratio, sequence_importance_ratio
from grpo_core.kl import kl_k3, kl_k3_plus

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")
KL_ESTIMATORS = ("k3", "k3_ratio", "k3_plus")
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")


def _tensor(value, name: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def _log_probs(value, name: str, shape: tuple[int, ...] | None) -> torch.Tensor:
    """A floating (B, T) tensor of log-probabilities; finiteness is checked where it is used."""
    value = _tensor(value, name)
    if not value.is_floating_point():
        raise TypeError(f"{name} must hold floating-point log-probabilities, got dtype {value.dtype}")
    if shape is None and (value.ndim != 2 or 0 in value.shape):
        raise ValueError(f"{name} must have shape (completions, tokens) with both > 0, got {tuple(value.shape)}")
    if shape is not None and tuple(value.shape) != shape:
        raise ValueError(f"{name} must have the shape of logps {shape}, got {tuple(value.shape)}")
    return value


def _token_mask(mask, shape: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """The mask as given (bool, integer or float 0/1) and its per-completion token counts."""
    mask = _tensor(mask, "mask")
    if tuple(mask.shape) != shape:
        raise ValueError(f"mask must have the shape of logps {shape}, got {tuple(mask.shape)}")
    if mask.is_floating_point():
        binary = bool(((mask == 0) | (mask == 1)).all())
    else:  # integers: two reductions, no (B, T) temporary
        binary = mask.dtype == torch.bool or (int(mask.min()) >= 0 and int(mask.max()) <= 1)
    if not binary:
        raise ValueError("mask must hold only 0 and 1 (or be a bool tensor)")
    lengths = mask.sum(-1)
    if not bool((lengths > 0).all()):
        empty = torch.nonzero(lengths == 0).flatten().tolist()
        raise ValueError(
            f"mask: every completion needs at least one token; rows {empty} are all zeros "
            "(drop fully masked completions, e.g. masked truncations, before calling)"
        )
    return mask, lengths


def _fraction(flags: torch.Tensor, mask: torch.Tensor, num_tokens: torch.Tensor) -> float:
    """Fraction of the (unmasked) tokens where ``flags`` is true; ``flags`` is overwritten."""
    return float(flags.logical_and_(mask).sum() / num_tokens)


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
    """The GRPO loss (the negative of eq. 9) over a batch of completions.

    Parameters
    ----------
    logps, old_logps, ref_logps : floating tensors of shape ``(B, T)``
        Per-token log-probabilities of the sampled tokens under π_θ (with
        autograd), π_θ_old and π_ref (both treated as constants). ``ref_logps``
        may be ``None`` when ``beta == 0``; when it is given with ``beta == 0``
        the KL is still reported, but does not enter the loss.
    advantages : tensor of shape ``(B,)``
        One Â_i per completion (eq. 3), broadcast over its tokens.
    mask : tensor of shape ``(B, T)``, bool or 0/1
        1 for a completion's tokens (its EOS included), 0 for padding. Every
        row needs at least one token: drop fully masked completions first.
    eps_low, eps_high : the clip band ``[1 - eps_low, 1 + eps_high]`` of eq. (7);
        ``eps_high=None`` means ``eps_low`` (symmetric).
    beta : the KL weight of eq. (9), >= 0.
    loss_type : {"grpo", "bnpo", "dr_grpo", "dapo"}, see the module docstring.
    max_completion_length : the constant of "dr_grpo" (default ``T``); it must
        be at least the longest completion.
    num_items_in_batch : the token count of the global batch, for "dapo"
        (default: the tokens of this batch); at least the tokens of this batch.
    kl_estimator : {"k3", "k3_ratio", "k3_plus"}, the per-token KL term
        (see the module docstring); ``metrics["kl"]`` is its masked token mean.
    delta : the two-sided clip's cap on the ratio, > 1 + eps_high, or None.
    importance_sampling_level : {"token", "sequence"}: the ratio of eq. (6)
        per token, or the sequence ratio broadcast over the completion's tokens;
        the clip, the clip metrics and "k3_ratio" all use it.

    Returns
    -------
    loss : scalar tensor, to be *minimised*.
    metrics : dict with the names TRL logs: ``"clip_ratio/low_mean"``,
        ``"clip_ratio/high_mean"``, ``"clip_ratio/region_mean"`` (fractions of
        tokens whose clip is active, as in :func:`grpo_core.clipping.clip_masks`),
        ``"kl"`` (masked token mean of the KL term, when ``ref_logps`` is
        given) and ``"loss"``.

    Every (B, T) input is checked once for NaN/inf, by the formula that first
    uses it (:func:`~grpo_core.clipping.importance_ratio`,
    :func:`~grpo_core.kl.kl_k3`); the shapes, the mask and the options are
    checked here, before any arithmetic.
    """
    logps = _log_probs(logps, "logps", None)
    shape = tuple(logps.shape)
    old_logps = _log_probs(old_logps, "old_logps", shape)
    advantages = _tensor(advantages, "advantages")
    if tuple(advantages.shape) != shape[:1]:
        raise ValueError(f"advantages must have shape ({shape[0]},), one per completion, got {tuple(advantages.shape)}")
    advantages = finite_array(advantages, "advantages")
    mask, lengths = _token_mask(mask, shape)
    beta = nonnegative(beta, "beta")
    if ref_logps is None and beta > 0:
        raise TypeError("ref_logps must be a torch.Tensor when beta > 0 (it is None)")
    if ref_logps is not None:
        ref_logps = _log_probs(ref_logps, "ref_logps", shape)
    choice(loss_type, "loss_type", LOSS_TYPES)
    choice(kl_estimator, "kl_estimator", KL_ESTIMATORS)
    choice(importance_sampling_level, "importance_sampling_level", IMPORTANCE_SAMPLING_LEVELS)
    num_tokens = lengths.sum()
    if loss_type == "dr_grpo":
        longest = int(lengths.max())
        max_length = positive_int(
            shape[1] if max_completion_length is None else max_completion_length, "max_completion_length"
        )
        if max_length < longest:
            raise ValueError(f"max_completion_length must be >= the longest completion ({longest}), got {max_length}")
    if loss_type == "dapo" and num_items_in_batch is not None:
        num_items = positive_int(num_items_in_batch, "num_items_in_batch")
        if num_items < int(num_tokens):
            raise ValueError(f"num_items_in_batch must be >= this batch's {int(num_tokens)} tokens, got {num_items}")

    adv = advantages.to(logps.dtype).unsqueeze(-1).expand(shape)  # a view: Â_i on every token of completion i
    if importance_sampling_level == "token":
        ratio = importance_ratio(logps, old_logps.detach())
    else:
        ratio = sequence_importance_ratio(logps, old_logps.detach(), mask).expand(shape)
    per_token = -clipped_surrogate(ratio, adv, eps_low, eps_high, delta)
    metrics: dict[str, float] = {}
    if ref_logps is not None:
        ref_logps = ref_logps.detach()
        if kl_estimator == "k3":
            kl = kl_k3(logps, ref_logps)
        elif kl_estimator == "k3_plus":
            kl = kl_k3_plus(logps, ref_logps)
        else:  # "k3_ratio", grpo_core.kl.kl_k3_ratio with the ratio in use (unclipped)
            kl = ratio * kl_k3(logps, ref_logps)
        if beta > 0:
            per_token = per_token + beta * kl
        with torch.no_grad():
            metrics["kl"] = float((kl * mask).sum() / num_tokens)

    token_sum = per_token * mask
    if loss_type == "grpo":
        loss = (token_sum.sum(-1) / lengths).mean()
    elif loss_type == "dr_grpo":
        loss = token_sum.sum() / (shape[0] * max_length)
    elif loss_type == "dapo" and num_items_in_batch is not None:
        loss = token_sum.sum() / num_items
    else:  # "bnpo", and "dapo" on one process
        loss = token_sum.sum() / num_tokens

    with torch.no_grad():
        low, high = clip_masks(ratio, adv, eps_low, eps_high)
        in_batch = mask if mask.dtype == torch.bool else mask.bool()
        metrics["clip_ratio/region_mean"] = _fraction(low | high, in_batch, num_tokens)
        metrics["clip_ratio/low_mean"] = _fraction(low, in_batch, num_tokens)
        metrics["clip_ratio/high_mean"] = _fraction(high, in_batch, num_tokens)
    metrics["loss"] = float(loss.detach())
    return loss, metrics
