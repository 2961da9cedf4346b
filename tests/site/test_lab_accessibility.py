"""The live lab of the built §11 page for a screen reader and a keyboard, in headless Chromium.

After three GRPO steps the page has no WCAG 2.1 A/AA violation (axe-core, light and dark, 1280 and 390 px: the
audit of ``test_site.py``, with the lab's group table, chips and curves filled in). A step changes, once, a polite
live region whose text, as the browser's accessibility tree exposes it, names the new probabilities of the four
answers, the group's mean reward and advantages, the clip fraction and the KL; the charts are named with their
numbers; every control has a name; a slider moved with the keyboard says its value once. The lab's own text is 12
px or more, and the page in dark mode is saved as a screenshot under ``_build/screenshots/site/`` for a person to
look at.
"""

from __future__ import annotations

import re

import pytest
from site_browser import LAB_PAGE, SCREENSHOTS, tab
from test_site import NARROW, audit

LIVE = ".grpo-lab-live"


@pytest.fixture(scope="module", name="tab")
def one_tab(browser, lab_cache):
    """One tab for these tests, as a reader keeps one."""
    with tab(browser, 1280, 1000, context=lab_cache) as page:
        yield page


def open_lab(page, site):
    page.goto(site + LAB_PAGE, wait_until="load")
    page.wait_for_selector(f"{LIVE} .grpo-lab-ledger li")


def take_steps(page, steps: int = 3) -> None:
    for _ in range(steps):
        page.locator(f"{LIVE} button.grpo-lab-step").click()


def test_axe_finds_no_wcag_violation_in_the_lab_after_three_steps(tab, site):
    found = audit(tab, site, LAB_PAGE, before=take_steps)
    assert tab.locator(f"{LIVE} .grpo-lab-step .grpo-card-value").inner_text() == "3", "the audit saw three steps"
    violations = {f"{scheme} {width}px": rules for (scheme, width), rules in found.items() if rules}
    assert violations == {}, "axe-core's violations: {rule: [(element, what fails)]}, by colour scheme and width"


# Each change of the text of a live region of the lab (an explicit aria-live, or a role that is live by default:
# status, alert, log, and <output>, whose role is status), recorded as it happens: [region's class, new text]. A
# region hidden from assistive technology (aria-hidden) says nothing.
WATCH = """() => {
  window.spoken = [];
  const live = ':is([aria-live], [role=status], [role=alert], [role=log], output)';
  const shown = ':not([aria-hidden=true], [aria-hidden=true] *)';
  for (const region of document.querySelectorAll(`.grpo-lab-live ${live}${shown}`)) {
    new MutationObserver(() => window.spoken.push([region.className, region.textContent]))
      .observe(region, { childList: true, characterData: true, subtree: true });
  }
}"""
SUMMARY = "grpo-lab-summary grpo-sr-only"


def status_text(page) -> str:
    """The lab's summary as the accessibility tree exposes it: a polite status whose text is its content."""
    status = page.locator(LIVE).get_by_role("status").and_(page.locator(".grpo-lab-summary"))
    assert status.count() == 1
    assert status.get_attribute("aria-live") == "polite"
    return status.inner_text()


def test_a_step_is_announced_once_with_the_new_probabilities(tab, site):
    open_lab(tab, site)
    lab = tab.locator(LIVE)
    tab.evaluate(WATCH)
    lab.locator("button.grpo-lab-step").click()
    probs = tab.evaluate("() => GRPOLab.labs[0].run.probs")
    said = status_text(tab)
    for name, p in zip("ABCD", probs, strict=True):
        assert f"{name} {p:.2f}" in said, f"the summary names P({name}) = {p:.2f}: {said!r}"
    assert re.search(r"mean reward \d\.\d{3}", said) and "Clip fraction" in said and "KL" in said, said
    assert re.search(r"Advantages: ([A-D] ×\d+ [+-]?\d\.\d\d(, )?)+\.", said) or "No signal" in said, said
    assert tab.evaluate("() => window.spoken") == [[SUMMARY, said]], "one announcement per click"

    lab.locator(".grpo-lab-steps input").fill("20")
    assert tab.evaluate("() => window.spoken")[1:] == [], "a control that changes nothing said is not announced"

    tab.evaluate("() => { window.spoken = []; }")
    lab.locator("button.grpo-lab-run").click()
    tab.wait_for_function(
        "() => document.querySelector('.grpo-lab-live .grpo-lab-progress-label').textContent === '20 / 20 steps'"
    )
    spoken = tab.evaluate("() => window.spoken")
    assert [region for region, _ in spoken] == [SUMMARY], "a run is announced once, at its end"
    assert spoken[0][1].startswith("Step 21."), spoken


@pytest.mark.parametrize("slider", ["ε clip", "π(onto)"])
def test_a_slider_moved_with_the_keyboard_says_its_value_once(tab, site, slider):
    """The slider says its value itself (as its readout shows it); its readout beside it is not a second live
    region (an <output> is one by default) that would say the value again."""
    open_lab(tab, site)
    tab.evaluate(WATCH)
    control = tab.locator(LIVE).get_by_role("slider", name=slider, exact=True)
    control.press("ArrowRight")
    shown = control.locator("xpath=following-sibling::output").inner_text()
    assert tab.evaluate("() => window.spoken") == [], "no live region speaks for the slider"
    assert control.get_attribute("aria-valuetext") == shown, "the slider says what its readout shows"


def test_the_titles_of_each_lab_are_headings(tab, site):
    """What looks like a heading is one (WCAG 1.3.1), so that a screen reader can jump from part to part: in the
    live lab and in the snapshot of the JupyterLab lab, the lab's title is a heading one level below the page's
    section (an h2) and the titles of its groups of controls and of its views one level below that."""
    open_lab(tab, site)
    take_steps(tab, 1)
    labs = tab.locator(".grpo-lab")
    assert labs.count() == 2, "the live lab and the snapshot"
    for k in range(labs.count()):
        lab = labs.nth(k)
        titles = lab.locator(".grpo-section, .grpo-group-title").all_inner_texts()
        assert len(titles) >= 9, titles
        assert lab.get_by_role("heading", level=3).all_inner_texts() == ["GRPO bandit lab"]
        assert lab.get_by_role("heading", level=4).all_inner_texts() == titles


def test_the_snapshot_says_its_controls_do_nothing(tab, site):
    """On the site the snapshot of the JupyterLab lab has no kernel: its buttons, sliders and fields do nothing. A
    screen reader says they are unavailable, and Tab passes them by; the live lab's controls are available."""
    open_lab(tab, site)
    snapshot = tab.locator(".grpo-lab.jupyter-widgets-disconnected")
    snapshot.get_by_role("slider").first.wait_for()
    for role, least in (("button", 7), ("slider", 6), ("spinbutton", 1), ("textbox", 1), ("combobox", 1)):
        assert snapshot.get_by_role(role).count() >= least, role
        assert snapshot.get_by_role(role, disabled=False).count() == 0, f"a {role} of the snapshot says it works"
        assert tab.locator(LIVE).get_by_role(role, disabled=True).count() == 0, f"a {role} of the live lab says not"
    controls = "(lab) => [...lab.querySelectorAll(':is(button, input, select, [role=slider])')]"
    assert snapshot.evaluate(f"{controls}.filter((e) => e.tabIndex >= 0).length") == 0, "Tab stops on the snapshot"


def test_the_charts_and_controls_have_names_that_carry_their_numbers(tab, site):
    open_lab(tab, site)
    lab = tab.locator(LIVE)
    curves = lab.locator(".grpo-curve svg")
    at_start = [curves.nth(i).get_attribute("aria-label") for i in range(curves.count())]
    assert [label for label in at_start if not re.search(r"over 0 steps: now -?\d\.\d{3}\.$", label)] == [
        "Learning curve of clip fraction (of the group): no GRPO step yet."
    ], at_start
    take_steps(tab, 1)
    probs = tab.evaluate("() => GRPOLab.labs[0].run.probs")
    policy = lab.locator(".grpo-lab-policy svg").get_attribute("aria-label")
    assert all(f"{name} {p:.2f}" in policy for name, p in zip("ABCD", probs, strict=True)), policy
    curves = lab.locator(".grpo-curve svg")
    labels = [curves.nth(i).get_attribute("aria-label") for i in range(curves.count())]
    assert len(labels) == 5 and len(set(labels)) == 5, labels
    assert all(re.search(r"now -?\d\.\d{3}\.$", label) for label in labels), labels
    unnamed = tab.evaluate("""() => [...document.querySelectorAll(
        '.grpo-lab-live input, .grpo-lab-live select, .grpo-lab-live button, .grpo-lab-live progress')]
      .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim()
        && !e.getAttribute('aria-labelledby'))
      .map((e) => e.outerHTML.slice(0, 80))""")
    assert unnamed == [], "controls without a name"
    groups = lab.locator("[role=group]")
    assert groups.count() and all(groups.nth(i).get_attribute("aria-label") for i in range(groups.count())), (
        "a group of controls without a name"
    )


LAB_TEXT_SIZES = """() => [...document.querySelectorAll('.grpo-lab *')]
  .filter((e) => [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim()))
  .filter((e) => e.getClientRects().length && !e.closest('svg, .grpo-sr-only, sub, sup'))
  .map((e) => [e.textContent.trim().slice(0, 30), parseFloat(getComputedStyle(e).fontSize)])"""
MIN_LAB_TEXT_PX = 12


@pytest.mark.parametrize("width", [1280, NARROW])
def test_the_lab_text_is_12_px_or_more(tab, site, width):
    """The lab's HTML text, its sub- and superscripts aside as in any typeset formula (its charts are figures:
    test_site.py holds their text to 9 px)."""
    tab.set_viewport_size({"width": width, "height": 1000})
    try:
        open_lab(tab, site)
        sizes = tab.evaluate(LAB_TEXT_SIZES)
    finally:
        tab.set_viewport_size({"width": 1280, "height": 1000})
    assert len(sizes) > 50, "the live lab and the snapshot were measured"
    small = sorted({(text, px) for text, px in sizes if px < MIN_LAB_TEXT_PX}, key=lambda s: s[1])
    assert small == [], f"lab text smaller than {MIN_LAB_TEXT_PX} px at {width} px"


@pytest.mark.parametrize("width", [1280, NARROW])
def test_screenshot_of_the_lab_in_dark_mode(tab, site, width):
    tab.emulate_media(color_scheme="dark")
    tab.set_viewport_size({"width": width, "height": 1000})
    try:
        open_lab(tab, site)
        take_steps(tab)
        assert tab.evaluate("() => document.documentElement.dataset.theme") == "dark"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        tab.locator(LIVE).screenshot(path=str(SCREENSHOTS / f"lab-live-dark-{width}.png"))
    finally:
        tab.emulate_media(color_scheme="null")
        tab.set_viewport_size({"width": 1280, "height": 1000})


def test_a_seed_the_reset_refuses_is_announced(tab, site):
    """Reset with a seed out of range changes nothing but the ledger: the live summary says the refusal, with the
    ledger's number, each time (a second refusal is a new entry, and said again)."""
    open_lab(tab, site)
    lab = tab.locator(LIVE)
    tab.evaluate(WATCH)
    lab.locator(".grpo-lab-seed input").fill("2**64")
    lab.locator("button.grpo-lab-reset").click()
    lab.locator("button.grpo-lab-reset").click()
    spoken = tab.evaluate("() => window.spoken")
    refusal = 'seed must be an integer from 0 to 18446744073709551615, got "2**64": nothing reset'
    assert [region for region, _ in spoken] == [SUMMARY, SUMMARY], spoken
    assert spoken[0][1].startswith("Ledger #2: " + refusal) and spoken[1][1].startswith("Ledger #3: " + refusal)
    lab.locator("button.grpo-lab-sample").click()
    assert "Ledger #" not in status_text(tab), "said once: the next click's summary is about that click"


PANEL_TITLE_CONTRAST = """() => {
  const rgb = (text) => text.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const luminance = (c) => {
    const [r, g, b] = c.map((v) => v / 255).map((v) => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  return [...document.querySelectorAll('.grpo-lab .grpo-panel-title tspan')].map((span) => {
    const panel = span.closest('svg').querySelector('.grpo-panel');
    const [a, b] = [luminance(rgb(getComputedStyle(span).fill)), luminance(rgb(getComputedStyle(panel).fill))];
    return [span.textContent, (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)];
  });
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_coloured_chart_titles_pass_aa_in_either_scheme(tab, site, scheme):
    """'group mean R' and 'V^π' on the reward chart, in the live lab and the snapshot: 4.5:1 on the chart (axe-core
    does not measure the text of an SVG)."""
    tab.emulate_media(color_scheme=scheme)
    try:
        open_lab(tab, site)
        tab.wait_for_function("(scheme) => document.documentElement.dataset.theme === scheme", arg=scheme)
        titles = tab.evaluate(PANEL_TITLE_CONTRAST)
    finally:
        tab.emulate_media(color_scheme="null")
    assert sorted({text for text, _ in titles}) == ["V^π", "group mean R"] and len(titles) == 4, titles
    assert [(text, round(ratio, 2)) for text, ratio in titles if ratio < 4.5] == []


def test_the_snapshot_does_not_look_live_and_its_sliders_say_what_they_show(tab, site):
    """On the site the stored lab has no kernel: its controls are grey, the pointer over them is not a hand, and a
    label above them says it is a snapshot; each of its sliders tells a screen reader what its readout shows (the
    learning rate 1.00, not 0.9999999999999999)."""
    open_lab(tab, site)
    snapshot = tab.locator(".grpo-lab.jupyter-widgets-disconnected")
    snapshot.get_by_role("slider").first.wait_for()
    look = snapshot.locator(".grpo-lab-controls").evaluate(
        """(controls) => ({
          filter: getComputedStyle(controls).filter,
          label: getComputedStyle(controls, '::before').content,
          cursors: [...new Set([...controls.querySelectorAll('button, input, [role=slider], select')]
            .map((e) => getComputedStyle(e).cursor))],
        })"""
    )
    assert look == {
        "filter": "grayscale(1)",
        "label": '"snapshot: run the notebook to play"',
        "cursors": ["not-allowed"],
    }
    live = tab.locator(LIVE).locator(".grpo-lab-controls")
    assert live.evaluate("(c) => getComputedStyle(c).filter") == "none", "the live lab keeps its colours"
    said = snapshot.evaluate(
        """(lab) => [...lab.querySelectorAll('.widget-slider')].map((slider) => [
          slider.querySelector('[role=slider]').getAttribute('aria-valuetext'),
          slider.querySelector('.widget-readout').textContent.trim(),
        ])"""
    )
    assert len(said) >= 6 and all(valuetext == shown for valuetext, shown in said), said
    assert ["1.00", "1.00"] in said, "the learning rate"
