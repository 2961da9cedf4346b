"""How long the bandit lab's kernel side takes to answer a click, in-process (no browser).

A click is ``Button.click()``: the handler runs the engine and builds the one
state every view is drawn from (cards, bars, group table, banner, curves,
ledger), which it hands to the view widget, before it returns. The budget is
one frame at 60 Hz, 16.7 ms. Also timed: the engine step alone, and the state
alone (built with 200 steps of curves), to show where the time goes. The
browser's side is timed by ``bench/bench_lab_jupyterlab.py`` (JupyterLab) and
``bench/bench_lab_site.py`` (the site). Run: ``.venv/bin/python bench/bench_lab.py``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from grpo_core.lab import BanditLab

CLICKS = 200
WARMUP = 10
FRAME_MS = 1000 / 60  # one frame at 60 Hz


def timed(action, repeats: int) -> np.ndarray:
    """Milliseconds of each of ``repeats`` calls of ``action``."""
    times = np.empty(repeats)
    for i in range(repeats):
        start = time.perf_counter_ns()
        action()
        times[i] = (time.perf_counter_ns() - start) / 1e6
    return times


def fresh_lab() -> BanditLab:
    lab = BanditLab(seed=0, frame_delay=0)
    timed(lab.buttons["step"].click, WARMUP)
    lab.reset()
    return lab


def main() -> None:
    rows = []
    lab = fresh_lab()
    rows.append(("GRPO step click (steps 1–200)", timed(lab.buttons["step"].click, CLICKS)))
    lab = fresh_lab()
    rows.append(("Sample group click", timed(lab.buttons["sample"].click, CLICKS)))
    lab = fresh_lab()
    rows.append(
        (
            "Sample + GRPO step clicks",
            timed(lambda: (lab.buttons["sample"].click(), lab.buttons["step"].click()), CLICKS),
        )
    )
    lab = fresh_lab()
    rows.append(("Reset click", timed(lab.buttons["reset"].click, CLICKS)))
    lab = fresh_lab()
    rows.append(("Sharpen π click", timed(lab.buttons["sharpen"].click, CLICKS)))
    lab = fresh_lab()
    lab.steps.value = CLICKS
    total = timed(lab.buttons["run"].click, 1)[0]
    rows.append((f"Run N steps, per step (N = {CLICKS}, no frame delay)", np.array([total / CLICKS])))
    lab = fresh_lab()
    rows.append(("  engine alone: BanditGRPO.step()", timed(lab.trainer.step, CLICKS)))
    lab = fresh_lab()
    lab.run_steps(CLICKS)
    rows.append((f"  state alone: BanditLab.state() at step {CLICKS}", timed(lab.state, CLICKS)))

    print(f"bandit lab, in-process; {os.cpu_count()} CPUs; budget one frame = {FRAME_MS:.1f} ms")
    print(f"{'action':<50} {'n':>4} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}  within a frame")
    for name, times in rows:
        median, p95 = np.median(times), np.percentile(times, 95)
        verdict = "yes" if median <= FRAME_MS else "NO"
        print(f"{name:<58} {times.size:>4} {median:>10.2f} {p95:>8.2f} {times.max():>8.2f}  {verdict}")


if __name__ == "__main__":
    main()
