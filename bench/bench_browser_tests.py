"""What the browser test files cost: wall time and the CPU time of every process they start.

Runs each file with ``pytest -n 0`` (one process, as one xdist worker runs it) and polls its process tree (pytest,
Playwright's driver, every Chromium process, JupyterLab and its kernels) every 0.1 s: a process's CPU time is the
last value seen, so a process that lives less than 0.1 s, or the last 0.1 s of one, can go uncounted.
``/usr/bin/time`` cannot do this: Chromium's processes are not waited for by the test process, so their CPU time is
never added to its children's. The CPU time is the number to compare on a shared machine (the wall time grows with
the load, which is printed). ``make book`` first.
Run: ``.venv/bin/python bench/bench_browser_tests.py [tests/test_site.py ...]``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
FILES = (
    "tests/test_site.py",
    "tests/test_lab_site.py",
    "tests/test_lab_accessibility.py",
    "tests/test_lab_browser.py",
    "tests/test_jupyterlab_reader.py",
)


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def measure(path: str) -> tuple[int, float, float, float]:
    """(pytest's exit status, wall s, CPU s of the whole process tree, mean load average during the run)."""
    command = [str(ROOT / ".venv" / "bin" / "pytest"), "-q", "-n", "0", "-p", "no:cacheprovider", path]
    started = time.monotonic()
    test = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    root = psutil.Process(test.pid)
    seen: dict[tuple[int, float], float] = {}
    loads = []
    while test.poll() is None:
        try:
            processes = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for process in processes:
            with contextlib.suppress(psutil.Error):  # it ended meanwhile: its last value stands
                seen[process.pid, process.create_time()] = cpu_seconds(process)
        loads.append(os.getloadavg()[0])
        time.sleep(0.1)
    test.wait()
    return test.returncode, time.monotonic() - started, sum(seen.values()), sum(loads) / max(1, len(loads))


def main(paths: list[str]) -> None:
    print(f"{os.cpu_count()} CPUs; each file alone with -n 0")
    print(f"{'file':36} {'status':>6} {'wall s':>7} {'CPU s':>7} {'load':>5}")
    for path in paths or FILES:
        status, wall, cpu, load = measure(path)
        print(f"{path:36} {status:6} {wall:7.1f} {cpu:7.1f} {load:5.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
