"""What the lab shows is written by one formatter, and what it says about a step is true of that step.

1. *One number format.* Every number either lab shows or announces is written by ``fixed`` of the one controller,
   ``static/lab-controller.js`` (in headless Chromium for the page, in the kernel's embedded V8 for BanditLab), by one
   rule: the exact binary value rounded, an exact tie to even. Every exact tie k/G (G = 2..64) is checked against
   :mod:`decimal`, and the clip fraction k/G is shown alike on the card, in the ledger, in the screen reader's
   summary and in ``readout()``, for the JupyterLab lab (its state drawn by the view) and the page's lab
   (``static/lab-site.js`` over the page's engine).
2. *True words.* Over a seeded grid of the slider space (every knob from its slider's values, sharpened starts, the
   issue's settings) every GRPO step is played, and each thing the ledger, the banner and the summary say about it
   is checked against what the step did, measured here from the policies before and after it: "no signal", "π did
   not move", "back toward π_ref", "overshot … away from π_ref", "KL stays", the k3 weight π_ref/π and its answer.
   Each of these is also required to appear where the step calls for it, and each appears in the grid.
"""

from __future__ import annotations

import copy
import re
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np
from lab_parity import SHARPEN, VALUES

from grpo_core.bandit import GRPOConfig
from grpo_core.lab import BanditLab
from grpo_core.lab import spec as lab_spec
from grpo_core.lab.host import call
from grpo_core.lab.spec import K3_WEIGHT_LARGE, KL_STILL

TIES = [(k, G) for G in range(2, 65) for k in range(G + 1)]
NUMBER = r"(-?\d+\.\d+)"


def by_decimal(x: float, digits: int) -> str:
    """The exact value of the double ``x`` rounded to ``digits`` decimals, a tie to even (the rule, independently)."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_EVEN))


def fixed(x: float, digits: int) -> str:
    """The one formatter (lab-controller.js), as the kernel's lab runs it (embedded V8)."""
    return call("GRPOLab.controller.fixed", x, digits)


def ledger_text(parts: list) -> str:
    return call("GRPOLab.controller.ledgerText", parts)


def is_tie(x: float, digits: int) -> bool:
    """Whether the double ``x`` lies exactly halfway between two numbers of ``digits`` decimals."""
    return Decimal(x) * 10**digits % 1 == Decimal("0.5")


# -- 1. one number format ---------------------------------------------------------------------------------------


def test_every_exact_tie_k_over_G_is_written_by_the_one_rule_in_python_and_in_the_page(lab_scripts):
    values = [k / G for k, G in TIES]
    in_page = lab_scripts.evaluate(
        "(xs) => xs.map((x) => [1, 2, 3].map((d) => GRPOLab.controller.fixed(x, d)))", values
    )
    for x, page_texts in zip(values, in_page, strict=True):
        for digits, page_text in zip((1, 2, 3), page_texts, strict=True):
            assert fixed(x, digits) == page_text == by_decimal(x, digits), (x, digits)
    ties = sum(is_tie(x, d) for x in values for d in (1, 2, 3))
    assert ties >= 90, "the grid holds exact ties (96 of them)"
    negative = lab_scripts.evaluate("() => [-0.625, -0.375, 0.625].map((x) => GRPOLab.controller.signed(x))")
    assert negative == ["-0.62", "-0.38", "+0.62"]


SHOWN = """([states, spec]) => {
  const el = document.getElementById('views');
  el.innerHTML = '';
  const view = GRPOLab.view.mount(el, spec);
  return states.map((state) => {
  view.update(state);
  return {
    card: el.querySelector('.grpo-lab-clip .grpo-card-value').textContent,
    ledger: el.querySelector('.grpo-lab-ledger li').textContent,
    summary: el.querySelector('.grpo-lab-summary').textContent,
    curve: el.querySelectorAll('.grpo-curve')[4].querySelector('.grpo-value').textContent,
  };
})}"""


def test_a_clip_fraction_at_a_tie_reads_the_same_on_the_card_the_ledger_the_summary_and_readout(lab_scripts):
    """The issue's case (seed 0, two GRPO steps: 5 of 8 clipped), then the clip fraction set to each k/G (G = 2..64)
    that is an exact tie at the two decimals of the card or the three of the curve's value, and a few that are not."""
    lab = BanditLab(seed=0, frame_delay=0)
    lab.step(), lab.step()
    assert lab.trainer.history[-1].clip_fraction == 0.625
    state = lab.state()
    states = []
    at_ties = sorted({k / G for k, G in TIES if is_tie(k / G, 2) or is_tie(k / G, 3)})
    assert len(at_ties) == 12, "the ties k/G: 1/8, 3/8, ... and 1/16, 3/16, ..."
    for clip in [0.625, *at_ties, 1 / 3, 2 / 3, 0.1]:
        shown = copy.deepcopy(state)
        shown["stats"]["clip"] = clip
        shown["curves"]["clip_fraction"][1][-1] = clip
        shown["ledger"][-1][1][0][1]["clip"] = clip
        states.append(shown)
    in_page = lab_scripts.evaluate(SHOWN, [states, lab_spec.spec()])
    assert "clip fraction 0.62" in lab.readout() and "clip 0.62 " in lab.ledger[0]
    for shown, page in zip(states, in_page, strict=True):
        clip = shown["stats"]["clip"]
        text = by_decimal(clip, 2)
        assert text == fixed(clip, 2)
        assert page["card"] == text, clip
        assert f"clip {text} " in page["ledger"] and page["ledger"].endswith(ledger_text(shown["ledger"][-1][1]))
        assert f"Clip fraction {text}," in page["summary"]
        assert page["curve"] == by_decimal(clip, 3)


def test_the_page_lab_writes_the_tie_as_the_jupyterlab_lab_does(lab_scripts):
    """The site's controller over the page's engine, seed 0, two GRPO steps: 0.625 shown as 0.62 everywhere."""
    shown = lab_scripts.evaluate(
        """() => {
          const lab = new GRPOLab.site.SiteLab(document.getElementById('site'), '0');
          lab.click('step');
          lab.click('step');
          const el = document.getElementById('site');
          return {
            clip: lab.state().stats.clip,
            card: el.querySelector('.grpo-lab-clip .grpo-card-value').textContent,
            ledger: el.querySelector('.grpo-lab-ledger li').textContent,
            summary: el.querySelector('.grpo-lab-summary').textContent,
          };
        }"""
    )
    python = BanditLab(seed=0, frame_delay=0)
    python.step(), python.step()
    assert shown["clip"] == 0.625
    assert shown["card"] == "0.62" and "clip 0.62 " in shown["ledger"] and "Clip fraction 0.62," in shown["summary"]
    assert shown["ledger"].endswith(python.ledger[0])


# -- 2. true words ------------------------------------------------------------------------------------------------


def kl(p, q) -> float:
    """KL(p‖q) of two categoricals, 0 log 0 = 0 (by hand)."""
    p, q = np.asarray(p), np.asarray(q)
    inside = p > 0
    return float(np.sum(p[inside] * np.log(p[inside] / q[inside])))


def grid(count: int = 100, seed: int = 40):
    """Settings over the slider space, seeded: every knob from its slider's values, π sharpened onto a random answer
    (or not), a few steps; first the issue's (defaults, π sharpened onto C at 0.99, β from 0 to 1)."""
    rng = np.random.default_rng(seed)
    for beta in (0.0, 0.2, 0.5, 1.0):
        for run_seed in range(6):
            yield run_seed, GRPOConfig(beta=beta), (2, 0.99), 10
    for run_seed in range(6):  # G = 2: a group with no signal whose KL step overshoots (seed 0, its fourth step)
        yield run_seed, GRPOConfig(group_size=2, beta=0.5), (2, 0.9), 5
    for _ in range(count):
        knobs = {name: values[rng.integers(len(values))] for name, values in VALUES.items()}
        knobs["eps_high"] = None
        sharpen = (int(rng.integers(4)), float(SHARPEN[rng.integers(len(SHARPEN))])) if rng.random() < 0.7 else None
        yield int(rng.integers(2**32)), GRPOConfig(**knobs), sharpen, int(rng.integers(1, 8))


def play_grid():
    """Each step of the grid: the state after it, and what was measured (π before and after, π_ref, the group)."""
    steps = []
    lab = BanditLab(frame_delay=0)  # one lab, reset to each setting's seed, as a reader plays it
    for seed, config, sharpen, count in grid():
        for name in VALUES:
            lab.knobs[name].value = getattr(config, name)
        lab.reset(seed)
        if sharpen is not None:
            lab.sharpen(*sharpen)
        for _ in range(count):
            before, ref = lab.trainer.probs.copy(), lab.trainer.ref_probs.copy()
            sampled = lab.sample()
            still = None
            if sampled.zero_variance and config.beta == 0:  # what a step on it would do, for the sampled banner
                would_step = copy.deepcopy(lab.trainer)
                would_step.step()
                still = bool(np.array_equal(would_step.probs, before))
            sample_state = lab.state()
            result = lab.step()
            if result is None:
                break
            steps.append(
                {
                    "sample_state": sample_state,
                    "state": lab.state(),
                    "ledger": lab.ledger[0],
                    "beta": config.beta,
                    "rewards": result.rewards,
                    "advantages": result.advantages,
                    "sampled_advantages": sampled.advantages,
                    "sampled_still": still,
                    "moved": not np.array_equal(lab.trainer.probs, before),
                    "kl_before": kl(before, ref),
                    "kl_after": kl(lab.trainer.probs, ref),
                    "k3": (ref[result.actions] / before[result.actions]),
                    "actions": result.actions,
                }
            )
    return steps


WORDS = """([states, spec]) => states.map((state) => [
  GRPOLab.view.warningHtml(state, spec).replace(/<[^>]*>/g, ''), GRPOLab.view.summaryText(state, spec),
])"""


def numbers(pattern: str, text: str) -> list[float]:
    found = re.search(pattern, text)
    assert found, (pattern, text)
    return [float(x) for x in found.groups()]


def check_step(step: dict, banner: str, summary: str, seen: set) -> None:
    """Every claim of the ledger, the banner and the summary about one step against what was measured."""
    ledger, beta = step["ledger"], step["beta"]
    silent = bool(np.all(step["rewards"] == step["rewards"][0]))
    assert ("no signal" in ledger) == silent == ("No signal from this group" in banner), ledger
    before, after = step["kl_before"], step["kl_after"]
    said = {
        "still": "π did not move" in ledger,
        "toward": "moved π back toward π_ref" in ledger,
        "away": "overshot, π moved away from π_ref" in ledger,
        "stays": "KL stays at" in ledger,
    }
    assert sum(said.values()) == silent, ledger  # a step on a silent group says exactly one of these
    if silent:
        assert np.all(step["advantages"] == 0), "every Â = 0"
        (outcome,) = (key for key, value in said.items() if value)
        seen.add(outcome)
        if outcome == "still":
            assert not step["moved"], ledger
            assert "did not move" in banner and "did not move" in summary
        else:
            assert step["moved"], ledger
            kl_shown = numbers(rf"KL {NUMBER} → {NUMBER}\)" if outcome != "stays" else rf"KL stays at {NUMBER}", ledger)
            assert abs(kl_shown[-1] - after) <= 5e-4 + 1e-12
            if outcome != "stays":
                assert abs(kl_shown[0] - before) <= 5e-4 + 1e-12
                assert (after < before) if outcome == "toward" else (after > before), (before, after, ledger)
                assert abs(after - before) >= KL_STILL - 1e-12
                word = "back toward π_ref" if outcome == "toward" else "overshot"
                assert word in banner and numbers(rf"KL\(π‖π_ref\) {NUMBER} → {NUMBER}", banner) == kl_shown
            else:
                assert abs(after - before) < KL_STILL + 1e-12 and "stays at" in banner
        if beta == 0:
            assert outcome == "still" and "with β = 0 nothing acted on π" in banner
    else:
        assert np.any(step["advantages"] != 0) and "are not all 0" in banner
    weight = step["k3"].max()
    answer = "ABCD"[step["actions"][np.argmax(step["k3"])]]
    large = beta > 0 and weight >= K3_WEIGHT_LARGE
    assert ("k3 weight" in ledger) == large == ("The k3 weight" in banner), (weight, beta, ledger)
    if large:
        seen.add("k3")
        if weight < 1e6:
            (shown,) = numbers(rf"k3 weight π_ref/π = {NUMBER} on {answer}$", ledger)
            assert abs(shown - weight) <= 0.05 + 1e-9 * weight
            assert f"The k3 weight π_ref/π of {answer} is {fixed(weight, 1)}," in banner
        else:
            seen.add("k3 above 10^6")
            assert ledger.endswith(f"k3 weight π_ref/π above 10^6 on {answer}")
            assert f"The k3 weight π_ref/π of {answer} is above 10^6," in banner


def check_sampled(step: dict, banner: str, seen: set) -> None:
    """The banner on the group before the step: what will act on π."""
    silent = bool(np.all(step["rewards"] == step["rewards"][0]))
    assert silent == ("No signal from this group" in banner)
    if silent and step["beta"] == 0:
        assert "a GRPO step on it leaves π where it is" in banner and step["sampled_still"] is True
        seen.add("sampled still")
    elif silent:
        assert f"only the KL term (β = {fixed(step['beta'], 3)}) will act on π" in banner
        assert np.all(step["sampled_advantages"] == 0)


def test_what_the_lab_says_about_each_step_is_what_the_step_did(lab_scripts):
    steps = play_grid()
    assert len(steps) > 600
    spec = lab_spec.spec()
    shown = lab_scripts.evaluate(WORDS, [[step["state"] for step in steps], spec])
    sampled = lab_scripts.evaluate(WORDS, [[step["sample_state"] for step in steps], spec])
    seen: set = set()
    for step, (banner, summary), (sampled_banner, _) in zip(steps, shown, sampled, strict=True):
        check_step(step, banner, summary, seen)
        check_sampled(step, sampled_banner, seen)
    assert seen >= {"still", "toward", "away", "stays", "k3", "sampled still"}, seen


def test_the_issues_overshoot_and_freeze_are_said_with_their_numbers():
    """Defaults, π sharpened onto C at 0.99, seed 0: at β = 0.2 the group CCCACCCC sends π onto A (KL up to log 4,
    k3 weight 74 on A); at β = 1 the same group freezes π one-hot on C, and later steps leave it there."""
    overshoot = BanditLab(seed=0, frame_delay=0)
    overshoot.beta = 0.2
    overshoot.sharpen("C", 0.99)
    overshoot.step(), overshoot.step()
    assert "".join("ABCD"[a] for a in overshoot.trainer.history[-1].actions) == "CCCACCCC"
    assert overshoot.ledger[0].endswith("k3 weight π_ref/π = 74.4 on A") and overshoot.trainer.probs[0] == 1.0
    overshoot.step()
    assert "no signal: π did not move" in overshoot.ledger[0], "π is one-hot on A: nothing moves it"
    frozen = BanditLab(seed=0, frame_delay=0)
    frozen.beta = 1.0
    frozen.sharpen("C", 0.99)
    frozen.run_steps(10)
    assert frozen.trainer.probs[2] == 1.0
    assert frozen.view.state["group"]["outcome"] == "still"
