"""grpo_core — the formulas of the GRPO chapter, each in one short function.

==========  =========  ===============================================  ===========================
section     chapter    idea                                             where
==========  =========  ===============================================  ===========================
§2                     what the critic costs in memory and FLOPs        ``course.total_memory_gb``
§3          eq. (1)    sample a group from π_θ_old                      ``bandit.sample_group``
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
"""

from grpo_core.advantages import (
    centered_rewards,
    dr_grpo_advantages,
    group_advantages,
    group_mean,
    rloo_advantages,
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
from grpo_core.bandit.failure_modes import PromptSetGRPO, noisy_reward_model, std_floor_advantages, verifier_rewards
from grpo_core.bandit.ppo import BanditPPO, PPOConfig, fit_value, kl_penalized_rewards, ppo_advantages
from grpo_core.bandit.rloo import BanditRLOO, RLOOConfig, rloo_gradient
from grpo_core.bandit.runs import RunHistory, run_seeds, track
from grpo_core.clipping import clip_fractions, clip_masks, clipped_surrogate, importance_ratio
from grpo_core.course.verifier import exact_match_reward
from grpo_core.kl import categorical_kl, entropy, kl_k1, kl_k2, kl_k3
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
    "grpo_objective",
    "grpo_step",
    "importance_ratio",
    "kl_k1",
    "kl_k2",
    "kl_k3",
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
    "softmax",
    "state_value",
    "std_floor_advantages",
    "track",
    "verifier_rewards",
    "zero_signal_probability",
    "zero_std_fraction",
    "zero_std_mask",
]
