"""How fast the live lab of the site answers, in headless Chromium (the built §11 page, ``make book`` first).

Timed in the page's clock: from the click (``button.click()``, at a random
moment within a frame) to the next animation frame after the views were redrawn (the click's handler redraws the
views synchronously; the frame is when they are painted), for *Sample group*
and *GRPO step*, 200 clicks each, with median, p90 and p95, and per click what the redraw wrote
(``tests/site/test_lab_site.py``'s REDRAWS: DOM mutation records, nodes created, writes that left a node as it was); and
*Run N steps* with N = 200 (one step per animation frame): steps per second and the time between consecutive
redraws.
Also: the bytes the lab adds to the page (its JS and CSS, with the generated ``lab-spec.js``, uncompressed and
gzipped). Budgets (issue 11): median ≤ 16.7 ms per click, ≥ 30 steps/s, ≤ 150 KB.
Prints the machine's load, since other work shares its cores.
Run: ``.venv/bin/python bench/bench_lab_site.py``.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import os
import shutil
import sys
import threading
from pathlib import Path

import numpy as np
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "tests" / "site"))
from test_lab_site import REDRAWS  # noqa: E402

SITE = ROOT / "_build" / "html"
STATIC = ROOT / "src" / "grpo_core" / "lab" / "static"
LAB_PAGE = "notebooks/11-bandit-lab.html"
CLICKS = 200
RUN_STEPS = 200
FRAME_MS = 1000 / 60
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]

CLICK_TIMES = """async ([selector, clicks]) => {
  const button = document.querySelector(selector);
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve(performance.now())));
  const handler = [], painted = [], records = [], created = [], waste = [];
  __redraws();
  for (let i = 0; i < clicks; i++) {
    await frame();  // then a click at a random moment of the next frame, as a reader's would come
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 16));
    const start = performance.now();
    button.click();
    handler.push(performance.now() - start);
    painted.push((await frame()) - start);
    const wrote = __redraws();  // after the frame, out of the time
    records.push(wrote.records), created.push(wrote.created), waste.push(wrote.waste.length);
  }
  return { handler, painted, records, created, waste };
}"""

RUN_TIMES = """async (steps) => {
  const lab = GRPOLab.labs[0];
  const redraws = [];
  const render = lab.render.bind(lab);
  lab.render = () => { render(); redraws.push(performance.now()); };
  document.querySelector('.grpo-lab-live .grpo-lab-steps input').value = String(steps);
  const first = lab.run.history.length;
  const start = performance.now();
  document.querySelector('.grpo-lab-live button.grpo-lab-run').click();
  while (lab.running) await new Promise((resolve) => setTimeout(resolve, 20));
  const seconds = (redraws[redraws.length - 1] - start) / 1000;
  lab.render = render;
  return { steps: lab.run.history.length - first, seconds, redraws };
}"""


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def row(name: str, times, budget: str) -> str:
    times = np.asarray(times)
    return (
        f"| {name} | {times.size} | {np.median(times):.2f} | {np.percentile(times, 90):.2f} "
        f"| {np.percentile(times, 95):.2f} | {times.max():.2f} | {budget} |"
    )


def main() -> None:
    assert (SITE / LAB_PAGE).is_file(), "build the book first: make -o .venv/.installed book"
    load_before = os.getloadavg()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(SITE)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{LAB_PAGE}"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url, wait_until="load")
        page.wait_for_selector(".grpo-lab-live .grpo-lab-ledger li")
        page.evaluate(REDRAWS, ".grpo-lab-live .grpo-lab-views")
        sample = page.evaluate(CLICK_TIMES, [".grpo-lab-live button.grpo-lab-sample", CLICKS])
        page.evaluate("() => document.querySelector('.grpo-lab-live button.grpo-lab-reset').click()")
        step = page.evaluate(CLICK_TIMES, [".grpo-lab-live button.grpo-lab-step", CLICKS])
        page.evaluate("() => document.querySelector('.grpo-lab-live button.grpo-lab-reset').click()")
        run = page.evaluate(RUN_TIMES, RUN_STEPS)
        browser.close()
    server.shutdown()
    load_after = os.getloadavg()

    per_step = np.diff(run["redraws"])
    print(
        f"site lab, headless Chromium; {os.cpu_count()} CPUs; load average {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after"
    )
    print("| action | n | median ms | p90 ms | p95 ms | max ms | budget |")
    print("|---|---|---|---|---|---|---|")
    print(row("Sample group: click → views painted (next frame)", sample["painted"], "median ≤ 16.7"))
    print(row("Sample group: click handler (engine + every view)", sample["handler"], ""))
    print(row("GRPO step: click → views painted (next frame)", step["painted"], "median ≤ 16.7"))
    print(row("GRPO step: click handler (engine + every view)", step["handler"], ""))
    print(row(f"Run N = {RUN_STEPS}: time per step (redraw to redraw)", per_step, "≤ 33.3 (30 steps/s)"))
    for name, clicks in (("Sample group", sample), ("GRPO step", step)):
        print(
            f"{name}, per click (median): {np.median(clicks['records']):.0f} DOM mutation records, "
            f"{np.median(clicks['created']):.0f} nodes created, {np.median(clicks['waste']):.0f} writes that changed "
            f"nothing (most {max(clicks['waste'])})"
        )
    rate = run["steps"] / run["seconds"]
    print(f"\nRun N = {RUN_STEPS}: {run['steps']} steps in {run['seconds']:.2f} s = {rate:.1f} steps/s (budget ≥ 30)")
    files = sorted(p for p in [*STATIC.iterdir(), SITE / "_static" / "lab-spec.js"] if p.suffix in (".js", ".css"))
    raw = sum(p.stat().st_size for p in files)
    packed = sum(len(gzip.compress(p.read_bytes())) for p in files)
    print(f"bytes the lab adds: {raw / 1024:.1f} KB uncompressed, {packed / 1024:.1f} KB gzipped (budget ≤ 150 KB)")
    for p in files:
        print(f"  {p.name}: {p.stat().st_size / 1024:.1f} KB")


if __name__ == "__main__":
    main()
