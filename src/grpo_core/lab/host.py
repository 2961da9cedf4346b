"""The lab's one controller (``static/lab-controller.js``) in the kernel, over a :class:`~grpo_core.bandit.BanditGRPO`.

The controller is the site lab's own JavaScript, run here in embedded V8 (PyPI ``mini-racer``; one context per
process, each lab its own controller in it), so that both labs follow one set of rules: the actions, the session,
the ledger, the curves and the state the views draw. V8 cannot call Python, so an action is planned in V8, the
engine commands of the plan run here on the :class:`~grpo_core.bandit.BanditGRPO` (:func:`execute`), and what
they reported is committed in V8, which answers with the new state. Every call is synchronous: ``lab.step()``
returns when the state is there, with or without a browser (nbval, grading).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from functools import cache

import numpy as np

from grpo_core.bandit import BanditGRPO, StepResult
from grpo_core.bandit.env import CHAPTER_REWARDS
from grpo_core.bandit.trainer import Diverged
from grpo_core.lab import spec
from grpo_core.lab.view import asset

ENGINE = "Python engine: grpo_core.bandit.BanditGRPO in the kernel"
ERRORS = {"TypeError": TypeError, "ValueError": ValueError}
# what the host adds to the page's scripts: the labs of this process, by number
HOSTED = """GRPOLab.hosted = {
  labs: new Map(),
  create: (id, options, snapshot) => { const lab = GRPOLab.controller.create(options, snapshot);
    GRPOLab.hosted.labs.set(id, lab); return lab.init(); },
  plan: (id, action, snapshot) => GRPOLab.hosted.labs.get(id).plan(action, snapshot),
  commit: (id, reports, snapshot) => GRPOLab.hosted.labs.get(id).commit(reports, snapshot),
  curves: (id) => GRPOLab.hosted.labs.get(id).curves(),
  ledger: (id) => GRPOLab.hosted.labs.get(id).ledgerTexts(),
  close: (id) => GRPOLab.hosted.labs.delete(id),
};"""
_numbers = itertools.count()


@cache
def context():
    """The process's V8 context, with the lab's spec, the controller and the host's table of labs."""
    from py_mini_racer import MiniRacer

    v8 = MiniRacer()
    v8.eval(spec.script())
    v8.eval(asset("lab-controller.js"))
    v8.eval(HOSTED)
    return v8


@dataclass(frozen=True)
class Group:
    """A group just drawn from the run's π: its actions, their rewards and advantages (eq. 3 or the variant)."""

    actions: np.ndarray
    rewards: np.ndarray
    advantages: np.ndarray

    @property
    def zero_variance(self) -> bool:
        return bool(self.rewards.max() == self.rewards.min())


def snapshot(run: BanditGRPO) -> dict:
    """The run's policy as the controller reads it (the page's engine reports the same keys)."""
    point = run.snapshot()
    return {
        "probs": run.probs.tolist(),
        "ref_probs": run.ref_probs.tolist(),
        "seed": str(run.seed),
        "steps": len(run.history),
        "config": {knob.name: getattr(run.config, knob.name) for knob in spec.KNOBS},
        "pending": run.pending is not None,
        "value": point["expected_reward"],
        "kl": point["kl"],
        "entropy": point["entropy"],
    }


def step_report(result: StepResult) -> dict:
    """A step as the controller reads it."""
    return {
        "actions": result.actions.tolist(),
        "rewards": result.rewards.tolist(),
        "advantages": result.advantages.tolist(),
        "ratios": result.ratios.tolist(),
        "clipped": result.clipped.tolist(),
        "old_probs": result.old_probs.tolist(),
        "ref_probs": result.ref_probs.tolist(),
        "probs": result.probs.tolist(),
        "kl": result.kl,
        "mean": result.reward_mean,
        "std": result.reward_std,
        "clip": result.clip_fraction,
        "zero_variance": result.zero_variance,
    }


def execute(run: BanditGRPO, verb: str, argument=None):
    """One engine command of the controller on ``run``: what it reports and, for a sample or a step, the group
    (:class:`Group`) or the step's result (None if it diverged)."""
    if verb == "sample":
        actions, rewards = run.sample()
        group = Group(actions, rewards, run.config.advantages(rewards))
        report = {key: getattr(group, key).tolist() for key in ("actions", "rewards", "advantages")}
        return {**report, "mean": float(group.rewards.mean()), "std": float(group.rewards.std())}, group
    if verb == "step":
        try:
            result = run.step()
        except Diverged as error:
            return {"diverged": str(error)}, None
        return step_report(result), result
    if verb == "configure":
        run.configure(**argument)
    elif verb == "drop":
        run.pending = None
    elif verb == "advantages":
        return run.config.advantages(np.array(argument)).tolist(), None
    elif verb == "set_policy":
        run.set_policy(argument)
    elif verb == "reset":
        run.reset(int(argument))
    else:
        raise ValueError(f"unknown engine command {verb!r}")
    return None, None


def call(function: str, *arguments):
    """``function(*arguments)`` in the process's V8 context, both ways as JSON. (``MiniRacer.call`` holds a handle
    to the function that hangs the interpreter's exit.)"""
    source = f"JSON.stringify({function}({', '.join(json.dumps(argument) for argument in arguments)}))"
    return json.loads(context().eval(source))


def hostable(run: BanditGRPO) -> BanditGRPO:
    """``run``, checked to be a run the lab's controls can show: the chapter's bandit, each knob within its slider,
    a symmetric clip."""
    if not isinstance(run, BanditGRPO):
        raise TypeError(f"trainer must be a grpo_core.bandit.BanditGRPO, got {type(run).__name__}")
    if run.reward_table.tolist() != list(CHAPTER_REWARDS):
        raise ValueError(f"trainer: the lab plays the chapter's bandit, rewards {list(CHAPTER_REWARDS)}")
    for knob in spec.KNOBS:
        value = getattr(run.config, knob.name)
        if knob.options is None and not knob.minimum <= value <= knob.maximum:
            raise ValueError(
                f"trainer.config.{knob.name} must lie in [{knob.minimum}, {knob.maximum}] for the lab's slider, "
                f"got {value}"
            )
    if run.config.eps_high is not None and run.config.eps_high != run.config.eps_low:
        raise ValueError("trainer.config.eps_high must be None (the lab's ε slider is a symmetric clip)")
    return run


class Controller:
    """One lab's controller, in the process's V8 context, over ``run`` (checked by :func:`hostable`); ``state`` is
    the latest state."""

    def __init__(self, run: BanditGRPO, ledger_length: int):
        self.run = hostable(run)
        self.number = next(_numbers)
        options = {"engine": ENGINE, "ledgerLength": ledger_length}
        self.state = call("GRPOLab.hosted.create", self.number, options, snapshot(run))

    def act(self, action: dict) -> list[Group | StepResult | None]:
        """Do ``action`` (``{"do": ..., ...}``, lab-controller.js): the groups it drew and the steps it took (None
        for a diverged one).
        Bad input raises the controller's TypeError or ValueError, naming the argument."""
        action = {key: value.item() if isinstance(value, np.generic) else value for key, value in action.items()}
        plan = call("GRPOLab.hosted.plan", self.number, action, snapshot(self.run))
        if "error" in plan:
            raise ERRORS[plan["error"]["type"]](plan["error"]["message"])
        reports, results = [], []
        for verb, *argument in plan["commands"]:
            report, result = execute(self.run, verb, *argument)
            reports.append(report)
            if verb in ("sample", "step"):
                results.append(result)
        self.state = call("GRPOLab.hosted.commit", self.number, reports, snapshot(self.run))
        return results

    def curves(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        r"""Every curve in full, as arrays (steps, values): ``mean_reward`` and ``clip_fraction`` (of each step's
        group), ``value`` (:math:`V^\pi`), ``p_best``, ``kl`` and ``entropy``."""
        curves = call("GRPOLab.hosted.curves", self.number).items()
        return {key: (np.array(xs, dtype=float), np.array(ys)) for key, (xs, ys) in curves}

    def ledger(self) -> list[str]:
        return call("GRPOLab.hosted.ledger", self.number)

    def close(self) -> None:
        """Drop this lab's controller from the context."""
        call("GRPOLab.hosted.close", self.number)

    def readout(self) -> str:
        """What the views show, as plain text, written by the controller's formatter."""
        return call("GRPOLab.controller.readout", self.state)
