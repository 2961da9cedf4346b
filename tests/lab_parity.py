"""Random sessions over the lab's whole slider space, played by grpo_core: the reference the page's engine must equal.

A session is what the lab's one controller (``grpo_core/lab/static/lab-controller.js``) records in either lab: a
list of ``[verb, argument]``, ``new`` (seed and config), ``configure``, ``sample``, ``step``, ``drop`` (the pending
group), ``set_policy`` (a sharpened π) and ``reset`` (a seed). :func:`sessions` draws them from a seeded generator:
every knob from its slider's values (:data:`grpo_core.lab.spec.KNOBS`), each change as the controller makes it
(:func:`changes`), seeds up to 2**64 - 1, a sharpened start in one session of three (π(onto) from the *Sharpen π*
slider's range), at least ``STEPS`` GRPO steps with knob changes, samples, sharpenings and resets among them.
:func:`play` runs one with :class:`grpo_core.bandit.BanditGRPO` and records, after every entry, the actions it drew
(or the message of a ``Diverged`` step) and the logits. ``tests/browser/test_lab_parity.py`` plays the same sessions
with the page's engine (``grpo_core/lab/static/lab-engine.js``), and with grpo_core again on another CPU: ``python
tests/lab_parity.py`` reads sessions and their records as JSON on its standard input and writes, as JSON, each entry
played again from the recorded state before it (:func:`play` with ``resync``).
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np

from grpo_core.bandit import BanditGRPO, GRPOConfig
from grpo_core.bandit.env import ACTION_NAMES
from grpo_core.bandit.trainer import Diverged
from grpo_core.lab.host import call
from grpo_core.lab.spec import KNOBS

STEPS = 110
LOGIT_TOLERANCE = 1e-12
SEED = 2026
K = len(ACTION_NAMES)
EDGE_SEEDS = (0, 2**31 - 1, 2**53 + 1, 2**63, 2**64 - 1)


def slider_values(knob) -> list:
    """Every value the knob's control can take (what the slider shows)."""
    if knob.options is not None:
        return [value for _, value in knob.options]
    count = round((knob.maximum - knob.minimum) / knob.step)
    return [knob.value(knob.minimum + k * knob.step) for k in range(count + 1)]


VALUES = {knob.name: slider_values(knob) for knob in KNOBS}
SHARPEN = np.round(np.arange(math.ceil(100 / K), 100) / 100, 2)  # the π(onto) slider: 0.25 ... 0.99


def changes(name: str, value) -> dict:
    """A knob's change as the lab's controller makes it (its rules, in embedded V8)."""
    return call("GRPOLab.controller.knobChanges", name, value)


def draw_seed(rng: np.random.Generator) -> str:
    """A seed as the seed box takes it (a decimal string): an edge, a small one, or any up to 2**64 - 1."""
    kind = rng.integers(3)
    if kind == 0:
        return str(EDGE_SEEDS[rng.integers(len(EDGE_SEEDS))])
    if kind == 1:
        return str(int(rng.integers(1000)))
    return str(int(rng.integers(0, 2**64, dtype=np.uint64)))


def sharpened(rng: np.random.Generator) -> list[float]:
    """π as *Sharpen π* sets it: π(onto) from the slider, the rest shared equally."""
    prob = float(rng.choice(SHARPEN))
    probs = np.full(K, (1.0 - prob) / (K - 1))
    probs[rng.integers(K)] = prob
    return probs.tolist()


def session(rng: np.random.Generator, steps: int = STEPS) -> list[list]:
    """One random session: a start anywhere in the slider space, then ``steps`` GRPO steps and other actions."""
    config = {knob.name: VALUES[knob.name][rng.integers(len(VALUES[knob.name]))] for knob in KNOBS}
    entries = [["new", {"seed": draw_seed(rng), "config": config}]]
    if rng.random() < 1 / 3:
        entries.append(["set_policy", sharpened(rng)])
    taken = 0
    while taken < steps:
        roll = rng.random()
        if roll < 0.04:
            knob = KNOBS[rng.integers(len(KNOBS))]
            entries.append(["configure", changes(knob.name, VALUES[knob.name][rng.integers(len(VALUES[knob.name]))])])
        elif roll < 0.08:
            entries.append(["sample", None])
        elif roll < 0.09:
            entries.append(["drop", None])
        elif roll < 0.10:
            entries.append(["set_policy", sharpened(rng)])
        elif roll < 0.105:
            entries.append(["reset", draw_seed(rng)])
        else:
            entries.append(["step", 1])
            taken += 1
    return entries


def sessions(count: int, seed: int = SEED, steps: int = STEPS) -> list[list[list]]:
    rng = np.random.default_rng(seed)
    return [session(rng, steps) for _ in range(count)]


def play(entries: list[list], resync: list[list] | None = None) -> list[list]:
    """Play a session with grpo_core: after every entry, [actions drawn as digits ("" if none) or the message of a
    Diverged step, the logits]. With ``resync`` (records of the same session), each entry starts from the logits
    recorded before it, as the page's engine does in the test: each entry is then compared on its own."""
    run, records = None, []
    for index, (verb, argument) in enumerate(entries):
        if resync is not None and index > 0:
            run.logits = np.array(resync[index - 1][1])
        drawn = ""
        if verb == "new":
            run = BanditGRPO(seed=int(argument["seed"]), config=GRPOConfig(**argument["config"]))
        elif verb == "configure":
            run.configure(**argument)
        elif verb == "sample":
            drawn = "".join(map(str, run.sample()[0]))
        elif verb == "step":
            for _ in range(argument):
                try:
                    drawn = "".join(map(str, run.step().actions))
                except Diverged as error:
                    drawn = str(error)
        elif verb == "drop":
            run.pending = None
        elif verb == "set_policy":
            run.set_policy(argument)
        elif verb == "reset":
            run.reset(int(argument))
        else:
            raise ValueError(f"unknown session entry {verb!r}")
        records.append([drawn, run.logits.tolist()])
    return records


if __name__ == "__main__":
    json.dump([play(entries, records) for entries, records in json.load(sys.stdin)], sys.stdout)
