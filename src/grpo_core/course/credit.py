r"""§2's credit-assignment cost, computed exactly on a model of a terminal reward.

A completion is ``length`` tokens, each independently "useful" with probability ``p``; the verifier rewards it with
1 when at least ``threshold`` tokens are useful, else 0, and only at the end (§2: "a single scalar for the whole
response"). A critic must predict that reward from every prefix :math:`s_t` (its first :math:`t` tokens), and the
best it can do is :math:`V(s_t) = \Pr(R = 1 \mid s_t)`.

Also §2's Remark ("not a general MDP claim"): what a resampled, critic-free baseline costs when every state along a
long episode needs its own group.
"""

from __future__ import annotations

from math import comb

import numpy as np

from grpo_core._validate import positive_int, unit_interval


def prefix_values(length: int, threshold: int, p: float = 0.5) -> np.ndarray:
    r""":math:`V(s_t) = \Pr(R = 1 \mid k` useful tokens among the first :math:`t)`, shape ``(length + 1, length + 1)``.

    Entry ``[t, k]`` is :math:`\Pr\big(\mathrm{Bin}(\text{length} - t, p) \ge \text{threshold} - k\big)`; entries
    with ``k > t`` are NaN (no such prefix).
    """
    length, threshold, p = _checked(length, threshold, p)
    return _outcome_probabilities(length, threshold, p, success=True)


def explained_variance(length: int, threshold: int, p: float = 0.5) -> np.ndarray:
    r""":math:`\mathrm{Var}(V(s_t)) / \mathrm{Var}(R)` for :math:`t = 0, \dots, \text{length}`.

    The share of the terminal reward's variance that the best critic at token :math:`t` can explain: 0 at the
    prompt, 1 at the end. The rest, :math:`\mathbb E[\mathrm{Var}(R \mid s_t)]`, is noise in every regression target
    at token :math:`t`. (Computed from the rarer outcome's probabilities, :math:`V` or :math:`1 - V`, which keep
    their precision when the other is close to 1.)
    """
    length, threshold, p = _checked(length, threshold, p)
    successes = _outcome_probabilities(length, threshold, p, success=True)
    failures = _outcome_probabilities(length, threshold, p, success=False)
    rarer = successes if successes[0, 0] < failures[0, 0] else failures
    rare = rarer[0, 0]
    variance = rare * (1 - rare)
    if variance == 0:
        raise ValueError(f"threshold = {threshold}, p = {p}: the reward is constant, it has no variance to explain")
    shares = np.array([_binomial_pmf(t, p) @ (rarer[t, : t + 1] - rare) ** 2 / variance for t in range(length + 1)])
    return np.minimum(shares, 1.0)


def resampled_baseline_steps(horizon: int, group_size: int) -> int:
    r"""Environment steps to give every state of one ``horizon``-step episode a group of ``group_size`` rollouts.

    From state :math:`s_t` a rollout runs the :math:`T - t` remaining steps, so the groups cost
    :math:`G \sum_{t=0}^{T-1} (T - t) = G\,T(T+1)/2` steps, against :math:`T` for the episode itself.
    """
    horizon = positive_int(horizon, "horizon")
    group_size = positive_int(group_size, "group_size", minimum=2)
    return group_size * horizon * (horizon + 1) // 2


def _binomial_pmf(n: int, p: float) -> np.ndarray:
    return np.array([comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)])


def _outcome_probabilities(length: int, threshold: int, p: float, success: bool) -> np.ndarray:
    """``[t, k]``: Pr(R = 1) (``success``) or Pr(R = 0) given ``k`` useful tokens among the first ``t``, each summed
    from its own tail of the binomial (no ``1 - x``); NaN for ``k > t``."""
    table = np.full((length + 1, length + 1), np.nan)
    for t in range(length + 1):
        pmf = _binomial_pmf(length - t, p)
        if success:  # tail[j] = Pr(Bin >= j)
            tail = np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0]])
        else:  # tail[j] = Pr(Bin < j)
            tail = np.concatenate([[0.0], np.cumsum(pmf)])
        for k in range(t + 1):
            table[t, k] = tail[min(max(threshold - k, 0), length - t + 1)]
    return table


def _checked(length, threshold, p) -> tuple[int, int, float]:
    length = positive_int(length, "length", maximum=1024)
    threshold = positive_int(threshold, "threshold", minimum=0)
    if threshold > length:
        raise ValueError(f"threshold must be at most length = {length}, got {threshold}")
    return length, threshold, unit_interval(p, "p")
