"""The live lab of the built §11 page (``make book`` → ``_build/html``) in headless Chromium.

The page runs the lab with no kernel: the JavaScript engine
(``grpo_core/lab/static/lab-engine.js``) under the one view module. Here it
must (1) play grpo_core's random sessions as grpo_core does (``tests/lab_parity.py``; the whole slider space is
``tests/browser/test_lab_parity.py``'s); (2) answer every control with the change it promises; (3) print Python that
replays any session clicked through its controls; (4) request nothing from another host and log no
error, also with the browser offline; (5) fit the window at every width from
360 to 1920 px (one page, its window resized), like every other page of the site; (6) redraw, at each click, only
what the click changed. Screenshots at 390 and
1400 px go to ``_build/screenshots/site/``.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from lab_parity import SHARPEN, VALUES, draw_seed, play, sessions
from site_browser import LAB_PAGE, OVERFLOW, PROGRESS_SEEN, RECORD_PROGRESS, SCREENSHOTS, WINDOW_WIDTHS, PageLog, tab
from test_lab_parity import PLAY, first_difference, on_the_baseline_cpu

from grpo_core.bandit import BanditGRPO, GRPOConfig
from grpo_core.bandit.env import ACTION_NAMES
from grpo_core.lab.spec import KNOBS

LAB_TAB = {"width": 1400, "height": 1000}


@pytest.fixture(scope="module")
def lab_tab(browser, lab_cache):
    """One tab for the lab's tests, as a reader keeps one: the page's scripts stay cached between its loads."""
    with tab(browser, LAB_TAB["width"], LAB_TAB["height"], context=lab_cache) as page:
        yield page, page.context


@pytest.fixture
def lab_page(lab_tab, site):
    """The §11 page loaded afresh (a new lab at step 0), with a log of what it does while the test plays."""
    page, context = lab_tab
    context.set_offline(False)
    log = PageLog(page)
    page.goto(site + LAB_PAGE, wait_until="load")
    page.wait_for_load_state("networkidle")  # before a test takes the browser offline
    page.wait_for_selector(".grpo-lab-live .grpo-lab-ledger li")
    yield page, log, context
    log.detach()
    context.set_offline(False)


def live(page):
    return page.locator(".grpo-lab-live")


def card(page, name: str) -> str:
    return live(page).locator(f".grpo-lab-{name} .grpo-card-value").inner_text().strip()


def ledger_top(page) -> str:
    return live(page).locator(".grpo-lab-ledger li").first.inner_text().strip()


SLOTS = """() => {
  const lab = document.querySelector('.grpo-lab-live').getBoundingClientRect();
  return ['warning', 'group', 'policy', 'curves', 'ledger', 'progress'].map((name) => {
    const box = document.querySelector(`.grpo-lab-live .grpo-lab-${name}`).getBoundingClientRect();
    return [name, box.left - lab.left, box.top - lab.top, box.width, box.height];
  });
}"""


def slots(page) -> list:
    """Where each view sits inside the live lab (offsets from the lab's corner, sizes)."""
    return page.evaluate(SLOTS)


def engine_logits(page) -> np.ndarray:
    return np.array(page.evaluate("() => GRPOLab.labs[0].run.logits"))


def test_the_page_engine_plays_grpo_core_sessions(lab_page, site):
    """The engine the built page loads (with the book's lab-spec.js) plays sessions as grpo_core does."""
    page, log, context = lab_page
    context.set_offline(True)
    drawn = sessions(5, seed=11)
    python = [play(entries) for entries in drawn]
    played = zip(drawn, python, page.evaluate(PLAY, [drawn, python]), on_the_baseline_cpu(drawn, python), strict=True)
    for entries, a, b, c in played:
        assert first_difference(a, b, c) is None, (entries[0], first_difference(a, b, c))
    log.assert_clean(site)


FIRST_LINES = (
    "from grpo_core.bandit import BanditGRPO, GRPOConfig\n\n"
    "run = BanditGRPO(seed=0, config=GRPOConfig(group_size=8, eps_low=0.2, beta=0.04, lr=1.0, inner_epochs=4, "
    "advantage='grpo'))"
)


def test_the_page_says_which_engine_runs_and_how_to_replay_it(lab_page, site):
    page, log, _ = lab_page
    lab = live(page)
    assert "JavaScript engine" in lab.locator(".grpo-lab-engine").inner_text()
    assert lab.locator(".grpo-lab-reproduce code").inner_text() == FIRST_LINES
    assert page.locator(".grpo-lab-noscript").count() == 0, "the no-JavaScript note is replaced by the lab"
    snapshot = page.locator(".cell_output .grpo-lab")
    snapshot.wait_for()
    assert snapshot.locator(".grpo-lab-views .grpo-lab-step .grpo-card-value").inner_text() == "5", (
        "the saved widget snapshot (five recorded steps) is drawn by the same view module"
    )
    log.assert_clean(site)


# Every label the live lab's progress bar shows (checked at each frame: the run takes one step a frame) until it
# shows ``done``; then the labels seen.
def test_every_control_of_the_live_lab_does_what_it_says(lab_page, site):
    page, log, context = lab_page
    context.set_offline(True)
    lab = live(page)
    assert card(page, "step") == "0" and card(page, "pB") == "0.250" and card(page, "mean") == "—"
    assert "No group yet" in lab.locator(".grpo-lab-group").inner_text()
    box = slots(page)

    lab.locator("button.grpo-lab-sample").click()
    assert card(page, "mean") != "—" and card(page, "clip") == "—"
    assert lab.locator(".grpo-lab-group .grpo-chip").count() == 8
    assert "sampled, not yet used" in lab.locator(".grpo-lab-group").inner_text()
    assert ledger_top(page).startswith("#2 sample G=8")
    chips = lab.locator(".grpo-lab-group .grpo-chips").inner_text()
    advantages = lab.locator(".grpo-lab-group td.grpo-pos, .grpo-lab-group td.grpo-neg").all_inner_texts()

    lab.locator(".grpo-lab-advantage button", has_text="Dr. GRPO").click()
    assert lab.locator(".grpo-lab-advantage button[aria-pressed=true]").inner_text() == "Dr. GRPO"
    assert "set advantage = Dr. GRPO" in ledger_top(page)
    assert lab.locator(".grpo-lab-group td.grpo-pos, .grpo-lab-group td.grpo-neg").all_inner_texts() != advantages
    lab.locator(".grpo-lab-advantage button", has_text="GRPO").first.click()

    lab.locator("button.grpo-lab-step").click()
    assert card(page, "step") == "1" and card(page, "pB") != "0.250" and card(page, "clip") != "—"
    assert "used by the last GRPO step" in lab.locator(".grpo-lab-group").inner_text()
    assert lab.locator(".grpo-lab-group .grpo-chips").inner_text() == chips, "the step used the group on screen"
    np.testing.assert_allclose(engine_logits(page), BanditGRPO(seed=0).run(1)[-1].logits, rtol=0, atol=1e-12)

    handle = lab.locator(".grpo-lab-group-size input")
    handle.focus()
    for _ in range(4):
        handle.press("ArrowLeft")
    assert lab.locator(".grpo-lab-group-size output").inner_text() == "4"
    entries = lab.locator(".grpo-lab-ledger li").all_inner_texts()
    assert entries[0] == "#5 set G = 4", entries  # 1 start, 2 sample, 3 advantage (toggled twice), 4 step
    assert sum("set G" in entry for entry in entries) == 1, "four key presses, one ledger entry"
    for name, value in (("eps-low", "0.1"), ("beta", "0.2"), ("lr", "0.5"), ("inner-epochs", "8")):
        lab.locator(f".grpo-lab-{name} input").fill(value)
    assert (
        lab.locator(".grpo-lab-reproduce code")
        .inner_text()
        .endswith("run.configure(group_size=4, eps_low=0.1, eps_high=None, beta=0.2, lr=0.5, inner_epochs=8)")
    )

    lab.locator(".grpo-lab-seed input").fill("3")
    lab.locator("button.grpo-lab-reset").click()
    assert card(page, "step") == "0" and card(page, "pB") == "0.250" and card(page, "mean") == "—"
    assert ledger_top(page).startswith("#") and "reset · seed 3" in ledger_top(page)
    assert not lab.locator(".grpo-lab-progress").is_visible()

    lab.locator(".grpo-lab-steps input").fill("30")
    page.evaluate(RECORD_PROGRESS, [".grpo-lab-live .grpo-lab-progress-label", "30 / 30 steps"])
    lab.locator("button.grpo-lab-run").click()
    seen = set(page.wait_for_function(PROGRESS_SEEN).json_value())
    assert any(label.endswith(" / 30 steps") and label != "30 / 30 steps" for label in seen), seen
    assert card(page, "step") == "30" and "run 30 steps (0 → 30)" in ledger_top(page)
    replay = BanditGRPO(seed=3, config=GRPOConfig(group_size=4, eps_low=0.1, beta=0.2, lr=0.5, inner_epochs=8))
    replay.run(30)
    np.testing.assert_allclose(engine_logits(page), replay.logits, rtol=0, atol=1e-12)
    assert lab.locator(".grpo-lab-curves polyline").count() == 6

    lab.locator(".grpo-lab-steps input").fill("500")
    lab.locator("button.grpo-lab-run").click()
    page.wait_for_function("() => GRPOLab.labs[0].run.history.length > 35")
    lab.locator("button.grpo-lab-run").click()  # Stop
    stopped = int(card(page, "step"))
    assert 35 < stopped < 530 and "run stopped after" in ledger_top(page)
    page.wait_for_timeout(200)
    assert int(card(page, "step")) == stopped, "a stopped run takes no more steps"

    lab.locator(".grpo-lab-beta input").fill("0")
    lab.locator(".grpo-lab-sharpen-action select").select_option("C")
    lab.locator("button.grpo-lab-sharpen").click()
    assert card(page, "pB") == "0.020" and "sharpen π onto C" in ledger_top(page)
    for _ in range(40):  # P(all four draws are C) = 0.78
        lab.locator("button.grpo-lab-sample").click()
        if lab.locator(".grpo-lab-warning .grpo-warning").count():
            break
    assert "No signal from this group" in lab.locator(".grpo-lab-warning").inner_text()
    assert slots(page) == box, "the banner, the group and the progress bar keep their slots: nothing below moved"
    log.assert_clean(site)


def test_no_request_while_playing_offline(lab_page, site):
    page, log, context = lab_page
    before = len(log.requests)
    context.set_offline(True)
    lab = live(page)
    for button in ("sample", "step", "reset", "sharpen", "step"):
        lab.locator(f"button.grpo-lab-{button}").click()
    assert card(page, "step") == "1"
    assert log.requests[before:] == [], "the lab fetched something while being played"
    log.assert_clean(site)


LAYOUT = """() => {
  const box = (selector) => document.querySelector(selector).getBoundingClientRect();
  const lab = box('.grpo-lab-live'), controls = box('.grpo-lab-live .grpo-lab-controls');
  const views = box('.grpo-lab-live .grpo-lab-views'), header = box('.bd-header');
  return { lab: [lab.left, lab.right], controls: [controls.right, controls.bottom],
           views: [views.left, views.top], header: [header.left, header.right] };
}"""


def test_the_lab_page_fits_every_width(lab_tab, site):
    """Opened at 1920 px (in the lab's tab, its window widened first), then the window narrowed through every width
    down to a small phone."""
    page, context = lab_tab
    context.set_offline(False)
    page.set_viewport_size({"width": max(WINDOW_WIDTHS), "height": 900})
    log = PageLog(page)
    try:
        page.goto(site + LAB_PAGE, wait_until="load")
        page.wait_for_selector(".grpo-lab-live .grpo-lab-ledger li")
        page.wait_for_selector(".cell_output .grpo-lab .grpo-lab-ledger li")
        for width in sorted(WINDOW_WIDTHS, reverse=True):
            page.set_viewport_size({"width": width, "height": 900})
            scroll, inner = page.evaluate(OVERFLOW)
            assert scroll <= inner, f"the §11 page scrolls sideways at {width} px ({scroll} > {inner})"
            layout = page.evaluate(LAYOUT)
            lab_width = layout["lab"][1] - layout["lab"][0]
            if lab_width < 900:  # always so below 900 px of window
                assert layout["controls"][1] <= layout["views"][1], f"{width} px: a narrow lab stacks its views"
            else:
                assert layout["controls"][0] <= layout["views"][0], f"{width} px: controls beside the views"
            if width >= 1280:
                assert lab_width >= 900, f"{width} px: a laptop screen has room for controls and views side by side"
            assert layout["header"][0] <= layout["lab"][0] and layout["header"][1] >= layout["lab"][1], (
                f"{width} px: the sticky header spans the lab"
            )
            if width in (390, 1920):
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                live(page).screenshot(path=str(SCREENSHOTS / f"lab-live-{width}.png"))
        log.assert_clean(site)
    finally:
        log.detach()
        page.set_viewport_size(LAB_TAB)


# The banner's HTML for the longest texts it can hold (no signal in a group of the largest G, with and without a KL
# term, sampled and after a step that overshot; signal; each with the longest k3 weight it writes), drawn by a fresh
# mount of the page's view; then, in a views box of each width in turn, how much
# taller than its slot's reserved height (min-height) the slot and its text are.
BANNER_OVERFLOW = """([widths, largest]) => {
  const state = GRPOLab.labs[0].state(), table = state.rewards;
  const group = (actions) => ({ actions, rewards: actions.map((a) => table[a]), advantages: actions.map(() => 0),
    ratios: null, clipped: null, eps: null });
  const silent = group(Array(largest).fill(1)), mixed = group(Array.from({ length: largest }, (_, i) => i % 2));
  const huge = { k3_weight: 999999.9, k3_answer: 1 }; // the longest k3 weight the lab writes out
  const stepped = { ...silent, ...huge, ratios: silent.actions.map(() => 1), clipped: silent.actions.map(() => false),
    eps: 0.2, beta: 0.995, kl_before: 1.386, outcome: "away" };
  const variants = [
    { ...state, config: { ...state.config, beta: 0.995 }, group: { ...silent, ...huge } },
    { ...state, config: { ...state.config, beta: 0 }, group: silent },
    { ...state, config: { ...state.config, beta: 0.995 }, group: stepped, stats: { ...state.stats, kl: 1.386 } },
    { ...state, config: { ...state.config, beta: 0.995 }, group: { ...mixed, ...huge },
      stats: { ...state.stats, std: 0.35 } },
  ];
  const lab = document.createElement('div'), views = document.createElement('div');
  const slot = document.createElement('div');
  lab.className = 'grpo-lab';
  views.className = 'grpo-lab-views';
  slot.className = 'grpo-lab-warning';
  views.style.flex = 'none';
  lab.append(views);
  views.append(slot);
  document.body.append(lab);
  const found = [];
  for (const variant of variants) {
    const fresh = GRPOLab.view.mount(document.createElement('div'), GRPOLab.spec);
    fresh.update(variant);
    slot.innerHTML = fresh.el.querySelector('.grpo-lab-warning').innerHTML;
    for (const width of widths) {
      views.style.width = `${width}px`;
      const reserved = parseFloat(getComputedStyle(slot).minHeight) || slot.clientHeight;
      const text = slot.firstElementChild;
      const over = Math.max(slot.getBoundingClientRect().height - reserved, text.scrollHeight - text.clientHeight);
      if (over > 0.5) found.push([width, Math.round(over), text.textContent.slice(0, 40)]);
    }
  }
  lab.remove();
  return found;
}"""


def test_the_warning_banner_keeps_its_height_at_every_width(lab_page, site):
    """The banner's slot holds each of its texts, the longest included (no signal in a group of G = 64, β > 0),
    in the height it reserves, at every width the lab's views can take (the lab is at most 1180 px wide: 854 px
    of views beside the controls, 900 px below them): no text is cut off, and nothing below the banner moves
    when it comes or goes. (In JupyterLab, at 855 px, the banner's second line was cut off.)"""
    page, log, _ = lab_page
    largest = next(knob for knob in KNOBS if knob.name == "group_size").maximum
    assert page.evaluate(BANNER_OVERFLOW, [list(range(240, 901)), largest]) == [], "(width, px too tall, text)"
    log.assert_clean(site)


def test_screenshot_of_the_live_lab_at_1400_px(lab_page, site):
    page, log, _ = lab_page
    lab = live(page)
    lab.locator("button.grpo-lab-run").click()
    page.wait_for_function("() => GRPOLab.labs[0].run.history.length >= 30 && !GRPOLab.labs[0].running")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    lab.screenshot(path=str(SCREENSHOTS / "lab-live-1400.png"))
    assert lab.bounding_box()["width"] <= 1400
    log.assert_clean(site)


def test_without_javascript_the_page_says_where_the_snapshot_is(browser, site):
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(site + LAB_PAGE, wait_until="load")
        note = page.locator(".grpo-lab-live .grpo-lab-noscript")
        assert note.is_visible() and "snapshot" in note.inner_text()
        assert page.locator(".cell_output img").count() >= 1, "the snapshot figure of the recorded run"
        readout = "".join(page.locator(".cell_output pre").all_inner_texts())
        assert "P(B) 0.687" in readout, "the readout of the recorded run"
    finally:
        context.close()


def assert_same_state(python, page, path="state"):
    """Equal structure and text; numbers equal up to the last bits of a transcendental function."""
    if isinstance(python, dict):
        assert set(python) == set(page), f"{path}: keys {set(python) ^ set(page)}"
        for key in python:
            assert_same_state(python[key], page[key], f"{path}.{key}")
    elif isinstance(python, list | tuple):
        assert len(python) == len(page), f"{path}: length {len(python)} != {len(page)}"
        for i, (a, b) in enumerate(zip(python, page, strict=True)):
            assert_same_state(a, b, f"{path}[{i}]")
    elif isinstance(python, float) and not isinstance(page, bool):
        assert page == pytest.approx(python, rel=0, abs=1e-12), path
    else:
        assert python == page, path


def test_the_site_lab_and_the_jupyterlab_lab_show_the_same_state(lab_page, site):
    """The same clicks in the page and on grpo_core.lab.BanditLab give the same state, ledger included."""
    from grpo_core.lab import BanditLab

    page, log, _ = lab_page
    lab = live(page)
    reference = BanditLab(seed=0, frame_delay=0)
    click = lambda name: lab.locator(f"button.grpo-lab-{name}").click()  # noqa: E731
    click("sample"), reference.sample()
    click("step"), reference.step()
    click("step"), reference.step()
    lab.locator(".grpo-lab-advantage button", has_text="RLOO").click()
    reference.advantage = "rloo"
    click("sample"), reference.sample()
    click("step"), reference.step()
    lab.locator(".grpo-lab-group-size input").fill("5")
    reference.group_size = 5
    click("step"), reference.step()
    lab.locator(".grpo-lab-steps input").fill("3")
    click("run")
    page.wait_for_function("() => !GRPOLab.labs[0].running && GRPOLab.labs[0].run.history.length === 7")
    reference.run_steps(3)
    lab.locator(".grpo-lab-sharpen-action select").select_option("C")
    click("sharpen"), reference.sharpen("C", 0.94)
    click("step"), reference.step()
    python, in_page = reference.state(), page.evaluate("() => GRPOLab.labs[0].state()")
    assert python.pop("engine").startswith("Python") and in_page.pop("engine").startswith("JavaScript")
    assert_same_state(python, in_page)
    assert len(in_page["ledger"]) == 12 and in_page["steps"] == 8
    log.assert_clean(site)


# What a reader sees of the site lab's header and controls, in order: each heading and text line, each control's
# label with its value or choices (a toggle's buttons, a select's options), each button's label with its tooltip.
SITE_CONTROLS = """() => {
  const lab = document.querySelector('.grpo-lab-live');
  const seen = [];
  const walk = (e) => {
    if (e.matches('.grpo-header-title, .grpo-header-sub, .grpo-section, .grpo-note')) seen.push(e.textContent);
    else if (e.matches('button')) seen.push(e.title ? `${e.textContent} | ${e.title}` : e.textContent);
    else if (e.matches('input')) {  // a slider's value as its readout shows it
      const shown = e.type === 'range' ? e.parentElement.querySelector('output').textContent : e.value;
      seen.push(`${e.closest('label').querySelector('span').textContent} = ${shown}`);
    }
    else if (e.matches('select')) {
      seen.push(`${e.closest('label').querySelector('span').textContent} = ${e.selectedOptions[0].textContent}`);
      seen.push([...e.options].map((o) => o.textContent).join(' / '));
    } else [...e.children].forEach(walk);
  };
  [lab.querySelector('.grpo-lab-header'), lab.querySelector('.grpo-lab-controls')].forEach(walk);
  return seen;
}"""


def widget_controls(lab) -> list[str]:
    """SITE_CONTROLS of a grpo_core.lab.BanditLab: what its ipywidgets show, in the same order and form."""
    import ipywidgets as widgets

    seen = []

    def walk(widget):
        if isinstance(widget, widgets.Box):
            for child in widget.children:
                walk(child)
        elif isinstance(widget, widgets.HTML):
            seen.extend(re.findall(r"<div[^>]*>(.*?)</div>", widget.value.replace("&amp;", "&")))
        elif isinstance(widget, widgets.Button):
            seen.append(f"{widget.description} | {widget.tooltip}" if widget.tooltip else widget.description)
        elif isinstance(widget, widgets.ToggleButtons):
            seen.extend(widget._options_labels)
        elif isinstance(widget, widgets.Dropdown):
            seen.append(f"{widget.description} = {widget.label}")
            seen.append(" / ".join(widget._options_labels))
        elif isinstance(widget, widgets.FloatSlider):
            seen.append(f"{widget.description} = {widget.value:{widget.readout_format}}")
        else:
            seen.append(f"{widget.description} = {widget.value}")

    header, body = lab.widget.children
    walk(header)
    walk(body.children[0])  # the controls, beside the views
    return seen


def test_both_labs_show_the_controls_of_the_one_definition(lab_page, site):
    """The site lab and grpo_core.lab.BanditLab, both built from grpo_core.lab.spec, show the same header, section
    headings, labels, starting values, choices, buttons and tooltips, and note, in the same order."""
    from grpo_core.lab import BanditLab

    page, log, _ = lab_page
    in_page, python = page.evaluate(SITE_CONTROLS), widget_controls(BanditLab(seed=0, frame_delay=0))
    assert in_page == python
    assert len(python) == 27 and python[0] == "GRPO bandit lab" and python[-1].startswith("Small G and a sharp π")
    log.assert_clean(site)


REPLAY_SESSIONS = 6
REPLAY_ACTIONS = 30


def random_click(page, rng: np.random.Generator) -> None:
    """One random use of the live lab's own controls: a button, a slider, the toggle, the seed box, Sharpen π."""
    lab = live(page)
    roll = rng.random()
    if roll < 0.25:
        lab.locator("button.grpo-lab-step").click()
    elif roll < 0.4:
        lab.locator("button.grpo-lab-sample").click()
    elif roll < 0.5:
        lab.locator(".grpo-lab-steps input").fill(str(rng.integers(1, 6)))
        lab.locator("button.grpo-lab-run").click()
        page.wait_for_function("() => !GRPOLab.labs[0].running")
    elif roll < 0.75:
        knob = KNOBS[rng.integers(len(KNOBS))]
        value = VALUES[knob.name][rng.integers(len(VALUES[knob.name]))]
        if knob.options is not None:
            label = dict((v, t) for t, v in knob.options)[value]
            lab.locator(".grpo-lab-advantage button", has_text=label).first.click()
        else:
            lab.locator(f".grpo-lab-{knob.name.replace('_', '-')} input").fill(str(value))
    elif roll < 0.9:
        onto = ["top (argmax π)", *ACTION_NAMES][rng.integers(len(ACTION_NAMES) + 1)]
        lab.locator(".grpo-lab-sharpen-action select").select_option(label=onto)
        lab.locator(".grpo-lab-sharpen-prob input").fill(str(rng.choice(SHARPEN)))
        lab.locator("button.grpo-lab-sharpen").click()
    else:
        lab.locator(".grpo-lab-seed input").fill(draw_seed(rng))
        lab.locator("button.grpo-lab-reset").click()


FREE_RUN_TOLERANCE = 1e-9


def test_the_printed_python_replays_any_session_clicked_through_the_page(lab_page, site):
    """Random sessions through the page's own controls; the Python the page prints, run, draws the same groups and
    ends on the same logits.

    Python and the page run freely here, each from its own last step, so the last-bit differences of their ``exp``
    (which tests/browser/test_lab_parity.py bounds, step by step from the same state, by 1e-12 of their size or by what
    grpo_core's own results differ by on two CPUs) compound over a session; at
    lr 3.6 and 14 inner epochs, logits near 6e5 ended 2e-11 of their size apart. The draws must be identical.
    """
    page, log, context = lab_page
    context.set_offline(True)
    rng = np.random.default_rng(7)
    seen = set()
    for _ in range(REPLAY_SESSIONS):
        for _ in range(REPLAY_ACTIONS):
            random_click(page, rng)
        code = live(page).locator(".grpo-lab-reproduce code").inner_text()
        seen.update(line.split("(")[0] for line in code.splitlines()[3:])
        namespace = {}
        exec(code, namespace)  # the printed replay, as a reader would paste it
        run = namespace["run"]
        in_page = page.evaluate(
            "() => { const r = GRPOLab.labs[0].run; return [r.history.map((s) => s.actions), r.logits]; }"
        )
        assert [step.actions.tolist() for step in run.history] == in_page[0], code
        scale = max(1.0, np.abs(run.logits).max())
        assert np.abs(run.logits - np.array(in_page[1])).max() <= FREE_RUN_TOLERANCE * scale, code
    assert {"run.sample", "run.step", "run.run", "run.configure", "run.set_policy"} <= seen, seen
    log.assert_clean(site)


# What a redraw wrote, slot by slot. ``REDRAWS(selector)`` watches the views under ``selector``; then each call of
# ``__redraws()`` returns what was written since the last one: the mutation records, the nodes created, the slots
# touched and the waste, i.e. a write that left its node as it was (an attribute or a text set to the value it had,
# an element re-created identical to one removed in the same redraw). Also used by bench/bench_lab_site.py and
# bench/bench_lab_jupyterlab.py.
REDRAWS = """(selector) => {
  const views = document.querySelector(selector);
  const SLOTS = [['card', '.grpo-lab-card'], ['warning', '.grpo-lab-warning'], ['policy', '.grpo-lab-policy'],
    ['group', '.grpo-lab-group'], ['curve', '.grpo-curve'], ['ledger', '.grpo-lab-ledger'],
    ['progress', '.grpo-lab-status'], ['engine', '.grpo-lab-engine'], ['replay', '.grpo-lab-reproduce code'],
    ['summary', '.grpo-lab-summary']];
  const name = (slot) => {
    const [kind, selector] = SLOTS.find(([, selector]) => slot.matches(selector));
    if (kind === 'card') return `card ${slot.classList[1].replace('grpo-lab-', '')}`;
    return kind === 'curve' ? `curve ${[...views.querySelectorAll(selector)].indexOf(slot)}` : kind;
  };
  const slotOf = (node) => {
    const element = node.nodeType === 1 ? node : node.parentElement;
    const slot = element && element.closest(SLOTS.map(([, selector]) => selector).join(', '));
    return slot && views.contains(slot) ? name(slot) : 'outside the slots';
  };
  window.__slots = () => Object.fromEntries([...views.querySelectorAll(SLOTS.map(([, s]) => s).join(', '))]
    .map((slot) => [name(slot), slot.outerHTML]));
  const size = (node) => 1 + [...node.childNodes].reduce((n, child) => n + size(child), 0);
  const pending = [];
  const observer = new MutationObserver((records) => pending.push(...records));
  observer.observe(views, { subtree: true, childList: true, characterData: true, attributes: true,
    attributeOldValue: true, characterDataOldValue: true });
  window.__redraws = () => {
    const records = [...pending.splice(0), ...observer.takeRecords()];
    const removed = new Map();  // parent -> outerHTML -> how many elements so written were removed from under it
    const kinds = new Map();  // parent -> the tag names of the elements removed from right under it
    for (const record of records) {
      if (!removed.has(record.target)) {
        removed.set(record.target, new Map());
        kinds.set(record.target, new Set());
      }
      const under = removed.get(record.target);
      for (const node of record.removedNodes)
        if (node.nodeType === 1) {
          kinds.get(record.target).add(node.localName);
          for (const e of [node, ...node.querySelectorAll('*')])
            under.set(e.outerHTML, (under.get(e.outerHTML) || 0) + 1);
        }
    }
    const waste = [];
    // the largest subtrees of an added node that were removed, as they are, from under the same parent; but not
    // inside an element that took the place of one of another kind (the warning's <div> and the signal's <p>):
    // what they share could only have been kept by moving it, a layout shift
    const again = (node, under, where, kind = null) => {
      if (node.nodeType !== 1) return;
      const count = under.get(node.outerHTML);
      if (count) {
        under.set(node.outerHTML, count - 1);
        const what = `<${node.localName} class="${node.getAttribute('class') || ''}">`;
        waste.push(`${where}: ${what} of ${size(node)} nodes re-created unchanged`);
      } else if (!kind || kind.has(node.localName)) for (const child of node.children) again(child, under, where);
    };
    let created = 0;
    for (const record of records) {
      const where = slotOf(record.target);
      if (record.type === 'attributes') {
        if (record.target.getAttribute(record.attributeName) === record.oldValue)
          waste.push(`${where}: ${record.attributeName}="${record.oldValue}" written unchanged`);
      } else if (record.type === 'characterData') {
        if (record.target.data === record.oldValue) waste.push(`${where}: text "${record.oldValue}" written unchanged`);
      } else
        for (const node of record.addedNodes) {
          created += size(node);
          again(node, removed.get(record.target), where, kinds.get(record.target));
        }
    }
    const touched = [...new Set(records.map((record) => slotOf(record.target)))].sort();
    return { records: records.length, created, waste, touched };
  };
}"""

# Each redraw of the live lab, as it happens: what it wrote (REDRAWS), the slots whose HTML it changed, and whether
# the views then equal the views a fresh mount of the page's lab-view.js draws from the same state (the summary,
# which stays silent during a run, aside), compared with attributes in any order (``unlike``: where they part); and
# the class of the warning's banner.
EACH_REDRAW = """async () => {
  // the page's own view module, in a scope of its own: the §11 widget snapshot runs the copy stored in the notebook
  const source = await (await fetch(document.querySelector('script[src*="lab-view.js"]').src)).text();
  const own = { GRPOLab: { controller: GRPOLab.controller } }; // the view formats with the one controller's fixed
  new Function('globalThis', source)(own);
  const lab = GRPOLab.labs[0], update = lab.view.update.bind(lab.view);
  const canonical = (node) => {
    if (node.nodeType === 3) return JSON.stringify(node.data);
    if (node.nodeType !== 1 || node.classList.contains('grpo-lab-summary')) return '';
    const attributes = [...node.attributes].map((a) => ` ${a.name}=${JSON.stringify(a.value)}`).sort().join('');
    return `<${node.localName}${attributes}>${[...node.childNodes].map(canonical).join('')}</${node.localName}>`;
  };
  window.__redrawn = [];
  lab.view.update = (state) => {
    const before = __slots();
    __redraws();
    update(state);
    const after = __slots();
    const fresh = own.GRPOLab.view.mount(document.createElement('div'), GRPOLab.spec);
    fresh.update(state);
    const [drawn, anew] = [canonical(lab.view.el), canonical(fresh.el)];
    let at = 0;
    while (at < drawn.length && drawn[at] === anew[at]) at++;
    __redrawn.push({ ...__redraws(), changed: Object.keys(after).filter((slot) => before[slot] !== after[slot]).sort(),
      banner: lab.view.el.querySelector('.grpo-lab-warning > *').className,
      unlike: drawn === anew ? null : [drawn, anew].map((html) => html.slice(Math.max(0, at - 80), at + 80)) });
  };
}"""
REDRAW_CLICKS = 30
SILENT_SAMPLES = 12  # of G = 2 on a π sharpened onto C at 0.94: about 88% of them have no signal


def test_a_click_rewrites_only_what_it_changed(lab_page, site):
    """Each redraw writes only what changed: no attribute or text set to the value it had, no element re-created as
    it was (a ledger entry, a chart's frame, the table's head), no write in a slot whose HTML stays the same (a
    step that keeps the warning leaves it alone); and what it leaves equals a fresh drawing of the same state.
    Over a seeded random session of the lab's own controls (the whole redraw of a run, frame by frame, too), then
    samples of G = 2 from a sharp π, where the no-signal warning comes and goes."""
    page, log, _ = lab_page
    page.evaluate(REDRAWS, ".grpo-lab-live .grpo-lab-views")
    page.evaluate(EACH_REDRAW)
    redrawn = lambda: page.evaluate("() => __redrawn.splice(0)")  # noqa: E731
    live(page).locator("button.grpo-lab-sample").click()
    [sample] = redrawn()
    assert {"group", "ledger", "replay", "summary", "card mean"} <= set(sample["touched"]), sample
    assert not any(slot.startswith(("policy", "curve", "card step", "progress")) for slot in sample["touched"]), sample
    live(page).locator("button.grpo-lab-step").click()
    [step] = redrawn()
    assert {"policy", "curve 0", "curve 4", "card step"} <= set(step["touched"]), step
    rng = np.random.default_rng(5)
    for _ in range(REDRAW_CLICKS):
        random_click(page, rng)
    lab = live(page)
    lab.locator(".grpo-lab-group-size input").fill("2")
    lab.locator(".grpo-lab-sharpen-action select").select_option("C")
    lab.locator(".grpo-lab-sharpen-prob input").fill("0.94")
    lab.locator("button.grpo-lab-sharpen").click()
    for _ in range(SILENT_SAMPLES):
        lab.locator("button.grpo-lab-sample").click()
    every = [sample, step, *redrawn()]
    assert len(every) > REDRAW_CLICKS + SILENT_SAMPLES
    banners = set(itertools.pairwise(r["banner"] for r in every))
    assert {("grpo-warning", "grpo-signal"), ("grpo-signal", "grpo-warning")} <= banners, "the warning comes and goes"
    assert [r["waste"] for r in every if r["waste"]] == [], "writes that changed nothing"
    assert [(r["touched"], r["changed"]) for r in every if not set(r["touched"]) <= set(r["changed"])] == [], (
        "a slot written whose HTML stayed the same: (touched, changed)"
    )
    assert [r["unlike"] for r in every if r["unlike"]] == [], "the views differ from a fresh drawing of the same state"
    assert any("policy" in r["changed"] and "warning" not in r["changed"] for r in every), "no step kept the warning"
    log.assert_clean(site)


def test_a_step_that_diverges_stops_the_run_and_says_why(lab_page, site):
    """The engine's Diverged (here thrown at the third step) ends *Run N steps* with Python's message, θ kept."""
    page, log, _ = lab_page
    lab = live(page)
    page.evaluate("""() => {
      const run = GRPOLab.labs[0].run, step = run.step.bind(run);
      run.step = () => (run.history.length === 2 ? (run.pending = null, run.throwDiverged()) : step());
      run.throwDiverged = () => { throw run.diverged(); };
    }""")
    lab.locator(".grpo-lab-steps input").fill("10")
    lab.locator("button.grpo-lab-run").click()
    page.wait_for_function("() => !GRPOLab.labs[0].running")
    entries = lab.locator(".grpo-lab-ledger li").all_inner_texts()
    assert "step 3: the update overflowed the logits (lr=1.0 is likely too large; try lr <= 0.1)" in entries[1]
    assert "run stopped after 2 of 10 steps (0 → 2)" in entries[0] and card(page, "step") == "2"
    assert (
        "except Diverged as error:  # step 3: the update overflowed"
        in lab.locator(".grpo-lab-reproduce code").inner_text()
    )
    log.assert_clean(site)
