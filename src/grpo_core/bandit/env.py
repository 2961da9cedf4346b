r"""The one-prompt bandit of chapter §11: its reward table, the softmax policy, eqs. (1), (2) and (4).

Actions A/B/C/D with the reward table ``R = [0.2, 0.9, 0.4, 0.1]`` (B is best)
and a softmax policy :math:`\pi_\theta = \mathrm{softmax}(\theta)`: sampling a
group (eq. 1), looking its rewards up (eq. 2) and the exact value a critic
would learn (eq. 4). Every trainer of :mod:`grpo_core.bandit` builds on these.
"""

from __future__ import annotations

import numpy as np

from grpo_core import _kernels as K
from grpo_core._kernels import is_torch
from grpo_core._validate import entries, numpy_array, positive_int, probabilities

#: The reward r(a) of each action A, B, C, D in the chapter's bandit (§11); B is best.
CHAPTER_REWARDS = (0.2, 0.9, 0.4, 0.1)
#: The names of the four actions, in the order of :data:`CHAPTER_REWARDS`.
ACTION_NAMES = ("A", "B", "C", "D")


def softmax(logits) -> np.ndarray:
    r""":math:`\pi_\theta = \mathrm{softmax}(\theta)` over the last axis, computed stably."""
    return K.softmax(numpy_array(logits, "logits", ndim=(1, 2)))


def log_softmax(logits, name: str = "logits") -> np.ndarray:
    r""":math:`\log\pi_\theta`, computed stably.

    ``name`` is the argument an error message names (``"ref_logits"`` for :math:`\pi_\mathrm{ref}`'s logits).
    """
    return K.log_softmax(numpy_array(logits, name, ndim=(1, 2)))


def check_rng(rng) -> np.random.Generator:
    """``rng`` itself, if it is a ``numpy.random.Generator`` (every draw of the bandit is seeded)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    return rng


def check_actions(actions, num_actions: int) -> np.ndarray:
    """``actions`` as a non-empty 1-D integer array of indices in ``[0, num_actions)``."""
    num_actions = positive_int(num_actions, "num_actions")
    actions = np.asarray(actions if is_torch(actions) else entries(actions, "actions")).copy()  # the caller's: copied
    if actions.ndim != 1 or actions.size == 0 or not np.issubdtype(actions.dtype, np.integer):
        raise TypeError(
            f"actions must be a non-empty 1-D array of integers, got dtype {actions.dtype}, shape {actions.shape}"
        )
    if actions.min() < 0 or actions.max() >= num_actions:
        raise ValueError(f"actions must lie in [0, {num_actions}), got {actions.min()}..{actions.max()}")
    return actions


def sample_group(probs, group_size: int, rng: np.random.Generator) -> np.ndarray:
    """Eq. (1): draw ``group_size`` actions i.i.d. from π (one prompt's group)."""
    probs = numpy_array(probs, "probs", ndim=(1,))
    if (probs < 0).any() or (probs > 1).any() or not np.isclose(probs.sum(), 1.0, atol=1e-6):
        raise ValueError("probs must lie in [0, 1] and sum to 1")
    G, rng = positive_int(group_size, "group_size"), check_rng(rng)
    return rng.choice(probs.size, size=G, p=probs / probs.sum())  # o_1, ..., o_G ~ π_θ_old


def reward_of(actions, reward_table=CHAPTER_REWARDS) -> np.ndarray:
    """Eq. (2): :math:`R_i = r(q, o_i)`, here a lookup in the bandit's reward table."""
    table = numpy_array(reward_table, "reward_table", ndim=(1,))
    return table[check_actions(actions, table.size)]


def state_value(probs, reward_table=CHAPTER_REWARDS) -> float:
    r"""Eq. (4): :math:`V^\pi(q) = \mathbb E_{o\sim\pi}[r(q, o)] = \sum_a \pi(a)\,r(a)`, exactly.

    What a critic would have to learn; the group mean (eq. 5) estimates it.
    """
    probs = probabilities(probs, "probs")
    table = numpy_array(reward_table, "reward_table", ndim=(1,))
    if table.shape != probs.shape[-1:]:
        raise ValueError(f"reward_table must have one entry per action ({probs.shape[-1]}), got {table.shape}")
    return probs @ table
