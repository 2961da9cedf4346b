r"""Comparable runs on the one-prompt bandit (chapter §8): one trainer shape, one history shape.

Every method of §8 — GRPO (:class:`grpo_core.bandit.BanditGRPO`), RLOO
(:class:`grpo_core.bandit.rloo.BanditRLOO`), PPO (:class:`grpo_core.bandit.ppo.BanditPPO`)
and DPO (:class:`grpo_core.bandit.dpo.BanditDPO`) — starts from the same logits
(uniform π unless told otherwise) with :math:`\pi_\mathrm{ref} \leftarrow \pi_\theta` captured at reset, takes
``steps`` updates, and is summarised after each update by exact quantities of
the *policy*, not of the samples it happened to draw:

* ``expected_reward`` — :math:`V^\pi = \sum_a \pi(a)\,r(a)`, eq. (4);
* ``p_best`` — the probability of the best arm(s);
* ``kl`` — the exact :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})`, the quantity eq. (8) estimates;
* ``entropy`` — :math:`H(\pi_\theta)`;
* ``samples`` — completions drawn so far: rollouts from :math:`\pi_\theta` for the online
  methods, the offline preference dataset (drawn from :math:`\pi_\mathrm{ref}`) for DPO;

and whatever the method's snapshot adds (GRPO: the last group's ``group_reward``
and ``clip_fraction``; PPO: the critic's ``value``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from grpo_core._validate import positive_int, seed_value
from grpo_core.bandit.trainer import BanditTrainer


@dataclass(frozen=True)
class RunHistory:
    """Learning curves of one run (arrays of shape ``(steps + 1,)``) or of many seeds (``(seeds, steps + 1)``).

    ``curves`` holds one array per key of the trainer's
    :meth:`~grpo_core.bandit.trainer.BanditTrainer.snapshot` (``expected_reward``,
    ``p_best``, ``kl``, ``entropy``, ``samples`` and whatever the method adds);
    ``history["kl"]`` is ``history.curves["kl"]``. Index 0 is the start,
    before any update. ``final_probs`` is the policy after the last update,
    shape ``(K,)`` or ``(seeds, K)``. ``wall_time`` is in seconds.
    """

    #: One array per key of the trainer's snapshot.
    curves: dict[str, np.ndarray]
    #: The policy after the last update.
    final_probs: np.ndarray
    #: Seconds spent.
    wall_time: float

    def __getitem__(self, key: str) -> np.ndarray:
        return self.curves[key]

    @property
    def expected_reward(self) -> np.ndarray:
        return self.curves["expected_reward"]

    @property
    def p_best(self) -> np.ndarray:
        return self.curves["p_best"]

    @property
    def kl(self) -> np.ndarray:
        return self.curves["kl"]

    @property
    def samples(self) -> np.ndarray:
        return self.curves["samples"]

    @property
    def steps(self) -> int:
        return self.expected_reward.shape[-1] - 1


def track(trainer, steps: int) -> RunHistory:
    """Take ``steps`` updates of ``trainer`` (from where it stands) and record its snapshot after each."""
    if not isinstance(trainer, BanditTrainer):
        raise TypeError(f"trainer must be a BanditTrainer (BanditGRPO, BanditRLOO, ...), got {type(trainer).__name__}")
    steps = positive_int(steps, "steps")
    start = time.perf_counter()
    rows = [trainer.snapshot()]
    for _ in range(steps):
        trainer.step()
        rows.append(trainer.snapshot())
    wall_time = time.perf_counter() - start
    curves = {key: np.array([row[key] for row in rows]) for key in rows[0]}
    return RunHistory(curves, final_probs=trainer.probs, wall_time=wall_time)


def run_seeds(make_trainer, steps: int, seeds) -> RunHistory:
    """Run ``make_trainer(seed)`` for ``steps`` updates for every seed; stack the histories.

    ``make_trainer`` is a callable seed -> trainer (e.g. a lambda around a
    trainer class), ``seeds`` an iterable of integers in [0, 2**64).
    ``wall_time`` is the total over the seeds.
    """
    if not callable(make_trainer):
        raise TypeError(f"make_trainer must be a callable seed -> trainer, got {type(make_trainer).__name__}")
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise TypeError(f"seeds must be an iterable of integers, got {type(seeds).__name__}")
    seeds = [seed_value(seed) for seed in seeds]
    if not seeds:
        raise ValueError("seeds must list at least one seed")
    runs = [track(make_trainer(seed), steps) for seed in seeds]
    kinds = {tuple(run.curves) for run in runs}
    if len(kinds) > 1 or len({run.final_probs.shape for run in runs}) > 1:
        raise ValueError(
            "make_trainer must make one kind of trainer for every seed (the same curves, the same number of actions); "
            f"the seeds' trainers record {sorted(kinds)}"
        )
    return RunHistory(
        curves={key: np.stack([run.curves[key] for run in runs]) for key in runs[0].curves},
        final_probs=np.stack([run.final_probs for run in runs]),
        wall_time=sum(run.wall_time for run in runs),
    )
