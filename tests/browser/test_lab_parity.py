"""The page's engine equals grpo_core's BanditGRPO over the lab's whole slider space, in headless Chromium.

``tests/lab_parity.py`` draws random sessions (every knob from its slider, seeds up to 2**64 - 1, sharpened
starts, knob changes, samples and resets mid-run, 110+ GRPO steps each) and plays them with grpo_core; the
engine (``grpo_core/lab/static/lab-engine.js``, with the ``lab-spec.js`` the book writes) plays them in one page
evaluation. After every entry of every session the actions drawn must be the same, a ``Diverged`` step must
diverge with the same message, and the logits must agree within 1e-12 of their size, or within what grpo_core's own
results on two CPUs differ by, four times over, where that is more (:data:`CPU_SPREAD`).
``GRPO_LAB_PARITY_SESSIONS`` sets how many sessions of the fixed seed (40 by default, about 4 900 GRPO steps;
grpo_core takes most of the time; ``make test-lab-sweep`` plays 1 000). Each run adds :data:`FRESH` sessions drawn
from a new seed, which a failure prints: ``GRPO_LAB_PARITY_SEED=that seed`` replays them.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import baseline_cpu_env
from lab_parity import LOGIT_TOLERANCE, STEPS, VALUES, play, sessions

from grpo_core.bandit import BanditGRPO, GRPOConfig
from grpo_core.bandit.env import log_softmax
from grpo_core.bandit.trainer import Diverged
from grpo_core.lab import spec
from grpo_core.lab.view import asset

SESSIONS = int(os.environ.get("GRPO_LAB_PARITY_SESSIONS", "40"))
FRESH = 8
FRESH_SEED = int(os.environ.get("GRPO_LAB_PARITY_SEED", secrets.randbits(63)))
# A step can amplify the last bits of its inputs. On the 395th session of sessions(1000) (G = 52, 16 inner epochs,
# lr 0.85, beta 0.89, dr_grpo) one step takes the logits from 0.1 to 1.4e8 through the KL term's exp(±20); from
# the same state, grpo_core's logits after it differ by 3.5e-12 of their size between this CPU (NumPy's AVX-512
# exp and log) and the emulated baseline CPU, more than the 1e-12 the engine is held to elsewhere. The page's
# engine gave the baseline CPU's logits to the last bit. Where grpo_core disagrees with itself across CPUs, the
# engine is held to that disagreement, four times over (for the CPUs between and beside the two).
CPU_SPREAD = 4

PLAY = """([sessions, references]) => sessions.map((entries, s) => {
  const E = GRPOLab.engine;
  let run = null;
  return entries.map(([verb, argument], e) => {
    let drawn = "";
    if (verb === "new") run = new E.BanditGRPO({ seed: argument.seed, config: argument.config });
    else if (verb === "configure") run.configure(argument);
    else if (verb === "sample") drawn = run.sample().actions.join("");
    else if (verb === "step") {
      for (let i = 0; i < argument; i++) {
        try {
          drawn = run.step().actions.join("");
        } catch (error) {
          if (!(error instanceof E.Diverged)) throw error;
          drawn = error.message;
        }
      }
    } else if (verb === "drop") run.pending = null;
    else if (verb === "set_policy") run.setPolicy(argument);
    else if (verb === "reset") run.reset(argument);
    else throw new Error(`unknown session entry ${verb}`);
    const logits = run.logits;
    run.logits = references[s][e][1].slice(); // the next entry starts from grpo_core's state
    return [drawn, logits];
  });
})"""


@pytest.fixture(scope="module")
def engine_page(browser):
    """A blank page with the spec and the engine, nothing else."""
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_content("<!doctype html><title>engine</title>")
    page.add_script_tag(content=spec.script())
    page.add_script_tag(content=asset("lab-engine.js"))
    yield page
    assert errors == []
    page.close()


def on_the_baseline_cpu(drawn: list, python: list) -> list:
    """grpo_core's records of the sessions played again, each entry from the state ``python`` recorded before it,
    in a process on the emulated baseline CPU (tests/conftest.py, baseline_cpu_env)."""
    env = {**os.environ, **baseline_cpu_env()}
    script = Path(__file__).parents[1] / "lab_parity.py"
    done = subprocess.run(
        [sys.executable, script],
        input=json.dumps(list(zip(drawn, python, strict=True))),
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def first_difference(python: list, page: list, baseline: list) -> str | None:
    """Where a session's records part, or None."""
    for index, ((drawn, logits), (page_drawn, page_logits), (other_drawn, other)) in enumerate(
        zip(python, page, baseline, strict=True)
    ):
        if drawn != other_drawn:
            return f"entry {index}: grpo_core drew {drawn!r} on this CPU, {other_drawn!r} on the baseline CPU"
        if drawn != page_drawn:
            return f"entry {index}: grpo_core drew {drawn!r}, the page {page_drawn!r}"
        page_logits = np.array([np.nan if x is None else x for x in page_logits])
        error = np.abs(np.asarray(logits) - page_logits).max()
        spread = np.abs(np.asarray(logits) - np.asarray(other)).max()
        if not error <= max(LOGIT_TOLERANCE * max(1.0, np.abs(logits).max()), CPU_SPREAD * spread):
            return f"entry {index}: logits off by {error:.3g} ({logits} against {page_logits.tolist()})"
    return None


def test_the_engine_equals_banditgrpo_over_the_slider_space(engine_page):
    print(f"{FRESH} fresh sessions from GRPO_LAB_PARITY_SEED={FRESH_SEED}")
    drawn = sessions(SESSIONS) + sessions(FRESH, seed=FRESH_SEED)
    assert sum(verb == "step" for entries in drawn for verb, _ in entries) >= STEPS * len(drawn)
    python = [play(entries) for entries in drawn]
    in_page = engine_page.evaluate(PLAY, [drawn, python])
    baseline = on_the_baseline_cpu(drawn, python)
    failures = [
        (entries[0], where)
        for entries, a, b, c in zip(drawn, python, in_page, baseline, strict=True)
        if (where := first_difference(a, b, c))
    ]
    replay = f"GRPO_LAB_PARITY_SEED={FRESH_SEED} replays the fresh ones"
    assert not failures, f"{len(failures)} of {len(drawn)} sessions differ ({replay}); the first: {failures[0]}"
    fixed = python[:SESSIONS]  # the fresh sessions are a sample: the coverage is the fixed seed's
    assert sum(map(reaches_the_bound, fixed)) >= SESSIONS // 10, "too few sessions reach the log-ratio bound"


def reaches_the_bound(records: list) -> bool:
    """Whether some entry moved a log-probability by more than the log-ratio bound (where the guards act)."""
    log_probs = log_softmax(np.array([logits for _, logits in records]))
    return bool((np.abs(np.diff(log_probs, axis=0)) > spec.GUARDS["log_ratio_bound"]).any())


def test_a_seed_beyond_the_range_is_refused_by_name(engine_page):
    for seed in ("18446744073709551616", "-1", "1.5", "x"):
        message = engine_page.evaluate(
            "(seed) => { try { new GRPOLab.engine.BanditGRPO({ seed }); } catch (e) { return e.message; } }",
            seed,
        )
        assert message is not None and message.startswith("seed must be an integer from 0 to 18446744073709551615")


def test_the_engine_says_what_grpo_core_says_when_a_step_diverges(engine_page):
    """Diverged's message for every value of the lr slider (the guards keep the sliders' runs finite, so the message
    is compared, not provoked through the sliders)."""
    rates = VALUES["lr"]
    python = []
    for lr in rates:
        run = BanditGRPO(config=GRPOConfig(lr=lr))
        run.run(2)
        run.update = lambda run=run: setattr(run, "logits", np.array([np.inf, 0.0, 0.0, 0.0]))
        with pytest.raises(Diverged) as error:
            run.step()
        python.append(str(error.value))
    in_page = engine_page.evaluate(
        """(rates) => rates.map((lr) => {
          const run = new GRPOLab.engine.BanditGRPO({ config: { lr } });
          run.history.push(null, null);  // two steps taken: the next is step 3
          const error = run.diverged();
          return error instanceof GRPOLab.engine.Diverged ? error.message : null;
        })""",
        rates,
    )
    assert in_page == python
