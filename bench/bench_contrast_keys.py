"""Whether the site audit may decide a contrast key once (CONTRAST_KEYS, tests/site/test_site.py), checked on every
page.

On every page of the built site (those of the table of contents and the source listings), at 1280 and 390 px, light
and dark, axe-core's color-contrast runs on every element, and each element it measures (a pass or a violation, with
its contrast ratio) must be a text that CONTRAST_KEYS would mark, and every text of a key must get the same verdict
and ratio on every page and at both widths (in one colour scheme). Prints the keys of each scheme and every
disagreement; exits 1 on any. Then the Chromium CPU time of the audit of every page in one browser with the keys
kept from page to page (as a test worker does) and with each page audited alone. ``make book`` first; run it on an
idle machine (the CPU times grow with its load).
Run: ``.venv/bin/python bench/bench_contrast_keys.py [page.html ...]``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import psutil
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "site"))
import test_site
from conftest import CHROMIUM_ARGS
from site_browser import serve_site

# CONTRAST_KEYS marking every text it would check, known key or not, with its key as the mark's value.
EVERY_KEY = test_site.CONTRAST_KEYS.replace("if (known.has(key(e))) continue;", "").replace(
    "e.setAttribute('data-contrast-check', '');", "e.setAttribute('data-contrast-check', key(e));"
)
assert EVERY_KEY.count("key(e)") == test_site.CONTRAST_KEYS.count("key(e)"), "CONTRAST_KEYS changed: update EVERY_KEY"
# axe-core's color-contrast on every element: [[key or null, verdict with ratio]] of each element it measured.
MEASURED = """async () => {
  contrastAudit.mark();
  axe.configure({ rules: [{ id: 'color-contrast', selector: '*' }] });
  const result = await axe.run(document, { runOnly: ['color-contrast'], elementRef: true });
  const measured = [];
  for (const kind of ['passes', 'violations']) {
    for (const n of result[kind].flatMap((rule) => rule.nodes)) {
      const ratio = ((n.any[0] || {}).data || {}).contrastRatio;
      if (typeof ratio === 'number') measured.push([n.element.getAttribute('data-contrast-check'),
        `${kind} ${ratio}`, n.target.join(' ')]);
    }
  }
  return measured;
}"""


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


def verdicts(page, site: str, pages: list[str]) -> int:
    """Check the claim on ``pages``; print the keys and what disagrees; return the number of disagreements."""
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    wrong = 0
    for name in pages:
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(site + name)
        test_site.settle(page)
        page.add_script_tag(path=str(test_site.AXE))
        page.evaluate(EVERY_KEY, {})
        page.add_style_tag(content=test_site.NO_TRANSITIONS)
        page.evaluate(test_site.WATCH_THE_THEME, test_site.THEME_DEBOUNCE_MS)
        for width in test_site.AUDIT:
            page.set_viewport_size({"width": width, "height": 900})
            page.evaluate("() => window.themeSettled")
            for scheme in ("light", "dark"):
                page.emulate_media(color_scheme=scheme)
                page.wait_for_function(test_site.THEME_IS, arg=scheme)
                for key, verdict, target in page.evaluate(MEASURED):
                    where = f"{name} {width}px {target}"
                    if key is None:
                        print(f"  measured but not marked: {scheme} {where} ({verdict})")
                        wrong += 1
                    elif seen.setdefault((scheme, key), (verdict, where))[0] != verdict:
                        print(f"  one key, two verdicts: {scheme} {where} {verdict}; {seen[scheme, key]}")
                        wrong += 1
        page.emulate_media(color_scheme="null")
    for scheme in ("light", "dark"):
        print(f"{scheme}: {sum(1 for s, _ in seen if s == scheme)} keys measured")
    return wrong


def audit_cpu(browser, site: str, pages: list[str], *, keep: bool) -> float:
    """Chromium's CPU seconds for the audit of ``pages`` (test_site's visit or audit), keys kept or not."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(300_000)
    start = chromium_cpu()
    for name in pages:
        if not keep:
            test_site.DECIDED_CONTRAST.clear()
        test_site._VISITS.pop(name, None)
        test_site.visit(page, site, name) if name in test_site.PAGES else test_site.audit(page, site, name)
    used = chromium_cpu() - start  # before the tab closes: a closed tab's renderer takes its CPU time with it
    page.close()
    return used


def main(pages: list[str]) -> int:
    pages = pages or [*test_site.PAGES, *test_site.SOURCE_PAGES]
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {len(pages)} pages")
    with sync_playwright() as playwright, serve_site() as site:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(300_000)
        wrong = verdicts(page, site, pages)
        page.close()
        print(f"{wrong} disagreements")
        alone, kept = audit_cpu(browser, site, pages, keep=False), audit_cpu(browser, site, pages, keep=True)
        print(f"Chromium CPU-s for the audit: each page alone {alone:.1f}, keys kept from page to page {kept:.1f}")
        browser.close()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
