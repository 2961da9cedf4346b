r"""The bandit lab's one state object (chapter §11): everything the views draw, as JSON.

:class:`grpo_core.lab.BanditLab` builds it from its :class:`grpo_core.bandit.BanditGRPO`
run after every action and hands it to the view (one widget message per
click); the site lab builds the same shape in JavaScript (``static/lab-site.js``).
The views themselves are one JavaScript module, ``static/lab-view.js``. Nothing
here imports a widget; the curve values come from the run's own
:meth:`~grpo_core.bandit.trainer.BanditTrainer.snapshot`. A :class:`Session` records what the reader did since the
last *Reset*, as the grpo_core calls that replay it; the view prints them as Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_core.bandit import BanditGRPO, GRPOConfig, StepResult
from grpo_core.lab.spec import CURVE_KEYS, KNOBS, kl_outcome

CURVE_POINTS = 300  # a longer curve crosses to the browser subsampled to this many points


def knob_values(config: GRPOConfig) -> dict:
    """The knobs of ``config`` that the lab's controls set, by name."""
    return {knob.name: getattr(config, knob.name) for knob in KNOBS}


class Session:
    """What the reader did since the last *Reset*, as the calls on :class:`~grpo_core.bandit.BanditGRPO` that replay
    it: ``entries`` is a JSON list of ``[verb, argument]``, ``["new", {"seed": "…", "config": {…}}]`` first, then
    ``configure`` (the changes), ``sample``, ``step`` (how many), ``diverged`` (a step that raised
    :class:`~grpo_core.bandit.trainer.Diverged`: its message), ``drop`` (the pending group, dropped when G changes)
    and ``set_policy`` (π). Consecutive steps, and consecutive knob changes, are one entry. The seed is a decimal
    string: JavaScript holds integers exactly only up to 2**53. ``static/lab-view.js`` prints it as Python;
    ``static/lab-site.js`` records the same entries.
    """

    def __init__(self, seed: int, config: GRPOConfig):
        self.entries: list[list] = [["new", {"seed": str(seed), "config": knob_values(config)}]]

    def add(self, verb: str, argument=None) -> None:
        last = self.entries[-1]
        if verb == last[0] == "step":
            last[1] += argument
        elif verb == last[0] == "configure":
            last[1] = {**last[1], **argument}
        else:
            self.entries.append([verb, argument])


@dataclass(frozen=True)
class GroupView:
    """The group on screen: just sampled (``ratios is None``) or the one the last step used (with its ε)."""

    actions: np.ndarray
    rewards: np.ndarray
    advantages: np.ndarray
    k3: tuple[float, int]
    ratios: np.ndarray | None = None
    clipped: np.ndarray | None = None
    eps: float | None = None
    beta: float | None = None
    kl_before: float | None = None
    outcome: str | None = None

    @classmethod
    def sampled(cls, run: BanditGRPO, actions: np.ndarray, rewards: np.ndarray) -> GroupView:
        """A group just drawn from the run's π, its k3 weights at that π."""
        k3 = k3_weight(run.ref_probs, run.probs, actions)
        return cls(actions, rewards, run.config.advantages(rewards), k3)

    @classmethod
    def of_step(cls, result: StepResult, config: GRPOConfig, kl_before: float) -> GroupView:
        """The group a step used, with what the step did: its ε and β, the KL to the reference policy before it and,
        for a group with no signal, the measured outcome (:func:`grpo_core.lab.spec.kl_outcome`)."""
        moved = not np.array_equal(result.probs, result.old_probs)
        outcome = kl_outcome(moved, kl_before, result.kl) if result.zero_variance else None
        k3 = k3_weight(result.ref_probs, result.old_probs, result.actions)
        return cls(
            result.actions, result.rewards, result.advantages, k3, result.ratios, result.clipped,
            config.eps_low, config.beta, kl_before, outcome,
        )  # fmt: skip

    @property
    def zero_variance(self) -> bool:
        return bool(self.rewards.max() == self.rewards.min())

    def to_json(self) -> dict:
        stepped = self.ratios is not None
        return {
            "actions": self.actions.tolist(),
            "rewards": self.rewards.tolist(),
            "advantages": self.advantages.tolist(),
            "ratios": self.ratios.tolist() if stepped else None,
            "clipped": self.clipped.tolist() if stepped else None,
            "eps": self.eps,
            "beta": self.beta,
            "kl_before": self.kl_before,
            "outcome": self.outcome,
            "k3_weight": self.k3[0],
            "k3_answer": self.k3[1],
        }


def k3_weight(ref_probs: np.ndarray, probs: np.ndarray, actions: np.ndarray) -> tuple[float, int]:
    r"""The largest weight :math:`\rho = \pi_\mathrm{ref}(a_i)/\pi(a_i)` of the k3 gradient (eq. 8) over a group's
    answers, and that answer: the KL term's pull on it, unbounded as :math:`\pi(a_i) \to 0`."""
    weights = ref_probs[actions] / probs[actions]
    i = int(np.argmax(weights))
    return float(weights[i]), int(actions[i])


def policy_point(run: BanditGRPO, best: int) -> dict[str, float]:
    r""":math:`V^\pi` (eq. 4), P(best) of the arm ``best``, the exact :math:`\mathrm{KL}(\pi\|\pi_\mathrm{ref})` that
    eq. (8) estimates, and H(π) of the current policy, from the trainer's
    :meth:`~grpo_core.bandit.trainer.BanditTrainer.snapshot`."""
    snapshot = run.snapshot()
    return {
        "value": snapshot["expected_reward"],
        "p_best": float(run.probs[best]),
        "kl": snapshot["kl"],
        "entropy": snapshot["entropy"],
    }


def subsample(xs: list, ys: list) -> list[list]:
    """A curve as [xs, ys], at most ``CURVE_POINTS`` points (the first and the last always kept)."""
    if len(xs) <= CURVE_POINTS:
        return [list(xs), list(ys)]
    keep = np.unique(np.linspace(0, len(xs) - 1, CURVE_POINTS).astype(int))
    return [[xs[i] for i in keep], [ys[i] for i in keep]]


def lab_state(
    run: BanditGRPO,
    *,
    names,
    best: int,
    group: GroupView | None,
    curves: dict[str, tuple[list, list]],
    ledger,
    session: Session,
    progress: tuple[int, int] = (0, 0),
    engine: str = "Python engine: grpo_core.bandit.BanditGRPO in the kernel",
) -> dict:
    """The state every view is drawn from (see ``static/lab-view.js`` for the keys)."""
    config = run.config
    latest = {key: values[-1] for key, (_, values) in curves.items() if values}
    stepped = group is not None and group.ratios is not None
    return {
        "engine": engine,
        "names": list(names),
        "rewards": run.reward_table.tolist(),
        "best": best,
        "probs": run.probs.tolist(),
        "ref_probs": run.ref_probs.tolist(),
        "config": knob_values(config),
        "seed": str(run.seed),
        "steps": len(run.history),
        "group": None if group is None else group.to_json(),
        "stats": {
            "mean": None if group is None else float(group.rewards.mean()),
            "std": None if group is None else float(group.rewards.std()),
            "clip": float(group.clipped.mean()) if stepped else None,
            "kl": latest["kl"],
            "entropy": latest["entropy"],
            "p_best": latest["p_best"],
            "steps": len(run.history),
        },
        "curves": {key: subsample(*curves[key]) for key in CURVE_KEYS},
        "ledger": [[number, parts] for number, parts in ledger],
        "progress": list(progress),
        "session": session.entries,
    }
