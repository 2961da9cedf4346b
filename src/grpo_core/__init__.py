r"""grpo_core — the formulas of the GRPO chapter, each in one short function.

==========  =========  ===============================================  ===========================
section     chapter    idea                                             where
==========  =========  ===============================================  ===========================
§2                     what the critic costs in memory and FLOPs        ``course.total_memory_gb``
§3          eq. (1)    sample a group from the old policy               ``bandit.sample_group``
§3          eq. (2)    one scalar reward per completion                 ``bandit.reward_of``
§3          eq. (2)    a rule-based verifier (RLVR)                     ``course.exact_match_reward``
§4          eq. (3)    group-relative advantage                         ``advantages.group_advantages``
§4          Prop. 4.1  zero-variance groups                             ``advantages.zero_std_mask``
§4          Prop. 4.1  chance a group carries no signal                 ``advantages.zero_signal_probability``
§5          eq. (4)    the value a critic would learn                   ``bandit.state_value``
§5          eq. (5)    the group mean estimates it                      ``advantages.group_mean``
§5                     a baseline leaves the policy gradient unbiased   ``bandit.expected_policy_gradient``
§6          eq. (6)    importance ratio                                 ``clipping.importance_ratio``
§6          eq. (7)    clipped surrogate                                ``clipping.clipped_surrogate``
§6          eq. (8)    k3 KL estimator (and k1, k2, exact KL)           ``kl.kl_k3``
§6          eq. (9)    the GRPO objective                               ``objective.grpo_objective``
§7, §11                the algorithm on the bandit                      ``bandit.grpo_step``
§8                     RLOO, PPO, DPO and Dr. GRPO on the same bandit   ``bandit.BanditRLOO``, ``bandit.BanditPPO``,
                                                                        ``bandit.BanditDPO``
§8                     comparable runs over seeds                       ``bandit.run_seeds``
§6, §11                k3's overshoot and freeze from a sharpened π     ``bandit.sharpened_runs``
§9                     zero-variance groups, std floor, noisy rewards   ``bandit.PromptSetGRPO``
§10                    token-level loss (torch)                         ``token_loss.grpo_token_loss``
§10                    GRPO on a tiny GRU policy (torch)                ``sequence.SequenceGRPO``
==========  =========  ===============================================  ===========================

The layers
----------
The formulas are the modules at the top: :mod:`~grpo_core.advantages`,
:mod:`~grpo_core.clipping`, :mod:`~grpo_core.kl`, :mod:`~grpo_core.objective`
and :mod:`~grpo_core.token_loss`. They import nothing of the package but its
private validators. Above them, each subpackage imports the formulas and never
another subpackage: :mod:`grpo_core.bandit` (the bandit and every method trained
on it), :mod:`grpo_core.sequence` (the torch toy of §10) and :mod:`grpo_core.course`
(§2's memory calculator, §3's verifier); only the lab, a view of a bandit run,
imports a subpackage, :mod:`grpo_core.bandit`. The names above are importable
from ``grpo_core`` itself.

``import grpo_core`` loads NumPy only; ``token_loss`` and the ``sequence`` subpackage import torch.

Contract
--------
What every public function and class of the package promises, and what
``tests/unit/test_fuzz.py``, ``tests/unit/test_contract.py`` and
``tests/unit/test_formula_options.py`` enforce.

**The range.** Every array entry (rewards, log-probabilities, logits, ratios,
advantages) and every real knob (ε, β, lr, …) is a finite number of magnitude
at most ``1e9`` (``grpo_core._validate.MAX_MAGNITUDE``; the memory calculator
takes parameter and token counts up to ``1e15``). That holds every ratio the
clamp allows (below :math:`e^{20} \approx 4.9\cdot10^8`) and any reward scale a
course meets, and keeps every intermediate result (a square of a reward, r·Â,
β·r·k3) far inside float32. Within it, every result is finite and is the
visible formula's own floating-point value; a value beyond it is refused with a
``ValueError`` naming the argument. The token loss's log-probabilities need
only be finite where ``mask`` is 1: their differences are clamped.

**Accepted inputs.** Arrays may be NumPy arrays of float64, float32, float16
or integers, Python numbers or (nested) sequences of real numbers (0-d tensors
among them), or torch tensors of float64, float32, float16, bfloat16 or
integers, with or without ``requires_grad``, contiguous or not. Booleans (also
inside a list), strings, bytes, complex numbers, ``None`` and ragged sequences
are never numbers. A scalar knob is an ``int`` or ``float`` (NumPy's too),
never a bool; counts are integers (group sizes, steps, epochs and pairs up to
10**7; token counts up to 2**53); seeds are integers in [0, 2**64); choices are
exact strings; flags are bools (NumPy's too); random generators are passed
explicitly (a NumPy ``Generator`` or a torch ``Generator``), never drawn from
the global state.

**What comes back.** Element-wise formulas (``clipping``, ``kl``,
``objective``) return the backend they were given: NumPy in, NumPy out;
torch in, torch out, on the same device, with autograd through it. float64
and float32 are kept, float16 and bfloat16 are computed and returned in
float32, integers become float64. The NumPy-only functions (advantages, the
bandit, DPO, PPO, RLOO, the verifier) take tensors too (detached) and return
float64 NumPy arrays or Python floats. Whatever a function or a trainer keeps
is its own copy, and what it returns is the caller's: changing either
afterwards changes nothing on the other side. NumPy and torch arrays of one
dtype give the same results, the same clip masks included.

**Errors.** Bad input raises ``ValueError`` (a value out of range, a shape,
a NaN or inf) or ``TypeError`` (a kind of object that is not accepted) —
never another class — and the message names the argument and says what was
expected (quoting at most 80 characters of it). Arguments are validated once,
where they enter the public API (``_validate``); after that one call, a
function's body is its equation, in the chapter's names. The guards an
equation needs are named kernels beside it (``_kernels``): ``centered`` (R −
mean(R), exactly 0 in a zero-variance group), ``inf_where_zero`` (eq. 3's
divisor when ε = 0) and ``clamped`` (a log-ratio within ±20 before it is exponentiated).

**Numeric guarantees.**

* Masked positions never matter: in the token loss (``token_loss``) and
  the sequence ratio, whatever sits where ``mask`` is 0 — finite garbage,
  NaN, ±inf — the loss, its gradient (exactly 0 there) and every metric are
  bit for bit the same. Log-ratios are masked with ``where`` before anything
  is exponentiated.
* Log-ratios are clamped to ±20 before they are exponentiated
  (``clipping.LOG_RATIO_BOUND``; which production trainers do the same: the
  book's "Production formulas" page): a ratio and k3 stay below
  :math:`e^{20} \approx 4.9\cdot10^8` and their product r·k3 (``kl_k3_ratio``)
  below :math:`e^{40} \approx 2.4\cdot10^{17}`, with zero gradient beyond the bound.
* A zero-variance group gives Â = 0 exactly (Property 4.1), in any dtype and
  for any ε ≥ 0, and so does a group whose spread is too small for its square
  to be a float (below ~1e-154) when ε = 0; every other group gets exactly
  ``(R - R.mean()) / (R.std() + eps)``.
* Probabilities may hold exact zeros where a policy legitimately reached
  them (0 log 0 = 0 in the KL and the entropy); only where their logarithm is
  taken (``set_policy``, ``kl_regularized_optimum``) must they be > 0. A
  trainer's KL is computed from its logits, so it stays finite where
  :math:`\pi_\mathrm{ref}` underflowed to 0. A trainer whose policy collapsed
  (lr ≥ 1e4, or ``init_logits=[0, 800, 0, 0]``) still steps, snapshots, is
  tracked and replays from its seed.
* The verifier reads completions and normalises answers in linear time and
  compares numbers of any length (exactly as rationals up to 4000 digits, as
  written beyond); a float reference matches what ``str`` writes for it and
  its exact decimal value (``1e-07``: "1e-07" and "0.0000001").
"""

from grpo_core.advantages import (
    centered_rewards,
    dr_grpo_advantages,
    group_advantages,
    group_mean,
    group_std,
    rloo_advantages,
    std_floor_advantages,
    zero_signal_probability,
    zero_std_fraction,
    zero_std_mask,
)
from grpo_core.bandit import (
    ACTION_NAMES,
    CHAPTER_REWARDS,
    BanditGRPO,
    BanditTrainer,
    GRPOConfig,
    StepResult,
    grpo_step,
    log_softmax,
    objective_gradient,
    reward_of,
    sample_group,
    softmax,
    state_value,
)
from grpo_core.bandit.dpo import BanditDPO, DPOConfig, dpo_gradient, dpo_loss, preference_pairs
from grpo_core.bandit.failure_modes import PromptSetGRPO, noisy_reward_model, verifier_rewards
from grpo_core.bandit.ppo import BanditPPO, PPOConfig, fit_value, kl_penalized_rewards, ppo_advantages
from grpo_core.bandit.rloo import BanditRLOO, RLOOConfig, rloo_gradient
from grpo_core.bandit.runs import RunHistory, run_seeds, track
from grpo_core.bandit.sharpened import SeedEndings, sharpened_runs
from grpo_core.clipping import (
    clip_fractions,
    clip_masks,
    clipped_surrogate,
    importance_ratio,
    sequence_importance_ratio,
)
from grpo_core.course.verifier import exact_match_reward
from grpo_core.kl import categorical_kl, entropy, kl_k1, kl_k2, kl_k3, kl_k3_plus, kl_k3_ratio
from grpo_core.objective import clip_objective, grpo_objective

__all__ = [
    "ACTION_NAMES",
    "CHAPTER_REWARDS",
    "BanditDPO",
    "BanditGRPO",
    "BanditPPO",
    "BanditRLOO",
    "BanditTrainer",
    "DPOConfig",
    "GRPOConfig",
    "PPOConfig",
    "PromptSetGRPO",
    "RLOOConfig",
    "RunHistory",
    "SeedEndings",
    "StepResult",
    "categorical_kl",
    "centered_rewards",
    "clip_fractions",
    "clip_masks",
    "clip_objective",
    "clipped_surrogate",
    "dpo_gradient",
    "dpo_loss",
    "dr_grpo_advantages",
    "entropy",
    "exact_match_reward",
    "fit_value",
    "group_advantages",
    "group_mean",
    "group_std",
    "grpo_objective",
    "grpo_step",
    "importance_ratio",
    "kl_k1",
    "kl_k2",
    "kl_k3",
    "kl_k3_plus",
    "kl_k3_ratio",
    "kl_penalized_rewards",
    "log_softmax",
    "noisy_reward_model",
    "objective_gradient",
    "ppo_advantages",
    "preference_pairs",
    "reward_of",
    "rloo_advantages",
    "rloo_gradient",
    "run_seeds",
    "sample_group",
    "sequence_importance_ratio",
    "sharpened_runs",
    "softmax",
    "state_value",
    "std_floor_advantages",
    "track",
    "verifier_rewards",
    "zero_signal_probability",
    "zero_std_fraction",
    "zero_std_mask",
]
