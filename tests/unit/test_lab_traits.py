"""Every knob of the JupyterLab lab is a trait of :class:`~grpo_core.lab.BanditLab` linked to its control: setting it
from code (``lab.group_size = 8``) is moving the slider, with the same rules, ledger entry and replay line; a value
no slider can reach is refused, naming the trait, and leaves the lab as it was."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from grpo_core.bandit import BanditGRPO
from grpo_core.lab import BanditLab
from grpo_core.lab.host import call
from grpo_core.lab.spec import KNOB, KNOBS

SEEDS = (0, 1, 2)


def reachable(knob) -> list:
    """Every value the knob's control can take (a slider's ``minimum + k * step``, as the slider sends it)."""
    if knob.options is not None:
        return [value for _, value in knob.options]
    count = round((knob.maximum - knob.minimum) / knob.step)
    return [knob.minimum + k * knob.step for k in range(count + 1)]


def seen(lab: BanditLab) -> tuple:
    """What a reader can see of the lab: its state, ledger, replay line, every control (the value it shows: a
    slider moved by hand keeps the raw ``minimum + k * step`` it sent) and every trait."""
    state = lab.state()
    replay = call("GRPOLab.controller.replay", state["session"])
    controls = {name: knob.value(lab.knobs[name].value) for name, knob in KNOB.items()}
    traits = {name: getattr(lab, name) for name in KNOB}
    return state, lab.ledger, replay, controls, traits


def script(seed: int) -> list[tuple[str, object]]:
    """Every reachable value of every knob, shuffled with a sample or a step now and then."""
    rng = random.Random(seed)
    moves = [(knob.name, value) for knob in KNOBS for value in reachable(knob)]
    rng.shuffle(moves)
    for index in sorted(rng.sample(range(len(moves)), 40), reverse=True):
        moves.insert(index, (rng.choice(("sample", "step")), None))
    return moves


@pytest.mark.parametrize("seed", SEEDS)
def test_setting_a_trait_is_moving_its_control(seed):
    by_code, by_hand = BanditLab(seed=seed, frame_delay=0), BanditLab(seed=seed, frame_delay=0)
    try:
        for name, value in script(seed):
            if value is None:
                getattr(by_code, name)()
                by_hand.buttons[name].click()
            else:
                setattr(by_code, name, value)
                by_hand.knobs[name].value = value
            shown = seen(by_code)
            assert shown == seen(by_hand), (name, value)
            assert shown[3] == shown[4] == shown[0]["config"], "each control shows its trait, the controller's value"
    finally:
        by_code.close()
        by_hand.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_the_replay_line_of_a_session_driven_by_traits_replays_it(seed):
    lab = BanditLab(seed=seed, frame_delay=0)
    for name, value in script(seed)[::7]:
        getattr(lab, name)() if value is None else setattr(lab, name, value)
    lab.run_steps(3)
    scope = {}
    exec(call("GRPOLab.controller.replay", lab.state()["session"]), scope)
    replayed: BanditGRPO = scope["run"]
    assert replayed.logits.tolist() == lab.trainer.logits.tolist()
    assert replayed.config == lab.trainer.config
    lab.close()


def test_a_trait_follows_its_control_and_the_control_its_trait():
    lab = BanditLab(seed=0, frame_delay=0)
    lab.group_size = 16
    assert lab.knobs["group_size"].value == 16 and lab.trainer.config.group_size == 16
    lab.knobs["beta"].value = 0.2
    assert lab.beta == 0.2 and lab.trainer.config.beta == 0.2
    lab.lr = 1.0499999999999998  # what the slider sends for 1.05
    assert lab.lr == 1.05 and lab.ledger[0] == "set learning rate = 1.05"
    lab.advantage = "rloo"
    assert lab.knobs["advantage"].value == "rloo" and lab.ledger[0] == "set advantage = RLOO"
    lab.close()


def refused(knob) -> list:
    """Values of the wrong kind and values no control of ``knob`` can reach."""
    bad = [math.nan, True, False, None, "8", [1], np.nan]
    if knob.options is not None:
        return [*bad, "ppo", 1]
    off_grid = knob.minimum + knob.step / 2
    return [*bad, math.inf, -math.inf, knob.minimum - knob.step, knob.maximum + knob.step, off_grid]


@pytest.mark.parametrize("knob", KNOBS, ids=lambda knob: knob.name)
def test_a_value_no_control_can_reach_is_refused_naming_the_trait(knob):
    lab = BanditLab(seed=0, frame_delay=0)
    lab.sample()
    before = seen(lab)
    for value in refused(knob):
        with pytest.raises((TypeError, ValueError), match=knob.name):
            setattr(lab, knob.name, value)
        assert seen(lab) == before, value
    lab.close()
