"""Seconds per submission of ``grade.py`` (each in a fresh bubblewrap jail), and the grader's memory.

    .venv/bin/python bench/bench_grading.py [N]

Builds ``hw1-advantages`` and ``hw4-length-bias`` (which imports PyTorch) into a temporary directory, then
grades each assignment's reference solutions

* one at a time, N times (default 6): the first submission (it also runs the master's setup in this process,
  once per assignment) and the median of the further ones;
* 2N at once on two job slots (``--jobs 2``): wall seconds per submission.

Then where one further submission's seconds go: the jail's first answer (bwrap and Python starting, the notebook's
imports and cells), the student's functions called by the hidden tests (one answer each), and the rest (the checker's
own comparisons, closing the jail); and, for scale, a bare ``python -c pass`` and ``import torch`` in a jail.
Last, the grader process's peak resident memory (the jails are separate processes with limits of their own).
"""

from __future__ import annotations

import importlib
import os
import resource
import statistics
import subprocess
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

    rows, phases = [], []
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as temporary:
        scratch = Path(temporary)
        package = build.package_grpo_core(scratch / "package")
        for name in NAMES:
            build.assign(build.master_notebook(name), name, scratch / "dist", package, run_tests=False)
        grader = grade.Grader(grade.load_keys(scratch / "dist"), sys.executable, 600.0)
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
            phases.append((name, *where_the_seconds_go(grade, grader, path)))
        jail = importlib.import_module("jail")
        bare = [in_a_jail(jail, code) for code in ("pass", "import torch")]
    print(f"Grading reference solutions, {count} one at a time, then {2 * count} on 2 job slots")
    print(f"(load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n")
    print("| assignment | first (s) | further, median (s) | 2 at once, per submission (s) |")
    print("|---|---|---|---|")
    for name, first, further, parallel in rows:
        print(f"| `{name}` | {first:.1f} | {further:.1f} | {parallel:.1f} |")
    print("\nOne further submission, by phase (s)\n")
    print("| assignment | total | first answer (start, imports, cells) | calls (n) | checker and close |")
    print("|---|---|---|---|---|")
    for name, total, first, calls, count_calls in phases:
        print(f"| `{name}` | {total:.2f} | {first:.2f} | {calls:.2f} ({count_calls}) | {total - first - calls:.2f} |")
    print(f"\nIn a jail: `python -c pass` {bare[0]:.2f} s, `python -c 'import torch'` {bare[1]:.2f} s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nGrader process, peak resident memory: {peak:.0f} MiB")


def where_the_seconds_go(grade, grader, path: Path) -> tuple[float, float, float, int]:
    """``(total, first answer, function calls, number of calls)`` of grading ``path`` once more, in seconds."""
    jail_class = grade.Jail
    asked: list[float] = []
    ask = jail_class.ask

    def timed(self, request: dict, seconds: float | None = None) -> dict:
        started = time.perf_counter()
        try:
            return ask(self, request, seconds)
        finally:
            asked.append(time.perf_counter() - started)

    jail_class.ask = timed
    try:
        started = time.perf_counter()
        grader.grade_one(path, path.parent)
        total = time.perf_counter() - started
    finally:
        jail_class.ask = ask
    return total, asked[0], sum(asked[1:]), len(asked) - 1


def in_a_jail(jail, code: str) -> float:
    """Wall seconds of ``python -c CODE`` in a jail like a submission's (median of 3)."""
    seconds = []
    uid, lease = jail.lease_uid() if os.geteuid() == 0 else (None, None)
    for _ in range(3):
        seccomp = jail.filter_pipe()  # bwrap reads the filter once
        argv = jail.command(jail.interpreter(sys.executable), jail.python_paths(sys.executable), uid, 600, seccomp)
        started = time.perf_counter()
        subprocess.run([*argv[:-1], "-c", code], env=jail.ENVIRONMENT, pass_fds=(seccomp,), check=True)
        seconds.append(time.perf_counter() - started)
        os.close(seccomp)
    if lease is not None:
        os.close(lease)
    return statistics.median(seconds)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
