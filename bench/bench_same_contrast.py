"""Whether SAME_CONTRAST (tests/test_site.py) may skip what it skips, and what that saves, in headless Chromium.

For each page, light and dark: SAME_CONTRAST's keys are given as groups, axe-core's color-contrast runs on every
element (as before SAME_CONTRAST), and every element of a group must get the outcome of the group's first
element (pass, incomplete or violation, with its contrast ratio and message), the one the audit checks. Then the
CPU time of Chromium for color-contrast on every element and on the unmarked ones (marking included). The machine's
load is printed: the CPU times grow with it. ``make book`` first.
Run: ``.venv/bin/python bench/bench_same_contrast.py [page.html ...]``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import psutil
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import test_site
from conftest import CHROMIUM_ARGS
from site_browser import serve_site

PAGES = (
    "_modules/grpo_core/lab/widget.html",
    "_modules/grpo_core/sequence/trl_bridge.html",
    "notebooks/06-clipped-surrogate-and-kl.html",
    "notebooks/09-failure-modes.html",
    "notebooks/10-token-level-grpo.html",
    "notebooks/13-from-companion-to-trl.html",
    "book/api/bandit.html",
    "book/api/sequence.html",
    "book/setup.html",
)
MARK = "if (seen.has(key)) { e.setAttribute('data-same-contrast', ''); marked++; } else seen.add(key);"
# SAME_CONTRAST with each element given its group (block and key) instead of a mark.
GROUPS = (
    test_site.SAME_CONTRAST.replace(MARK, "e.dataset.group = keys.indexOf(key) + 1 || keys.push(key);")
    .replace("const box = block", "const keys = []; block.dataset.block = ++blocks; const box = block")
    .replace("let marked = 0;", "let marked = 0, blocks = 0;")
)
CLEAR = """() => document.querySelectorAll('[data-group], [data-block], [data-same-contrast]').forEach((e) => {
  for (const name of ['data-group', 'data-block', 'data-same-contrast']) e.removeAttribute(name);
})"""
# Every element of a group gets the outcome of the group's first: [elements, groups, first differences].
SAME_OUTCOME = """async () => {
  const result = await axe.run(document, { runOnly: ['color-contrast'], elementRef: true });
  const outcome = new Map();
  for (const kind of ['passes', 'incomplete', 'violations']) {
    for (const n of result[kind].flatMap((rule) => rule.nodes)) {
      const data = (n.any[0] || {}).data || {};
      outcome.set(n.element, `${kind} ${data.contrastRatio ?? ''} ${data.messageKey ?? ''}`);
    }
  }
  const first = new Map(), differ = [];
  const elements = [...document.querySelectorAll('[data-group]')];
  for (const e of elements) {
    const group = e.closest('[data-block]').dataset.block + '/' + e.dataset.group;
    const seen = outcome.get(e) ?? 'not checked';
    if (!first.has(group)) first.set(group, seen);
    else if (first.get(group) !== seen) differ.push([first.get(group), seen, e.outerHTML.slice(0, 80)]);
  }
  return [elements.length, first.size, differ.slice(0, 5)];
}"""
UNMARK = (
    "() => document.querySelectorAll('[data-same-contrast]').forEach((e) => e.removeAttribute('data-same-contrast'))"
)


def chromium_cpu() -> float:
    total = 0.0
    for process in psutil.Process().children(recursive=True):
        try:
            if process.name().startswith("chrom"):
                times = process.cpu_times()
                total += times.user + times.system
        except psutil.Error:
            continue
    return total


def contrast_cpu(page, mark: bool) -> float:
    page.evaluate(UNMARK)
    start = chromium_cpu()
    if mark:
        page.evaluate(test_site.SAME_CONTRAST)
    page.evaluate(test_site.AXE_RUN, {"tags": test_site.WCAG_TAGS, "rules": "color-contrast"})
    return chromium_cpu() - start


def main(pages: list[str]) -> None:
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'page':46} {'scheme':6} {'elements':>8} {'groups':>6} {'differ':>6} {'all s':>6} {'first s':>7}")
    with sync_playwright() as playwright, serve_site() as site:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(300_000)
        for name in pages or PAGES:
            page.goto(site + name)
            test_site.settle(page)
            test_site.add_axe(page)
            for scheme in ("light", "dark"):
                page.emulate_media(color_scheme=scheme)
                page.wait_for_function(test_site.THEME_IS, arg=scheme)
                page.evaluate(CLEAR)
                page.evaluate(GROUPS)
                elements, groups, differ = page.evaluate(SAME_OUTCOME)
                page.evaluate(CLEAR)
                every, first = contrast_cpu(page, mark=False), contrast_cpu(page, mark=True)
                print(f"{name:46} {scheme:6} {elements:8} {groups:6} {len(differ):6} {every:6.2f} {first:7.2f}")
                for difference in differ:
                    print("    differs:", difference)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1:])
