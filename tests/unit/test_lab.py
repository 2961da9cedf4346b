"""The bandit lab (grpo_core.lab) in-process: set widgets, click buttons, read the engine and the state the views draw.

The views are drawn in the browser by ``grpo_core/lab/static/lab-view.js``
from one state object (``lab.view.state``); here that state is read, and the
cards are formatted as the view formats them. What the view draws from it is
checked in a real browser (tests/browser/test_lab_browser.py, tests/site/test_lab_site.py).

Golden numbers are recomputed here from the chapter's reward table and the
published formulas (eq. 3, the leave-one-out baseline, the clip rule of eq. 7,
KL and entropy of a categorical), not by calling the code under test.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import traitlets
from hypothesis import given, settings
from hypothesis import strategies as st
from lab_parity import play

from grpo_core.bandit import BanditGRPO, GRPOConfig
from grpo_core.bandit.trainer import Diverged
from grpo_core.lab import BanditLab
from grpo_core.lab.host import Group, call
from grpo_core.lab.spec import CARDS, KNOBS

REWARDS = np.array([0.2, 0.9, 0.4, 0.1])  # §11: A, B, C, D
B, C = 1, 2


def fixed(value: float, digits: int) -> str:
    """The lab's one formatter (lab-controller.js; every exact tie is checked in tests/browser/test_lab_words.py)."""
    return call("GRPOLab.controller.fixed", value, digits)


def card(lab: BanditLab, key: str) -> str:
    """A card as lab-view.js writes it: by the controller's ``fixed`` with the card's decimals, "—" for no value."""
    state = lab.view.state
    if key == "step":
        return str(state["steps"])
    digits = {css: digits for css, _, _, digits in CARDS}[key]
    value = state["stats"]["p_best" if key == "pB" else key]
    return "—" if value is None else fixed(value, digits)


def group(lab: BanditLab) -> dict | None:
    return lab.view.state["group"]


def table_rows(lab: BanditLab) -> dict[str, list[str]]:
    """The group table as lab-view.js fills it: {answer: [n, R, Â, ratio, clipped]} or [n, 'not sampled']."""
    shown = group(lab)
    rows = {}
    for k, name in enumerate("ABCD"):
        where = [i for i, a in enumerate(shown["actions"]) if a == k]
        if not where:
            rows[name] = ["0", "not sampled"]
            continue
        i = where[0]
        adv = shown["advantages"][i]
        if shown["ratios"] is None:
            ratio = clip = "—"
        else:
            ratio = f"{shown['ratios'][i]:.2f}"
            clip = ("yes: r > 1+ε" if adv > 0 else "yes: r < 1−ε") if shown["clipped"][i] else "no"
        rows[name] = [str(len(where)), f"{shown['rewards'][i]:g}", fmt_signed(adv), ratio, clip]
    return rows


def silent(lab: BanditLab) -> bool:
    """The no-signal banner is up: the group on screen has all rewards equal."""
    shown = group(lab)
    return shown is not None and len(set(shown["rewards"])) == 1


def fmt_signed(value: float) -> str:
    text = f"{value:+.2f}"
    return "0.00" if text in ("+0.00", "-0.00") else text


def knob_values(config: GRPOConfig) -> dict:
    return {knob.name: getattr(config, knob.name) for knob in KNOBS}


def kl_by_hand(p, q) -> float:
    return float(sum(pi * np.log(pi / qi) for pi, qi in zip(p, q, strict=True)))


def entropy_by_hand(p) -> float:
    return float(-sum(pi * np.log(pi) for pi in p))


@pytest.fixture
def lab():
    return BanditLab(seed=0, frame_delay=0)


def test_importing_the_package_or_the_lab_module_imports_no_widget():
    code = (
        "import sys, grpo_core, grpo_core.bandit, grpo_core.lab; "
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('ipywidgets', 'anywidget', 'matplotlib', 'IPython', 'py_mini_racer')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_defaults_are_the_chapters_and_the_views_start_empty(lab):
    assert (lab.group_size, lab.eps_low, lab.beta) == (8, 0.2, 0.04)
    assert (lab.lr, lab.inner_epochs, lab.advantage) == (1.0, 4, "grpo")
    assert lab.trainer.config == GRPOConfig()
    assert card(lab, "pB") == "0.250"
    assert card(lab, "kl") == "0.000"
    assert card(lab, "entropy") == f"{np.log(4):.3f}" == "1.386"
    assert card(lab, "mean") == card(lab, "std") == card(lab, "clip") == "—"
    assert card(lab, "step") == "0"
    assert group(lab) is None and not silent(lab)
    assert lab.view.state["probs"] == lab.view.state["ref_probs"] == [0.25] * 4
    assert lab.view.state["progress"] == [0, 0]


def test_sample_button_shows_the_group_with_rewards_and_advantages(lab):
    lab.buttons["sample"].click()
    actions = lab.trainer.pending
    assert actions is not None and actions.size == 8
    rewards = REWARDS[actions]
    assert card(lab, "mean") == f"{rewards.mean():.3f}"
    assert card(lab, "std") == f"{np.sqrt(np.mean((rewards - rewards.mean()) ** 2)):.3f}"
    assert card(lab, "clip") == "—"
    assert group(lab)["actions"] == actions.tolist()
    assert group(lab)["ratios"] is None, "sampled, not yet used"
    rows = table_rows(lab)
    std = rewards.std()
    for k, name in enumerate("ABCD"):
        count = int(np.sum(actions == k))
        if count == 0:
            assert rows[name] == ["0", "not sampled"]
            continue
        advantage = (REWARDS[k] - rewards.mean()) / (std + 1e-8)
        assert rows[name] == [str(count), f"{REWARDS[k]:g}", fmt_signed(advantage), "—", "—"]


def test_grpo_step_uses_the_sampled_group_and_shows_ratio_and_clip(lab):
    lab.buttons["sample"].click()
    actions, before = lab.trainer.pending.copy(), lab.trainer.probs
    lab.buttons["step"].click()
    after = lab.trainer.probs
    assert np.array_equal(lab.trainer.history[-1].actions, actions)
    assert lab.trainer.pending is None
    assert card(lab, "step") == "1"
    assert card(lab, "pB") == f"{after[B]:.3f}"
    assert card(lab, "kl") == f"{kl_by_hand(after, [0.25] * 4):.3f}"
    assert card(lab, "entropy") == f"{entropy_by_hand(after):.3f}"
    rewards = REWARDS[actions]
    advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-8)
    ratios = after[actions] / before[actions]
    clipped = ((ratios > 1.2) & (advantages > 0)) | ((ratios < 0.8) & (advantages < 0))
    assert card(lab, "clip") == f"{clipped.mean():.2f}"
    rows = table_rows(lab)
    for i, a in enumerate(actions):
        name = "ABCD"[a]
        assert rows[name][3] == f"{ratios[i]:.2f}"
        assert rows[name][4] == (("yes: r > 1+ε" if advantages[i] > 0 else "yes: r < 1−ε") if clipped[i] else "no")
    assert group(lab)["eps"] == 0.2, "used by the last GRPO step, clipped with its ε"


def test_grpo_step_without_a_group_samples_one_first(lab):
    lab.buttons["step"].click()
    assert len(lab.trainer.history) == 1
    assert lab.trainer.history[0].actions.size == 8
    assert card(lab, "mean") == f"{REWARDS[lab.trainer.history[0].actions].mean():.3f}"


def test_reset_restores_the_start_and_captures_the_reference():
    run = BanditGRPO(init_logits=[1.0, 0.0, 0.0, 0.0], seed=3)
    lab = BanditLab(run, frame_delay=0)
    start = np.exp([1.0, 0, 0, 0]) / np.exp([1.0, 0, 0, 0]).sum()
    first_group = lab.sample().actions.copy()
    lab.run_steps(5)
    lab.sharpen("D", 0.9)
    lab.seed.value = "7"
    lab.buttons["reset"].click()
    np.testing.assert_allclose(lab.trainer.probs, start)
    np.testing.assert_allclose(lab.trainer.ref_probs, start)
    assert lab.trainer.seed == 7 and lab.trainer.history == [] and lab.trainer.pending is None
    assert card(lab, "kl") == "0.000" and card(lab, "step") == "0"
    assert card(lab, "pB") == f"{start[B]:.3f}"
    assert (
        all(xs.tolist() == [0.0] for xs, _ in lab.curves.values() if xs.size) and lab.curves["mean_reward"][0].size == 0
    )
    assert group(lab) is None
    assert lab.view.state["progress"] == [0, 0], "Reset keeps the progress slot, empty"
    assert lab.ledger[0].startswith("reset · seed 7")
    lab.seed.value = "3"
    lab.reset()
    assert np.array_equal(lab.sample().actions, first_group), "the same seed replays the same groups"


def test_a_collapsed_policy_gives_the_zero_variance_warning_and_no_update():
    lab = BanditLab(seed=0, frame_delay=0)
    lab.beta = 0.0
    lab.group_size = 2
    lab.sharpen("C", 0.99)
    for _ in range(50):  # each group is silent with probability 0.99² + 3 · 0.0033² ≈ 0.98
        group = lab.sample()
        if len(set(group.actions.tolist())) == 1:
            break
    assert len(set(group.actions.tolist())) == 1
    assert silent(lab) and lab.view.state["config"]["beta"] == 0.0
    assert card(lab, "std") == "0.000"
    before = lab.trainer.probs
    result = lab.step()
    assert np.all(result.advantages == 0.0)
    assert np.array_equal(lab.trainer.probs, before), "Property 4.1: with β = 0 a silent group changes nothing"
    assert "no signal" in lab.ledger[0]
    lab.beta = 0.04
    assert silent(lab) and lab.view.state["config"]["beta"] == 0.04


def test_a_group_with_different_rewards_carries_signal():
    assert not Group(np.array([0, 1]), REWARDS[[0, 1]], np.array([-1.0, 1.0])).zero_variance
    assert Group(np.array([1, 1]), REWARDS[[1, 1]], np.zeros(2)).zero_variance


@pytest.mark.parametrize("seed", range(4))
def test_run_n_steps_with_the_defaults_raises_p_best(seed):
    lab = BanditLab(seed=seed, frame_delay=0)
    lab.steps.value = 30
    lab.buttons["run"].click()
    assert len(lab.trainer.history) == 30
    assert lab.view.state["progress"] == [30, 30]
    assert not lab.buttons["run"].disabled
    p_best = lab.trainer.probs[B]
    assert p_best > 0.5 > 0.25
    assert card(lab, "pB") == f"{p_best:.3f}" and card(lab, "step") == "30"
    steps, values = lab.curves["p_best"]
    assert steps.tolist() == list(range(31)) and values[0] == 0.25 and values[-1] == p_best
    assert lab.ledger[0].startswith("run 30 steps (0 → 30)")
    assert all(len(xs) == len(ys) > 0 for xs, ys in lab.view.state["curves"].values())
    assert lab.curves["clip_fraction"][0].tolist() == list(range(1, 31))


def test_run_steps_refuses_a_non_positive_count(lab):
    with pytest.raises(ValueError, match="steps"):
        lab.run_steps(0)
    with pytest.raises(TypeError, match="steps"):
        lab.run_steps(2.5)


def test_advantage_toggle_switches_the_engine_and_the_shown_advantages(lab):
    group = lab.sample()
    rewards = REWARDS[group.actions]
    size = rewards.size
    expected = {
        "rloo": rewards - (rewards.sum() - rewards) / (size - 1),
        "dr_grpo": rewards - rewards.mean(),
        "grpo": (rewards - rewards.mean()) / (rewards.std() + 1e-8),
    }
    for variant, advantages in expected.items():
        lab.advantage = variant
        assert lab.trainer.config.advantage == variant
        rows = table_rows(lab)
        for i, a in enumerate(group.actions):
            assert rows["ABCD"[a]][2] == fmt_signed(advantages[i])
    result = lab.step()  # the step uses the variant on screen
    np.testing.assert_allclose(result.advantages, expected["grpo"])
    assert lab.ledger[1] == "set advantage = GRPO"


def test_sliders_configure_the_engine(lab):
    lab.group_size = 16
    lab.eps_low = 0.1
    lab.beta = 0.2
    lab.lr = 0.5
    lab.inner_epochs = 8
    assert lab.trainer.config == GRPOConfig(group_size=16, eps_low=0.1, beta=0.2, lr=0.5, inner_epochs=8)
    assert lab.sample().actions.size == 16
    assert lab.ledger[1:6] == [
        "set inner epochs = 8",
        "set learning rate = 0.50",
        "set β = 0.200",
        "set ε = 0.10",
        "set G = 16",
    ]


def test_changing_G_drops_the_group_of_the_old_size(lab):
    lab.sample()
    lab.group_size = 4
    assert lab.trainer.pending is None and group(lab) is None
    assert lab.step().actions.size == 4


@pytest.mark.parametrize(
    ("name", "bad", "clamped"),
    [
        ("group_size", 1, 2),
        ("group_size", 1000, 64),
        ("eps_low", -0.3, 0.0),
        ("eps_low", 3.0, 0.5),
        ("beta", -1.0, 0.0),
        ("beta", 5.0, 1.0),
        ("lr", 0.0, 0.05),
        ("inner_epochs", 0, 1),
        ("steps", 0, 1),
        ("steps", 10_000, 500),
        ("sharpen_prob", 1.0, 0.99),
    ],
)
def test_widget_ranges_refuse_bad_values(lab, name, bad, clamped):
    widget = lab.knobs[name] if name in lab.knobs else getattr(lab, name)
    widget.value = bad
    assert widget.value == clamped
    GRPOConfig(**{field: getattr(lab.trainer.config, field) for field in ("group_size", "eps_low", "beta", "lr")})
    if name in ("group_size", "beta", "lr", "inner_epochs"):
        assert getattr(lab.trainer.config, name) == clamped
    if name == "eps_low":
        assert lab.trainer.config.eps_low == clamped


@pytest.mark.parametrize(("name", "bad"), [("group_size", "eight"), ("beta", "big"), ("advantage", "ppo")])
def test_widgets_refuse_values_of_the_wrong_kind(lab, name, bad):
    config = lab.trainer.config
    with pytest.raises(traitlets.TraitError):
        lab.knobs[name].value = bad
    assert lab.trainer.config == config


def test_sharpen_puts_pi_on_one_answer_and_keeps_the_reference(lab):
    probs = lab.sharpen("C", 0.94)
    np.testing.assert_allclose(probs, [0.02, 0.02, 0.94, 0.02])
    np.testing.assert_allclose(lab.trainer.ref_probs, [0.25] * 4)
    assert card(lab, "pB") == "0.020"
    assert card(lab, "kl") == f"{kl_by_hand([0.02, 0.02, 0.94, 0.02], [0.25] * 4):.3f}"
    assert lab.ledger[0] == "sharpen π onto C: π = [0.020 0.020 0.940 0.020] · π_ref kept"
    assert lab.curves["p_best"][0].tolist() == [0.0, 0.0], "a sharpen is a jump at the same step"
    lab.run_steps(3)
    top = int(np.argmax(lab.trainer.probs))
    lab.sharpen_action.value = -1
    lab.sharpen_prob.value = 0.5
    lab.buttons["sharpen"].click()
    assert lab.trainer.probs[top] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="action must be one of"):
        lab.sharpen("E")


def test_the_ledger_lists_actions_most_recent_first_and_stays_bounded():
    lab = BanditLab(seed=0, frame_delay=0, ledger_length=5)
    lab.buttons["sample"].click()
    lab.buttons["step"].click()
    lab.buttons["reset"].click()
    assert [entry.split(" ")[0] for entry in lab.ledger[:3]] == ["reset", "step", "sample"]
    for _ in range(10):
        lab.buttons["step"].click()
    assert len(lab.ledger) == 5
    assert lab.ledger[0].startswith("step 10 ")
    numbers = [number for number, _ in lab.view.state["ledger"]]
    assert numbers == sorted(numbers) and len(numbers) == 5, "oldest first in the state; the view reverses"


def test_consecutive_moves_of_one_slider_make_one_ledger_entry(lab):
    """A slider moved with the keyboard sends one value per key press: the ledger keeps one entry per gesture."""
    for value in (7, 6, 5, 4):
        lab.group_size = value
    assert lab.ledger[0] == "set G = 4" and lab.ledger[1].startswith("start")
    lab.beta = 0.1
    lab.beta = 0.2
    lab.group_size = 3
    assert lab.ledger[:3] == ["set G = 3", "set β = 0.200", "set G = 4"]
    lab.sample()
    lab.group_size = 5
    assert lab.ledger[0] == "set G = 5" and lab.ledger[1].startswith("sample G=3")


def test_views_are_updated_in_place_not_rebuilt(lab):
    def all_widgets(widget):
        yield widget
        for child in getattr(widget, "children", ()):
            yield from all_widgets(child)

    before = [id(widget) for widget in all_widgets(lab.widget)]
    start = lab.view.state
    lab.run_steps(3)
    lab.sharpen("A", 0.6)
    lab.reset()
    assert [id(widget) for widget in all_widgets(lab.widget)] == before
    assert lab.view.state["probs"] == start["probs"] and lab.view.state["curves"] == start["curves"]


@pytest.mark.parametrize("action", ["sample", "step", "reset", "sharpen", "slider", "advantage"])
def test_a_click_sends_one_state_message_and_nothing_else(lab, monkeypatch, action):
    """Issue 18: every view is one widget whose state crosses to the browser as one message per click."""
    import ipywidgets

    sent = []
    original = ipywidgets.Widget.send_state
    monkeypatch.setattr(
        ipywidgets.Widget, "send_state", lambda widget, key=None: (sent.append((widget, key)), original(widget, key))
    )
    do = {
        "sample": lab.buttons["sample"].click,
        "step": lab.buttons["step"].click,
        "reset": lab.buttons["reset"].click,
        "sharpen": lab.buttons["sharpen"].click,
        "slider": lambda: setattr(lab.knobs["beta"], "value", 0.1),
        "advantage": lambda: setattr(lab.knobs["advantage"], "value", "rloo"),
    }
    do[action]()
    from_the_view = [key for widget, key in sent if widget is lab.view]
    assert from_the_view == ["state"], from_the_view
    others = [widget for widget, _ in sent if widget is not lab.view]
    moved = {"slider": [lab.knobs["beta"]], "advantage": [lab.knobs["advantage"]]}
    assert others == moved.get(action, [])


def test_run_n_steps_sends_one_state_per_animated_step(lab, monkeypatch):
    sent = []
    monkeypatch.setattr(type(lab.view), "send_state", lambda widget, key=None: sent.append(key))
    lab.run_steps(4)
    assert len(sent) == 4 + 1, "one per step, then the ledger's summary"


def test_the_state_is_json_and_names_the_engine_and_the_session(lab):
    lab.run_steps(2)
    lab.sample()
    lab.step()
    state = json.loads(json.dumps(lab.state()))
    assert state["engine"].startswith("Python engine")
    config = {"group_size": 8, "eps_low": 0.2, "beta": 0.04, "lr": 1.0, "inner_epochs": 4, "advantage": "grpo"}
    assert state["session"] == [["new", {"seed": "0", "config": config}], ["step", 2], ["sample", None], ["step", 1]]


def test_the_session_replays_the_lab_after_any_click(lab):
    """Samples, knob changes mid-run (G with a group pending), sharpening and a reset with a seed beyond 2**53."""
    lab.sample()
    lab.sample()
    lab.step()
    lab.group_size = 5
    lab.lr = 2.5
    lab.sample()
    lab.group_size = 3  # drops the pending group of 5
    lab.run_steps(3)
    lab.sharpen("C", 0.99)
    lab.advantage = "rloo"
    lab.run_steps(4)
    assert [entry[0] for entry in lab.state()["session"]] == [
        "new", "sample", "sample", "step", "configure", "sample", "configure", "drop", "step", "set_policy",
        "configure", "step",
    ]  # fmt: skip
    assert play(lab.state()["session"])[-1][1] == lab.trainer.logits.tolist()
    lab.reset(2**64 - 1)
    assert lab.seed.value == "18446744073709551615" and lab.trainer.seed == 2**64 - 1
    lab.eps_low = 0.3
    lab.run_steps(2)
    session = lab.state()["session"]
    assert session[0] == [
        "new",
        {"seed": "18446744073709551615", "config": knob_values(lab.trainer.config) | {"eps_low": 0.2}},
    ]
    assert play(session)[-1][1] == lab.trainer.logits.tolist()


def test_a_knob_takes_the_value_its_slider_shows(lab):
    lab.lr = 1.0499999999999998  # what the ipywidgets slider sends for 1.05
    assert lab.trainer.config.lr == 1.05 and lab.ledger[0] == "set learning rate = 1.05"
    assert lab.state()["session"][-1] == ["configure", {"lr": 1.05}]


@pytest.mark.parametrize("text", ["-5", "1.5", "seven", "18446744073709551616", ""])
def test_the_seed_box_refuses_what_is_not_a_seed_and_resets_nothing(lab, text):
    lab.run_steps(2)
    lab.seed.value = text
    lab.reset()
    assert len(lab.trainer.history) == 2 and lab.trainer.seed == 0
    assert lab.ledger[0] == f'seed must be an integer from 0 to 18446744073709551615, got "{text}": nothing reset'


def test_a_step_that_diverges_is_logged_and_stops_the_run(lab, monkeypatch):
    lab.run_steps(2)
    before = lab.trainer.logits.copy()

    def overflow():
        lab.trainer.pending = None
        raise Diverged("config.lr = 1.0 made the logits overflow at inner epoch 0: lower lr")

    monkeypatch.setattr(lab.trainer, "update", overflow)  # BanditTrainer.step turns it into its own Diverged
    assert lab.run_steps(5) == []
    assert lab.ledger[1] == "step 3: config.lr = 1.0 made the logits overflow at inner epoch 0: lower lr"
    assert lab.ledger[0].startswith("run stopped after 0 of 5 steps (2 → 2)")
    assert np.array_equal(lab.trainer.logits, before) and lab.state()["session"][-1][0] == "diverged"


def test_the_lab_displays_as_its_widget_with_a_short_text_fallback(lab):
    bundle = lab._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == lab.widget.model_id
    assert bundle["text/plain"] == "BanditLab(steps=0, G=8, eps=0.20, beta=0.040, P(B)=0.250)"


def test_readout_says_what_the_cards_show(lab):
    lab.run_steps(2)
    text = lab.readout()
    for key, label in (("mean", "mean(R)"), ("kl", "KL(π‖π_ref)"), ("pB", "P(B)"), ("clip", "clip fraction")):
        assert f"{label} {card(lab, key)}" in text
    assert text.startswith("step 2 · G=8 ε=0.20 β=0.040")


def test_stable_css_classes_for_the_browser():
    lab = BanditLab(frame_delay=0)
    classes = {
        "grpo-lab-sample": lab.buttons["sample"],
        "grpo-lab-step": lab.buttons["step"],
        "grpo-lab-reset": lab.buttons["reset"],
        "grpo-lab-run": lab.buttons["run"],
        "grpo-lab-sharpen": lab.buttons["sharpen"],
        "grpo-lab-views": lab.view,
        "grpo-lab-group-size": lab.knobs["group_size"],
        "grpo-lab": lab.widget,
    }
    for css, widget in classes.items():
        assert css in widget._dom_classes


def test_the_lab_refuses_an_engine_it_cannot_show():
    with pytest.raises(TypeError, match="trainer must be"):
        BanditLab("engine")
    with pytest.raises(ValueError, match="group_size"):
        BanditLab(BanditGRPO(config=GRPOConfig(group_size=100)))
    with pytest.raises(ValueError, match="eps_high"):
        BanditLab(BanditGRPO(config=GRPOConfig(eps_high=0.28)))
    with pytest.raises(ValueError, match="ledger_length"):
        BanditLab(ledger_length=0)
    with pytest.raises(ValueError, match="frame_delay"):
        BanditLab(frame_delay=-1.0)


def test_long_curves_are_subsampled_keeping_both_ends():
    """The controller's one subsampling (lab-controller.js), and a lab's state after more steps than it keeps."""
    xs = list(range(2001))
    ys = [x / 2000 for x in xs]
    points = call("GRPOLab.controller.CURVE_POINTS.valueOf")
    short_x, short_y = call("GRPOLab.controller.subsample", xs, ys)
    assert 2 <= len(short_x) <= points and short_x[0] == 0 and short_x[-1] == 2000
    assert short_y == [ys[x] for x in short_x]
    assert call("GRPOLab.controller.subsample", xs[:10], ys[:10]) == [xs[:10], ys[:10]]
    lab = BanditLab(seed=0, frame_delay=0)
    lab.run_steps(points + 5)
    shown = lab.state()["curves"]["kl"]
    assert len(shown[0]) == points and shown[0][-1] == points + 5 and len(lab.curves["kl"][0]) == points + 6


def test_the_state_of_a_fresh_lab_has_every_key_the_view_reads():
    state = BanditLab(seed=2, frame_delay=0).state()
    assert set(state) == {
        "engine", "names", "rewards", "best", "probs", "ref_probs", "config", "seed", "steps", "group", "stats",
        "curves", "ledger", "progress", "running", "session",
    }  # fmt: skip
    assert state["stats"]["mean"] is None and state["stats"]["p_best"] == 0.25


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["sample", "step", "run", "reset", "sharpen", "G", "beta", "advantage"]), max_size=12))
def test_the_views_always_show_the_engine(actions):
    lab = BanditLab(seed=5, frame_delay=0, ledger_length=6)
    do = {
        "sample": lab.buttons["sample"].click,
        "step": lab.buttons["step"].click,
        "run": lambda: lab.run_steps(2),
        "reset": lab.buttons["reset"].click,
        "sharpen": lab.buttons["sharpen"].click,
        "G": lambda: setattr(lab.knobs["group_size"], "value", 3 if lab.group_size == 8 else 8),
        "beta": lambda: setattr(lab.knobs["beta"], "value", 0.0 if lab.beta else 0.04),
        "advantage": lambda: setattr(lab.knobs["advantage"], "value", "rloo" if lab.advantage == "grpo" else "grpo"),
    }
    for action in actions:
        do[action]()
        probs, ref = lab.trainer.probs, lab.trainer.ref_probs
        assert card(lab, "pB") == f"{probs[B]:.3f}"
        assert card(lab, "kl") == f"{kl_by_hand(probs, ref):.3f}"
        assert card(lab, "entropy") == f"{entropy_by_hand(probs):.3f}"
        assert card(lab, "step") == str(len(lab.trainer.history))
        shown = group(lab)
        if shown is not None:
            assert len(shown["actions"]) == len(shown["rewards"]) == len(shown["advantages"])
            assert silent(lab) == (len(set(shown["actions"])) == 1)
        assert len(lab.ledger) <= 6
        assert lab.curves["p_best"][1][-1] == probs[B]


def contrast(one: str, two: str) -> float:
    """WCAG 2.1 contrast ratio of two #rrggbb colours."""

    def luminance(color: str) -> float:
        channels = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(one), luminance(two)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_every_colour_of_the_palette_that_writes_text_passes_aa_in_both_schemes():
    """The chart titles (V^π in blue), the best answer's name (green), the signs of Â (green, red, zero on their
    chips) and the banner (warn-ink on warn-bg), light and dark, on the lab's backgrounds: white, the book's dark
    #121212 and JupyterLab's dark #111111."""
    from grpo_core.lab.spec import PALETTE, PANELS

    backgrounds = (("#ffffff",), ("#121212", "#111111"))
    title_colours = {colour for panel in PANELS for _, colour in panel["title"] if colour not in (None, "muted")}
    assert title_colours == {"blue"}
    for scheme in (0, 1):
        for name in (*title_colours, "green", "red"):
            for background in backgrounds[scheme]:
                assert contrast(PALETTE[name][scheme], background) >= 4.5, (name, scheme, background)
        for ink, paper in (("green", "pos-bg"), ("red", "neg-bg"), ("zero", "zero-bg"), ("warn-ink", "warn-bg")):
            assert contrast(PALETTE[ink][scheme], PALETTE[paper][scheme]) >= 4.5, (ink, paper, scheme)
        for fill in ("sample-fill", "step-fill", "run-fill", "sharpen-fill"):  # white text on the site's buttons
            assert contrast("#ffffff", PALETTE[fill][scheme]) >= 4.5, (fill, scheme)
