"""One controller serves both labs: the same actions give the same ledger, session, replay line and state.

``grpo_core/lab/static/lab-controller.js`` is the lab's only set of rules. The page's lab (``lab-site.js``, in
headless Chromium, over the page's engine) and :class:`grpo_core.lab.BanditLab` (the same file in embedded V8, over
:class:`grpo_core.bandit.BanditGRPO`) are driven here through the same seeded random actions over the whole control
space: every knob from its slider's values, samples, steps, runs, sharpenings onto any target with any π(onto) of
the slider, resets to seeds up to 2**64 - 1 and to text the seed box refuses. After every action the two labs must
show the same ledger and the same session to the character, and the same state (its numbers within 1e-9 of their
size: the engines agree to the last bits, tests/browser/test_lab_parity.py).
"""

from __future__ import annotations

import math

import numpy as np
from lab_parity import SHARPEN, VALUES, draw_seed

from grpo_core.lab import BanditLab
from grpo_core.lab import spec as lab_spec
from grpo_core.lab.host import call

SESSIONS = 12
ACTIONS_PER_SESSION = 40
REFUSED = ("", "x", "-1", "1.5", "18446744073709551616")


def actions(rng: np.random.Generator, count: int) -> list[dict]:
    """Seeded random actions of a reader: each control, each value its slider can take (a knob moved to another
    value: a widget set to the value it holds sends nothing)."""
    drawn, config = [], {knob.name: knob.default for knob in lab_spec.KNOBS}
    for _ in range(count):
        roll = rng.random()
        if roll < 0.25:
            name = list(VALUES)[rng.integers(len(VALUES))]
            others = [value for value in VALUES[name] if value != config[name]]
            config[name] = others[rng.integers(len(others))]
            drawn.append({"do": "configure", "name": name, "value": config[name]})
        elif roll < 0.45:
            drawn.append({"do": "sample"})
        elif roll < 0.75:
            drawn.append({"do": "step"})
        elif roll < 0.83:
            drawn.append({"do": "run", "steps": int(rng.integers(1, 12))})
        elif roll < 0.92:
            onto = int(rng.integers(-1, 4))
            drawn.append({"do": "sharpen", "onto": onto, "prob": float(SHARPEN[rng.integers(len(SHARPEN))])})
        elif roll < 0.96:
            drawn.append({"do": "reset", "seed": draw_seed(rng)})
        else:
            drawn.append({"do": "reset", "seed": REFUSED[rng.integers(len(REFUSED))]})
    return drawn


def play_python(lab: BanditLab, action: dict) -> None:
    """One action through the JupyterLab lab's own controls and methods, as a reader or a notebook does it."""
    if action["do"] == "configure":
        lab.knobs[action["name"]].value = action["value"]
    elif action["do"] == "run":
        lab.run_steps(action["steps"])
    elif action["do"] == "sharpen":
        lab.sharpen(action["onto"], action["prob"])
    elif action["do"] == "reset":
        lab.seed.value = action["seed"]
        lab.reset()
    else:
        getattr(lab, action["do"])()


PLAY_SITE = """([seed, actions]) => {
  const el = document.getElementById('site');
  const lab = new GRPOLab.site.SiteLab(el, seed);
  const seen = [];
  const after = () => seen.push({ state: lab.state(), ledger: [...el.querySelectorAll('.grpo-lab-ledger li')].map(
    (li) => li.textContent.replace(/^#\\d+ /, '')), replay: el.querySelector('.grpo-lab-reproduce code').textContent });
  for (const action of actions) {
    if (action.do === 'configure') lab.configure(action.name, action.value);
    else if (action.do === 'run') {
      lab.controls.steps.value = String(action.steps);
      lab.act({ do: 'run', steps: action.steps });
      while (lab.running) lab.act({ do: 'tick' });  // the frames of the run, without waiting for them
    } else if (action.do === 'sharpen') {
      lab.controls.sharpen_action.value = String(action.onto);
      lab.controls.sharpen_prob.value = String(action.prob);
      lab.click('sharpen');
    } else if (action.do === 'reset') {
      lab.controls.seed.value = action.seed;
      lab.click('reset');
    } else lab.click(action.do);
    after();
  }
  return seen;
}"""


def differ(python, page, where: str = "state") -> str | None:
    """Where two states part: a key, an item, or a number off by more than 1e-9 of its size."""
    if isinstance(python, dict):
        if set(python) != set(page):
            return f"{where}: keys {sorted(set(python) ^ set(page))}"
        return next((d for key in python if (d := differ(python[key], page[key], f"{where}.{key}"))), None)
    if isinstance(python, list):
        if len(python) != len(page):
            return f"{where}: {len(python)} items against {len(page)}"
        return next(
            (d for i, (a, b) in enumerate(zip(python, page, strict=True)) if (d := differ(a, b, f"{where}[{i}]"))), None
        )
    if isinstance(python, float) and isinstance(page, int | float) and not isinstance(page, bool):
        return None if math.isclose(python, page, rel_tol=1e-9, abs_tol=1e-12) else f"{where}: {python} against {page}"
    return None if python == page else f"{where}: {python!r} against {page!r}"


def test_both_labs_say_and_show_the_same_after_every_action(lab_scripts):
    rng = np.random.default_rng(11)
    compared = 0
    for _ in range(SESSIONS):
        seed = draw_seed(rng)
        drawn = actions(rng, ACTIONS_PER_SESSION)
        page = lab_scripts.evaluate(PLAY_SITE, [seed, drawn])
        lab = BanditLab(seed=int(seed), frame_delay=0)
        for number, (action, shown) in enumerate(zip(drawn, page, strict=True)):
            play_python(lab, action)
            state = lab.state()
            where = f"session from seed {seed}, action {number} {action}"
            assert lab.ledger == shown["ledger"], where
            assert state["session"] == shown["state"]["session"], where
            assert call("GRPOLab.controller.replay", state["session"]) == shown["replay"], where
            python = {key: value for key, value in state.items() if key != "engine"}
            in_page = {key: value for key, value in shown["state"].items() if key != "engine"}
            assert (difference := differ(python, in_page)) is None, f"{where}: {difference}"
            compared += 1
        lab.close()
    assert compared == SESSIONS * ACTIONS_PER_SESSION
