"""Seconds per submission of ``grade.py`` (each in a fresh bubblewrap jail), and the grader's memory.

    .venv/bin/python bench/bench_grading.py [N]

Builds ``hw1-advantages`` and ``hw4-length-bias`` (which imports PyTorch) into a temporary directory, then
grades each assignment's reference solutions

* one at a time, N times (default 6): the first submission (it also runs the master's setup in this process,
  once per assignment) and the median of the further ones;
* 2N at once on two job slots (``--jobs 2``): wall seconds per submission.

Last, the grader process's peak resident memory (the jails are separate processes with limits of their own).
"""

from __future__ import annotations

import importlib
import os
import resource
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("hw1-advantages", "hw4-length-bias")


def main(count: int) -> None:
    sys.path.insert(0, str(ROOT / "homework"))  # the scripts import one another by name, from their folder
    build, grade = importlib.import_module("build"), importlib.import_module("grade")
    sys.path.insert(0, str(ROOT / "tests"))
    from homework_support import reference, write

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as temporary:
        scratch = Path(temporary)
        package = build.package_grpo_core(scratch / "package")
        for name in NAMES:
            build.assign(build.master_notebook(name), name, scratch / "dist", package, run_tests=False)
        grader = grade.Grader(grade.load_keys(scratch / "dist"), sys.executable, 600.0, 2)
        for name in NAMES:
            path = scratch / "subs" / name / "solved.ipynb"
            write(reference(scratch / "dist", name), path)
            seconds = []
            for _ in range(count):
                started = time.perf_counter()
                row, _, _ = grader.grade_one(path, path.parent)
                seconds.append(time.perf_counter() - started)
                assert not row.error and sum(row.scores.values()) == sum(grade.points(grader.keys[name]).values())
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=2) as pool:
                list(pool.map(grader.grade_one, [path] * (2 * count), [path.parent] * (2 * count)))
            parallel = (time.perf_counter() - started) / (2 * count)
            rows.append((name, seconds[0], statistics.median(seconds[1:] or seconds), parallel))
    print(f"Grading reference solutions, {count} one at a time, then {2 * count} on 2 job slots")
    print(f"(load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n")
    print("| assignment | first (s) | further, median (s) | 2 at once, per submission (s) |")
    print("|---|---|---|---|")
    for name, first, further, parallel in rows:
        print(f"| `{name}` | {first:.1f} | {further:.1f} | {parallel:.1f} |")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nGrader process, peak resident memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
