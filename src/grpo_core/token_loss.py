r"""Token-level GRPO loss (chapter §10, eqs. 6–9) in torch, with autograd.

A batch holds ``B`` completions padded to ``T`` tokens. Each token of
completion i has a log-probability under π_θ (``logps``, differentiable),
π_θ_old and π_ref; completion i has one sequence-level advantage Â_i (eq. 3)
that is broadcast to every one of its tokens. The per-token term is

.. math:: \ell_{i,t} = -\Big[\min\big(r_{i,t}\hat A_i,\ \mathrm{clip}(r_{i,t}, 1-\varepsilon_\mathrm{low}, 1+\varepsilon_\mathrm{high})\hat A_i\big)
          - \beta\,k_3(i,t)\Big]

and ``loss_type`` says how the masked terms are averaged:

``"grpo"``
    eq. (7): mean over each completion's own tokens, then over completions
    (the 1/|o_i| weighting: a token of a short completion weighs more);
``"bnpo"``
    sum over all tokens of the batch / number of tokens in the batch;
``"dr_grpo"``
    sum over all tokens / (B × ``max_completion_length``), a constant
    (Dr. GRPO, Liu et al. 2025);
``"dapo"``
    sum / number of tokens in the global batch (DAPO, Yu et al. 2025). On one
    process it equals "bnpo"; across processes trainers divide by the token
    count of all processes, which is what ``num_items_in_batch`` is for.
"""

from __future__ import annotations

import torch

from grpo_core._validate import choice, finite_array, nonnegative, positive_int, same_shape
from grpo_core.clipping import clip_masks, clipped_surrogate, importance_ratio
from grpo_core.kl import kl_k3

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo")


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> float:
    return float((values * mask).sum() / mask.sum())


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
) -> tuple[torch.Tensor, dict[str, float]]:
    """The GRPO loss (the negative of eq. 9) over a batch of completions.

    Parameters
    ----------
    logps, old_logps, ref_logps : tensors of shape ``(B, T)``
        Per-token log-probabilities under π_θ, π_θ_old and π_ref.
        ``ref_logps`` may be ``None`` when ``beta == 0``.
    advantages : tensor of shape ``(B,)``
        One Â_i per completion, broadcast over its tokens.
    mask : tensor of shape ``(B, T)``
        1 for a completion's tokens, 0 for padding (or a masked truncation);
        every row needs at least one token.
    eps_low, eps_high, beta : the clip range (eq. 7) and KL weight (eq. 9).
    loss_type : {"grpo", "bnpo", "dr_grpo", "dapo"}, see the module docstring.
    max_completion_length : the constant denominator of "dr_grpo" (default T).
    num_items_in_batch : token count of the global batch, for "dapo" (default:
        the tokens of this batch).

    Returns
    -------
    loss : scalar tensor, to be *minimised*.
    metrics : dict with the names TRL logs: ``"kl"`` (mean k3 over tokens),
        ``"clip_ratio/low_mean"``, ``"clip_ratio/high_mean"``,
        ``"clip_ratio/region_mean"`` (token fractions), and ``"loss"``.
    """
    for name, value in (("logps", logps), ("old_logps", old_logps), ("advantages", advantages), ("mask", mask)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    finite_array(logps, "logps", ndim=(2,))
    finite_array(advantages, "advantages", ndim=(1,))
    if advantages.shape[0] != logps.shape[0]:
        raise ValueError(f"advantages must have one entry per completion ({logps.shape[0]}), got {advantages.shape[0]}")
    same_shape(logps=logps, old_logps=old_logps, mask=mask)
    mask = mask.to(logps.dtype)
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise ValueError("mask must hold only 0 and 1")
    if not bool((mask.sum(-1) > 0).all()):
        raise ValueError("mask: every completion needs at least one token (a row of zeros was found)")
    beta = nonnegative(beta, "beta")
    choice(loss_type, "loss_type", LOSS_TYPES)

    adv = advantages.to(logps.dtype).unsqueeze(-1).expand_as(logps)
    ratio = importance_ratio(logps, old_logps.detach())
    per_token = -clipped_surrogate(ratio, adv, eps_low, eps_high)
    metrics: dict[str, float] = {}
    if beta > 0 or ref_logps is not None:
        if not isinstance(ref_logps, torch.Tensor):
            raise TypeError("ref_logps must be a torch.Tensor when beta > 0")
        k3 = kl_k3(logps, ref_logps.detach())
        per_token = per_token + beta * k3
        metrics["kl"] = _masked_mean(k3.detach(), mask)

    num_completions = logps.shape[0]
    if loss_type == "grpo":
        loss = ((per_token * mask).sum(-1) / mask.sum(-1)).mean()
    elif loss_type == "bnpo":
        loss = (per_token * mask).sum() / mask.sum()
    elif loss_type == "dr_grpo":
        length = logps.shape[1] if max_completion_length is None else max_completion_length
        loss = (per_token * mask).sum() / (num_completions * positive_int(length, "max_completion_length"))
    else:
        items = mask.sum() if num_items_in_batch is None else positive_int(num_items_in_batch, "num_items_in_batch")
        loss = (per_token * mask).sum() / items

    with torch.no_grad():
        low, high = clip_masks(ratio, adv, eps_low, eps_high)
        metrics["clip_ratio/low_mean"] = _masked_mean(low.to(mask.dtype), mask)
        metrics["clip_ratio/high_mean"] = _masked_mean(high.to(mask.dtype), mask)
        metrics["clip_ratio/region_mean"] = _masked_mean((low | high).to(mask.dtype), mask)
    metrics["loss"] = float(loss.detach())
    return loss, metrics
