r"""GRPO on a real sequence policy (chapter §7 algorithm, §10 token MDP), on CPU.

One iteration of :class:`~grpo_core.sequence.grpo.SequenceGRPO` is the algorithm box of §7 with tokens:

1. :math:`\theta_\mathrm{old} \leftarrow \theta`: sample ``prompts_per_step`` targets and a group of
   ``group_size`` completions for each (eq. 1) with :meth:`~grpo_core.sequence.policy.GRUPolicy.sample`;
2. score them with the task's checker (eq. 2) and compute the group-relative
   advantages :math:`\hat A_i` (eq. 3, :func:`grpo_core.advantages.group_advantages`);
3. recompute :math:`\log\pi_{\theta_\mathrm{old}}` and :math:`\log\pi_\mathrm{ref}`
   of every sampled token by a forward pass under ``no_grad`` — the trainer's
   own numbers, as production trainers do, rather than the sampler's;
4. ``inner_epochs`` times: :math:`\log\pi_\theta` with autograd, the token
   loss :func:`grpo_core.token_loss.grpo_token_loss` (:math:`\hat A_i` broadcast to every
   token, per-token ratio and clip, β·k3 per token), one Adam step.

:math:`\pi_\mathrm{ref}` is a frozen copy of the policy taken when the run starts (the warm
start stands in for the SFT checkpoint).
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass

import numpy as np
import torch

from grpo_core._validate import boolean, choice, nonnegative, positive_int, seed_value
from grpo_core.advantages import SCALES, group_advantages, zero_std_fraction
from grpo_core.config import ClippedUpdate
from grpo_core.kl import kl_k3
from grpo_core.sequence.policy import Completions, GRUPolicy
from grpo_core.token_loss import LOSS_TYPES, grpo_token_loss


@dataclass(frozen=True)
class SequenceGRPOConfig(ClippedUpdate):
    """The knobs of a run, named after their production counterparts.

    ``group_size`` (G, TRL's ``num_generations``), ``prompts_per_step``,
    ``loss_type``, the advantage's ``adv_eps``/``adv_ddof``/``adv_scale``
    (eq. 3: the chapter's 1e-8 and population std by default), ``mask_truncated``
    (TRL's ``mask_truncated_completions``), and the knobs every clipped update
    shares (:class:`~grpo_core.config.ClippedUpdate`: ``eps_low``/``eps_high``,
    TRL's ``epsilon``/``epsilon_high``; ``beta`` of eq. 9; ``inner_epochs``,
    TRL's ``num_iterations``; ``lr``, here Adam's).
    """

    #: G, completions per prompt (TRL's ``num_generations``).
    group_size: int = 8
    #: Prompts per iteration.
    prompts_per_step: int = 16
    #: How the token loss averages, one of ``grpo_core.token_loss.LOSS_TYPES``.
    loss_type: str = "grpo"
    #: ε of eq. (3).
    adv_eps: float = 1e-8
    #: 0 for the population std of eq. (3), 1 for the sample std.
    adv_ddof: int = 0
    #: Divide by the std of the ``group``, of the ``batch``, or ``none``.
    adv_scale: str = "group"
    #: Leave completions without EOS out of the loss (TRL's ``mask_truncated_completions``).
    mask_truncated: bool = False
    #: Adam's learning rate.
    lr: float = 2e-3

    def __post_init__(self) -> None:
        super().__post_init__()
        positive_int(self.group_size, "group_size", minimum=2)
        positive_int(self.prompts_per_step, "prompts_per_step")
        choice(self.loss_type, "loss_type", LOSS_TYPES)
        nonnegative(self.adv_eps, "adv_eps")
        positive_int(self.adv_ddof, "adv_ddof", minimum=0, maximum=1)
        choice(self.adv_scale, "adv_scale", SCALES)
        boolean(self.mask_truncated, "mask_truncated")


@dataclass(frozen=True)
class Batch:
    """One iteration's data: prompts, completions, rewards, Â and the frozen log-probs."""

    #: The prompt (target sum) of each completion.
    targets: torch.Tensor
    #: The sampled completions.
    completions: Completions
    #: Their rewards (eq. 2).
    rewards: torch.Tensor
    #: Their advantages :math:`\hat A_i` (eq. 3), one per completion.
    advantages: torch.Tensor
    #: :math:`\log\pi_{\theta_\mathrm{old}}` of every sampled token.
    old_logps: torch.Tensor
    #: :math:`\log\pi_\mathrm{ref}` of every sampled token.
    ref_logps: torch.Tensor
    #: The tokens the loss counts.
    loss_mask: torch.Tensor


@dataclass(frozen=True)
class IterationStats:
    """What one iteration logs (the learning curves of the notebook)."""

    #: Mean reward of the iteration's completions.
    reward: float
    #: Fraction of groups with equal rewards.
    zero_std_fraction: float
    #: Mean completion length in tokens.
    mean_length: float
    #: Fraction of completions without EOS.
    truncated_fraction: float
    #: Mean k3 estimate of :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})` per token.
    kl: float
    #: Fraction of tokens clipped below :math:`1 - \varepsilon_\mathrm{low}`.
    clip_low: float
    #: Fraction of tokens clipped above :math:`1 + \varepsilon_\mathrm{high}`.
    clip_high: float
    #: Fraction of tokens whose clip is active.
    clip_region: float
    #: The token loss of the last inner epoch.
    loss: float
    #: Largest absolute gap between the sampler's token log-probs and the trainer's recomputation.
    sampler_gap: float


class SequenceGRPO:
    r"""A GRPO run on a :class:`~grpo_core.sequence.policy.GRUPolicy`, with :math:`\pi_\mathrm{ref}` frozen at the
    start.

    One seeded ``torch.Generator`` draws every prompt and every token, so a seed fixes the run.
    """

    def __init__(self, policy: GRUPolicy, config: SequenceGRPOConfig = SequenceGRPOConfig(), seed: int = 0):
        if not isinstance(policy, GRUPolicy):
            raise TypeError(f"policy must be a GRUPolicy, got {type(policy).__name__}")
        if not isinstance(config, SequenceGRPOConfig):
            raise TypeError(f"config must be a SequenceGRPOConfig, got {type(config).__name__}")
        self.policy = policy
        self.ref_policy = copy.deepcopy(policy).requires_grad_(False)
        self.config = config
        self.task = policy.task
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=config.lr)
        self.generator = torch.Generator().manual_seed(seed_value(seed))
        self.history: list[IterationStats] = []

    def collect(self) -> Batch:
        r"""Steps 1–3: sample groups from :math:`\pi_{\theta_\mathrm{old}}`, score them, Â per group, frozen
        log-probs."""
        config = self.config
        targets = self.task.sample_targets(config.prompts_per_step, self.generator)
        targets = targets.repeat_interleave(config.group_size)
        completions = self.policy.sample(targets, self.generator)
        rewards = self.task.rewards(targets, completions.tokens)
        advantages = group_advantages(
            rewards.reshape(-1, config.group_size).numpy(),
            eps=config.adv_eps,
            ddof=config.adv_ddof,
            scale=config.adv_scale,
        )
        with torch.no_grad():
            old_logps = self.policy.token_logps(targets, completions.tokens)
            ref_logps = self.ref_policy.token_logps(targets, completions.tokens)
        loss_mask = completions.mask
        if config.mask_truncated:
            loss_mask = loss_mask & ~completions.truncated[:, None]
        return Batch(
            targets=targets,
            completions=completions,
            rewards=rewards,
            advantages=torch.as_tensor(advantages.reshape(-1), dtype=torch.float32),
            old_logps=old_logps,
            ref_logps=ref_logps,
            loss_mask=loss_mask,
        )

    def loss(self, batch: Batch, logps: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        """Eq. (9) with tokens on the rows that have at least one unmasked token."""
        config = self.config
        rows = batch.loss_mask.any(-1)
        return grpo_token_loss(
            logps[rows],
            batch.old_logps[rows],
            batch.ref_logps[rows],
            batch.advantages[rows],
            batch.loss_mask[rows],
            eps_low=config.eps_low,
            eps_high=config.eps_high,
            beta=config.beta,
            loss_type=config.loss_type,
            max_completion_length=self.task.max_length,
        )

    def update(self, batch: Batch) -> dict[str, float]:
        """Step 4: ``inner_epochs`` Adam steps on the token loss; the metrics of the last one.

        A batch with no unmasked token (e.g. every completion truncated, with
        ``mask_truncated``) leaves the policy alone and returns ``{}``.
        """
        metrics: dict[str, float] = {}
        if not bool(batch.loss_mask.any()):
            return metrics
        for _ in range(self.config.inner_epochs):
            logps = self.policy.token_logps(batch.targets, batch.completions.tokens)
            loss, metrics = self.loss(batch, logps)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        return metrics

    def step(self) -> IterationStats:
        """One GRPO iteration (§7); appends and returns its statistics."""
        batch = self.collect()
        metrics = self.update(batch) or self._idle_metrics(batch)
        completions = batch.completions
        stats = IterationStats(
            reward=float(batch.rewards.mean()),
            zero_std_fraction=zero_std_fraction(batch.rewards.reshape(-1, self.config.group_size).numpy()),
            mean_length=float(completions.lengths.float().mean()),
            truncated_fraction=float(completions.truncated.float().mean()),
            kl=metrics["kl"],
            clip_low=metrics["clip_ratio/low_mean"],
            clip_high=metrics["clip_ratio/high_mean"],
            clip_region=metrics["clip_ratio/region_mean"],
            loss=metrics["loss"],
            sampler_gap=float(((completions.sampling_logps - batch.old_logps).abs() * completions.mask).max()),
        )
        self.history.append(stats)
        return stats

    @staticmethod
    def _idle_metrics(batch: Batch) -> dict[str, float]:
        r"""The statistics of an iteration that trained on nothing: no loss, no clip,
        :math:`\pi_\theta = \pi_{\theta_\mathrm{old}}`,
        and the KL to :math:`\pi_\mathrm{ref}` measured on every sampled token (not NaN)."""
        mask = batch.completions.mask
        kl = float(kl_k3(batch.old_logps[mask], batch.ref_logps[mask]).mean())
        return {
            "kl": kl,
            "clip_ratio/low_mean": 0.0,
            "clip_ratio/high_mean": 0.0,
            "clip_ratio/region_mean": 0.0,
            "loss": 0.0,
        }

    def run(self, iterations: int) -> list[IterationStats]:
        """``iterations`` GRPO iterations, each on fresh groups."""
        return [self.step() for _ in range(positive_int(iterations, "iterations"))]

    def curves(self) -> dict[str, np.ndarray]:
        """The history as one array per statistic (for plotting)."""
        if not self.history:
            return {}
        return {name: np.array([asdict(stats)[name] for stats in self.history]) for name in asdict(self.history[0])}

    def evaluate(self, prompts: int = 64, group_size: int = 8, seed: int = 1234) -> float:
        r"""Mean reward of fresh samples from :math:`\pi_\theta` on ``prompts`` targets, with its own generator."""
        prompts, group_size = positive_int(prompts, "prompts"), positive_int(group_size, "group_size")
        generator = torch.Generator().manual_seed(seed_value(seed))
        targets = self.task.sample_targets(prompts, generator).repeat_interleave(group_size)
        return float(self.task.rewards(targets, self.policy.sample(targets, generator).tokens).mean())
