"""What coverage's tracer costs the tests: CPU-seconds of test files run with and without ``--measure-coverage``.

    .venv/bin/python bench/bench_coverage.py [TEST_FILE ...]

Runs each file alone on one worker (``-n 0``), first without coverage, then with ``--measure-coverage`` as
``make test`` passes it (tests/conftest.py: the tests of a tier run unmeasured, UnmeasuredTiers), and prints the
CPU-seconds (user + system) of pytest and every process it started: the tracer slows only the test process's own
Python, but the others' time is counted too, as in `make test`. CPU time, not wall time: the machine may be busy.
Without arguments: a unit test file, a browser file and a homework file.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["tests/unit/test_fuzz.py", "tests/site/test_lab_site.py", "tests/homework/test_homework.py"]


def cpu_seconds(test_file: str, *options: str) -> float:
    """CPU-s (user + system) of one pytest run of ``test_file`` and its child processes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [str(ROOT / ".venv" / "bin" / "pytest"), "-q", "-p", "no:cacheprovider", "-n", "0", *options, test_file]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{test_file} failed:\n{done.stdout[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    print(f"{'test file':<34} {'no coverage':>12} {'coverage':>9} {'more':>6}   (CPU-s)")
    for test_file in sys.argv[1:] or DEFAULT:
        plain = cpu_seconds(test_file)
        measured = cpu_seconds(test_file, "--measure-coverage")
        print(f"{test_file:<34} {plain:12.1f} {measured:9.1f} {measured / plain - 1:6.0%}")
    for leftover in ROOT.glob(".coverage.*"):
        leftover.unlink()


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
