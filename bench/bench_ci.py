"""Time `.ci/run` on a fresh clone with empty download caches, and show where the time of its pytest run goes.

    .venv/bin/python bench/bench_ci.py [--keep]

Clones this repository's HEAD into a temporary folder and runs its `.ci/run` there (the install of `.venv`
included) with new, empty pip, uv and XDG caches, as a new maintainer's first run would. pytest runs as
`make test` runs it, with ``-v --durations=0`` added through ``PYTEST_ADDOPTS``: ``-v`` names the xdist worker
that ran each test, ``--durations=0`` the time of each test's setup, call and teardown. Prints

* the wall time of `.ci/run` and pytest's own summary line;
* each worker's busy time (the sum of its tests' durations) against pytest's wall time;
* the work units (``make test`` runs pytest-xdist's ``--dist loadfile``: a test file, or a notebook) by time, the
  longest 20: one unit runs on one worker, so the longest sets a floor under the wall time;
* the seed of the run's sampled sweeps (tests/sweeps.py), which replays them;
* pytest's 20 longest phases (``--durations``).

Last, one row for the trend table of the notes (date, commit, CPU, wall times of `.ci/run` and of pytest,
passed and failed, and whether `.ci/run` stayed within the budget of BUDGET seconds).

Run it once on an idle machine (it takes both cores for 5 minutes or more); it needs the package registries.
``--keep`` leaves the clone and its log in place; ``--dry-run`` clones, says what it would run, and stops.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER_LINE = re.compile(r"^\[(gw\d+)\] \[\s*\d+%\] (?:PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S.*?)\s*$")
DURATION_LINE = re.compile(r"^(\d+\.\d+)s (setup|call|teardown)\s+(\S.*?)\s*$")
SUMMARY_LINE = re.compile(r"^=+ (.*\d+ passed.*|.*\d+ failed.*) =+$")
BUDGET = 600  # seconds: `make test` on a cold fresh clone on 2 cores (issue 42)


def ci_env(clone: Path) -> dict[str, str]:
    """The environment of `.ci/run`: this one, with new, empty download caches beside ``clone``."""
    caches = clone.parent / "caches"
    return {
        "PIP_CACHE_DIR": str(caches / "pip"),
        "UV_CACHE_DIR": str(caches / "uv"),
        "XDG_CACHE_HOME": str(caches / "xdg"),
        "PYTEST_ADDOPTS": "-v --durations=0",
    }


def run_ci(clone: Path) -> tuple[float, str, int]:
    """Runs `.ci/run` in ``clone`` with empty caches; returns its wall time, its output and its exit status."""
    env = {**os.environ, **ci_env(clone)}
    start = time.perf_counter()
    done = subprocess.run([str(clone / ".ci" / "run")], cwd=clone, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done.stdout + done.stderr, done.returncode


def critical_path(output: str) -> None:
    worker = {}
    for line in output.splitlines():
        if match := WORKER_LINE.match(line):  # -v names a notebook's cell "notebooks/NAME::ipynb::Cell 3"
            worker[match.group(2).replace("::ipynb::", ".ipynb::")] = match.group(1)
    phases = [(float(m.group(1)), m.group(2), m.group(3)) for m in map(DURATION_LINE.match, output.splitlines()) if m]
    per_test = defaultdict(float)
    for seconds, _, test in phases:
        per_test[test] += seconds
    busy, units = defaultdict(float), defaultdict(float)
    for test, seconds in per_test.items():
        busy[worker.get(test, "?")] += seconds
        units[test.partition("::")[0]] += seconds
    print("\n| worker | busy [s] | tests |\n|---|---|---|")
    for name in sorted(busy):
        print(f"| {name} | {busy[name]:.1f} | {sum(w == name for w in worker.values())} |")
    print("\n| work unit (a file) | time [s] |\n|---|---|")
    for unit, seconds in sorted(units.items(), key=lambda item: -item[1])[:20]:
        print(f"| `{unit}` | {seconds:.1f} |")
    print("\n| phase | test | time [s] |\n|---|---|---|")
    for seconds, phase, test in sorted(phases, reverse=True)[:20]:
        print(f"| {phase} | `{test}` | {seconds:.1f} |")


def trend_row(commit: str, seconds: float, summary: str) -> str:
    """The row of the trend table for one run: ``summary`` is pytest's closing line (``1946 passed ... in 582.1s``)."""
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "?")
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|error)", summary)}
    pytest_seconds = re.search(r" in ([\d.]+)s", summary)
    return (
        "| date (UTC) | commit | CPU | .ci/run [s] | pytest [s] | passed | failed | within budget |\n"
        "|---|---|---|---|---|---|---|---|\n"
        f"| {datetime.now(UTC):%Y-%m-%d %H:%M} | {commit} | {cpu} | {seconds:.0f} "
        f"| {pytest_seconds.group(1) if pytest_seconds else '?'} | {counts.get('passed', 0)} "
        f"| {counts.get('failed', 0) + counts.get('error', 0)} | {'yes' if seconds <= BUDGET else 'NO'} ({BUDGET} s) |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="leave the clone and its log in place")
    parser.add_argument("--dry-run", action="store_true", help="clone, say what would run, and stop")
    arguments = parser.parse_args()
    keep = arguments.keep
    folder = Path(tempfile.mkdtemp(prefix="bench-ci-"))
    folder.chmod(0o755)  # as a clone in a home folder: the grading sandbox's own user must read and run .venv
    clone = folder / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True)
    if arguments.dry_run:
        print(f"would run {clone / '.ci' / 'run'} on {commit.stdout.strip()} with {ci_env(clone)}")
        shutil.rmtree(folder, ignore_errors=True)
        return 0
    seconds, output, status = run_ci(clone)
    (folder / "ci.log").write_text(output, encoding="utf8")
    summary = [m.group(1) for m in map(SUMMARY_LINE.match, output.splitlines()) if m]
    print(f"fresh clone of {commit.stdout.strip()}, empty caches: .ci/run took {seconds:.0f} s, exit status {status}")
    print(f"pytest: {summary[-1] if summary else 'no summary line (see the log)'}")
    print(next((line for line in output.splitlines() if line.startswith("sweeps: ")), "sweeps: no seed line"))
    critical_path(output)
    print()
    print(trend_row(commit.stdout.strip(), seconds, summary[-1] if summary else ""))
    if keep:
        print(f"\nclone and log: {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
