"""The bandit layer: the chapter's one-prompt bandit and every method trained on it (§5, §7–§9, §11).

Built on the formulas of :mod:`grpo_core` and nothing above them; NumPy only, gradients by hand.

=============================================  ==================================================
module                                         what it holds
=============================================  ==================================================
:mod:`~grpo_core.bandit.env`                   reward table, softmax policy, eqs. (1), (2), (4)
:mod:`~grpo_core.bandit.policy_gradient`       REINFORCE and the baseline lemma (§4–§5)
:mod:`~grpo_core.bandit.trainer`               the flow every method shares (construct, reset, run)
:mod:`~grpo_core.bandit.grpo`                  the GRPO step and its gradient by hand (§7, §11)
:mod:`~grpo_core.bandit.rloo`                  RLOO (§8)
:mod:`~grpo_core.bandit.ppo`                   PPO with a critic and KL-in-reward (§2, §8)
:mod:`~grpo_core.bandit.dpo`                   DPO on offline preference pairs (§8)
:mod:`~grpo_core.bandit.failure_modes`         §9's toys: binary and noisy rewards, GRPO over a prompt set
:mod:`~grpo_core.bandit.runs`                  learning curves of any trainer, over seeds (§8)
:mod:`~grpo_core.bandit.sharpened`             GRPO from a sharpened π over seeds (§6, §11)
=============================================  ==================================================
"""

from grpo_core.bandit.dpo import (
    BanditDPO,
    DPOConfig,
    DPOStep,
    dpo_gradient,
    dpo_loss,
    dpo_margins,
    implicit_rewards,
    kl_regularized_optimum,
    preference_pairs,
    preference_probability,
)
from grpo_core.bandit.env import (
    ACTION_NAMES,
    CHAPTER_REWARDS,
    check_actions,
    check_rng,
    log_softmax,
    reward_of,
    sample_group,
    softmax,
    state_value,
)
from grpo_core.bandit.failure_modes import (
    PromptSetGRPO,
    PromptSetStep,
    noisy_reward_model,
    verifier_rewards,
)
from grpo_core.bandit.grpo import (
    ADVANTAGES,
    BanditGRPO,
    GRPOConfig,
    StepResult,
    grpo_step,
    objective_gradient,
)
from grpo_core.bandit.policy_gradient import expected_policy_gradient, reinforce_gradient, score
from grpo_core.bandit.ppo import BanditPPO, PPOConfig, PPOStep, fit_value, kl_penalized_rewards, ppo_advantages
from grpo_core.bandit.rloo import BanditRLOO, RLOOConfig, RLOOStep, rloo_gradient
from grpo_core.bandit.runs import RunHistory, run_seeds, track
from grpo_core.bandit.sharpened import SeedEndings, sharpened_runs
from grpo_core.bandit.trainer import BanditTrainer

__all__ = [
    "ACTION_NAMES",
    "ADVANTAGES",
    "CHAPTER_REWARDS",
    "BanditDPO",
    "BanditGRPO",
    "BanditPPO",
    "BanditRLOO",
    "BanditTrainer",
    "DPOConfig",
    "DPOStep",
    "GRPOConfig",
    "PPOConfig",
    "PPOStep",
    "PromptSetGRPO",
    "PromptSetStep",
    "RLOOConfig",
    "RLOOStep",
    "RunHistory",
    "SeedEndings",
    "StepResult",
    "check_actions",
    "check_rng",
    "dpo_gradient",
    "dpo_loss",
    "dpo_margins",
    "expected_policy_gradient",
    "fit_value",
    "grpo_step",
    "implicit_rewards",
    "kl_penalized_rewards",
    "kl_regularized_optimum",
    "log_softmax",
    "noisy_reward_model",
    "objective_gradient",
    "ppo_advantages",
    "preference_pairs",
    "preference_probability",
    "reinforce_gradient",
    "reward_of",
    "rloo_gradient",
    "run_seeds",
    "sample_group",
    "score",
    "sharpened_runs",
    "softmax",
    "state_value",
    "track",
    "verifier_rewards",
]
