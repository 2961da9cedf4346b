r"""The flow every bandit method shares (chapter §8): construct, reset, step, run, record.

A method is one subclass that names its knobs and supplies its update, as in
Spinning Up's ``core.Actor``, whose ``forward`` calls the subclass's
``_distribution``::

    class BanditREINFORCE(BanditTrainer):
        config_type = REINFORCEConfig          # a frozen dataclass with an ``lr``

        def update(self):
            actions, rewards = self.draw(self.config.group_size)
            self.logits = self.logits + self.config.lr * reinforce_gradient(self.logits, actions, rewards)
            return actions

:class:`BanditTrainer` owns the rest: the reward table, θ, :math:`\pi_\mathrm{ref}`, the seeded
generator, :meth:`~BanditTrainer.reset` (with a :meth:`~BanditTrainer.start`
hook for a method's own state), :meth:`~BanditTrainer.step` (the update, a
check that it kept θ finite, the history), :meth:`~BanditTrainer.run` and the
policy's :meth:`~BanditTrainer.snapshot` that :func:`grpo_core.bandit.runs.track`
records.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import replace
from typing import ClassVar

import numpy as np

from grpo_core import _kernels as K
from grpo_core._validate import numpy_array, positive_int, seed_value
from grpo_core.bandit.env import CHAPTER_REWARDS, check_actions, log_softmax, state_value


class Diverged(ValueError):
    """An update left the policy's logits (or their spread), or the gradient that moves them, not finite."""


class BanditTrainer(ABC):
    r"""A run of one method on the bandit: the state and the flow every method shares.

    Holds the reward table, the policy logits θ, the frozen reference :math:`\pi_\mathrm{ref}`
    (captured at :meth:`reset`), a seeded ``numpy.random.Generator``, the
    number of completions drawn and the ``history`` of step records. A method
    (:class:`~grpo_core.bandit.grpo.BanditGRPO`, and the §8 neighbours RLOO,
    PPO, DPO) sets :attr:`config_type` and defines :meth:`update`; if it keeps
    state of its own, it sets it in :meth:`start`. It never imports a widget.

    ``rewards`` is the reward of each action, shape ``(K,)`` (``(prompts, K)``
    for a method with :attr:`reward_ndim` 2); ``config`` an instance of
    :attr:`config_type` (its defaults if ``None``); ``init_logits`` the
    starting θ (uniform π if ``None``).
    """

    #: The frozen dataclass of the method's knobs; it has a learning rate ``lr``.
    config_type: ClassVar[type]
    #: 1 for one prompt with a reward per action, 2 for a reward table per prompt.
    reward_ndim: ClassVar[int] = 1

    def __init__(self, rewards=CHAPTER_REWARDS, config=None, seed: int = 0, init_logits=None):
        self.config = self.config_type() if config is None else config
        self.reward_table = numpy_array(rewards, "rewards", ndim=(self.reward_ndim,))
        if self.reward_table.shape[-1] < 2:
            raise ValueError("rewards must list at least 2 actions")
        self.init_logits = (
            np.zeros_like(self.reward_table)
            if init_logits is None
            else numpy_array(init_logits, "init_logits", ndim=(self.reward_ndim,))
        )
        if self.init_logits.shape != self.reward_table.shape:
            raise ValueError(f"init_logits must have shape {self.reward_table.shape}, got {self.init_logits.shape}")
        log_softmax(self.init_logits, "init_logits")  # refuses logits whose log π overflows float64
        self.seed = seed_value(seed)
        self.reset()

    @property
    def config(self):
        """The method's knobs (an instance of ``config_type``)."""
        return self._config

    @config.setter
    def config(self, config) -> None:
        if not isinstance(config, self.config_type):
            raise TypeError(f"config must be a {self.config_type.__name__}, got {type(config).__name__}")
        self._config = config

    def configure(self, **changes) -> None:
        """Change some knobs, e.g. ``run.configure(beta=0.1, group_size=4)``."""
        self.config = replace(self.config, **changes)

    def reset(self, seed: int | None = None) -> None:
        r"""Policy back to the start, :math:`\pi_\mathrm{ref} \leftarrow \pi_\theta`, RNG reseeded, counter and history
        cleared, then :meth:`start`."""
        if seed is not None:
            self.seed = seed_value(seed)
        self.logits = self.init_logits.copy()
        self.ref_logits = self.logits.copy()
        self.rng = np.random.default_rng(self.seed)
        self.samples_drawn = 0
        self.history: list = []
        self.start()

    def start(self) -> None:  # noqa: B027 -- a hook: most methods keep no state of their own
        r"""The method's own state at the start of a run (after θ, :math:`\pi_\mathrm{ref}` and the RNG are reset); none
        by default."""

    @abstractmethod
    def update(self):
        """One update of θ (``self.logits``); returns the record of the step."""

    def step(self):
        """One update; appends its record to ``history`` and returns it.

        An update that overflows the logits (or their spread, beyond which
        log π is -inf) stops the run with a :class:`Diverged` (a ``ValueError``)
        naming the step and the learning rate; one whose gradient overflowed
        names what did instead. Either leaves the logits as they were before it.
        """
        number, before = len(self.history) + 1, self.logits
        try:
            record = self.update()
        except Diverged as error:
            self.logits = before
            raise Diverged(f"step {number}: {error}") from None
        with np.errstate(over="ignore", invalid="ignore"):
            diverged = not np.isfinite(np.ptp(self.logits, axis=-1)).all()
        if diverged:
            self.logits = before
            lr = self.config.lr
            raise Diverged(
                f"step {number}: the update overflowed the logits (lr={lr} is likely too large; try lr <= {lr / 10:g})"
            )
        self.history.append(record)
        return record

    def run(self, steps: int) -> list:
        """Take ``steps`` updates; their records."""
        return [self.step() for _ in range(positive_int(steps, "steps"))]

    @property
    def probs(self) -> np.ndarray:
        return K.softmax(self.logits)

    @property
    def ref_probs(self) -> np.ndarray:
        return K.softmax(self.ref_logits)

    @property
    def expected_reward(self) -> float:
        r""":math:`V^\pi(q)` of the current policy, eq. (4), computed exactly."""
        return float(state_value(self.probs, self.reward_table))

    def snapshot(self) -> dict[str, float]:
        r"""Exact quantities of the current policy, the points of a learning curve.

        ``expected_reward`` (:math:`V^\pi`, eq. 4), ``p_best`` (probability of the best
        arm or arms), ``kl`` (exact :math:`\mathrm{KL}(\pi_\theta\|\pi_\mathrm{ref})`, what eq. 8 estimates),
        ``entropy`` and ``samples`` (completions drawn so far). With several
        prompts, each is the mean over the prompts. A method adds its own by
        extending the dict.
        """
        probs, table = self.probs, self.reward_table
        best = table == table.max(axis=-1, keepdims=True)
        return {
            "expected_reward": self.expected_reward,
            "p_best": float(np.mean((probs * best).sum(axis=-1))),
            "kl": float(np.mean(K.policy_kl(self.logits, self.ref_logits))),
            "entropy": float(np.mean(K.entropy(probs))),
            "samples": self.samples_drawn,
        }

    def draw(self, num_samples: int) -> tuple[np.ndarray, np.ndarray]:
        r"""Eqs. (1)-(2): draw ``num_samples`` actions from :math:`\pi_\theta`, count them, return (actions,
        rewards)."""
        actions = K.sample(self.probs, positive_int(num_samples, "num_samples"), self.rng)
        self.samples_drawn += actions.size
        return actions, self.reward_table[actions]

    def sampled_log_probs(self, actions) -> tuple[np.ndarray, np.ndarray]:
        r""":math:`\log\pi_\theta(a_i)` and :math:`\log\pi_\mathrm{ref}(a_i)` of the given actions."""
        actions = check_actions(actions, self.logits.size)
        return K.log_softmax(self.logits)[actions], K.log_softmax(self.ref_logits)[actions]
