r"""GRPO started from a sharpened policy, over seeds: the overshoot and the freeze of the k3 term (§6, §11).

The k3 estimator of eq. (8) pulls a sampled answer ``a`` with the weight
:math:`\rho = \pi_\mathrm{ref}(a)/\pi_\theta(a)`, which has no upper bound. Started from :math:`\pi_\theta` sharpened
onto one answer (:math:`\pi_\mathrm{ref}` kept), a run that draws a starved answer can be thrown to one answer
within a few steps, and there it stays: in float64 a softmax whose logits are thousands apart is exactly one-hot.
Notebooks 06 and 11 count how often, over seeds and values of β.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_core.bandit.grpo import BanditGRPO, GRPOConfig
from grpo_core.bandit.runs import run_seeds

#: A run ends *one-hot* when one answer holds π to six decimals: max π > 1 − ONE_HOT_TOLERANCE.
ONE_HOT_TOLERANCE = 1e-6


@dataclass(frozen=True)
class SeedEndings:
    r"""Where each seed's run ended: ``probs`` of shape ``(seeds, K)``, ``final_kl`` (the exact
    :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})` after the last step) of shape ``(seeds,)``."""

    #: π after the last step, one row per seed.
    probs: np.ndarray
    #: The exact KL to the reference after the last step, one per seed.
    final_kl: np.ndarray

    @property
    def one_hot(self) -> np.ndarray:
        """Whether one answer holds π to six decimals (:data:`ONE_HOT_TOLERANCE`), one flag per seed."""
        return self.probs.max(axis=1) > 1 - ONE_HOT_TOLERANCE

    @property
    def onto(self) -> np.ndarray:
        """The index of the answer π favours most at the end, one per seed."""
        return self.probs.argmax(axis=1)


def sharpened_runs(probs, beta: float, seeds, steps: int = 10) -> SeedEndings:
    r"""For each seed, ``steps`` GRPO steps (eq. 9, the chapter's defaults otherwise) from :math:`\pi_\theta` =
    ``probs`` with :math:`\pi_\mathrm{ref}` uniform and KL coefficient ``beta`` (eq. 8); where each run ended.

    Chapter §6 (eqs. 8–9, the k3 weight :math:`\pi_\mathrm{ref}/\pi_\theta`) and §11 (the lab's *Sharpen π*).
    """

    def sharpened(seed: int) -> BanditGRPO:
        run = BanditGRPO(config=GRPOConfig(beta=beta), seed=seed)
        run.set_policy(probs)
        return run

    history = run_seeds(sharpened, steps, seeds)
    return SeedEndings(probs=history.final_probs, final_kl=history.kl[:, -1])
