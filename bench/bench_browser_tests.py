"""What the browser test files cost: wall time and the CPU time of every process they start.

Runs each file with ``pytest -n 0`` (one process, as one xdist worker runs it) and counts the CPU-seconds (user +
system) of its whole process tree: pytest, Playwright's driver, every Chromium process, JupyterLab and its kernels,
the subprocesses of the tests. This script makes itself the tree's child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``):
a process whose parent ends before it is handed to this script, not to init, and every process of the tree is
waited for by its parent or by this script, so that the kernel adds its CPU time to this script's
``getrusage(RUSAGE_CHILDREN)``, which is read before and after each file (``/usr/bin/time`` on pytest would miss the
Chromium processes that Playwright's driver leaves to init). The count is exact, also for processes that live a few
milliseconds. Beside it, where the time went: the tree is sampled every 0.5 s (psutil) and each process's last CPU
time is added to its kind (Chromium, JupyterLab's server, kernels, pytest and the rest); a sample misses the end of a
process, so the kinds add up to a little less than the total.

The CPU time is the number to compare on a shared machine: the wall time grows with the load, so the machine's
busy CPU-seconds over the run (``/proc/stat``, every process of the machine) are printed too; their excess over the
tree's is other work. ``make book`` first (the site's tests read ``_build/html``).
Run: ``.venv/bin/python bench/bench_browser_tests.py [-k EXPR] [tests/site/test_lab_site.py ...]``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import resource
import subprocess
import time
from collections import Counter
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
FILES = (
    "tests/site/test_site.py",
    "tests/site/test_lab_site.py",
    "tests/site/test_lab_accessibility.py",
    "tests/browser/test_lab_parity.py",
    "tests/browser/test_lab_browser.py",
    "tests/browser/test_jupyterlab_reader.py",
)
PR_SET_CHILD_SUBREAPER = 36
SAMPLE_S = 0.5


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine_busy() -> float:
    """CPU-seconds every process of the machine has spent since boot (/proc/stat: all but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


CHROMIUM_TYPES = {"--type=renderer": "renderer", "--type=gpu-process": "gpu"}
KINDS = ("renderer", "gpu", "chromium", "kernel", "jupyter", "pytest", "other")


def kind(process: psutil.Process) -> str:
    """Where the time went: Chromium's renderers, its GPU process (software compositing), its other processes, a
    notebook kernel, JupyterLab's server, pytest, or anything else (Playwright's driver, a test's subprocess)."""
    command = process.cmdline() or [""]
    program = Path(command[0]).name
    if program == "chromium":
        return next((CHROMIUM_TYPES[a] for a in command if a in CHROMIUM_TYPES), "chromium")
    if "ipykernel_launcher" in command:
        return "kernel"
    script = Path(command[1]).name if program.startswith("python") and len(command) > 1 else program
    return next((name for name in ("jupyter", "pytest") if script.startswith(name)), "other")


def reap(timeout: float = 30) -> list[str]:
    """Wait for every process left to this script (orphans of the tree); the command lines of those still running
    after ``timeout`` s, which are then killed."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return []
        if pid == 0:
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
    left = psutil.Process().children()
    names = [" ".join(process.cmdline())[:80] for process in left]
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.kill()
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, 0)[0]:
            pass
    return names


def measure(path: str, options: list[str]) -> dict:
    """pytest's exit status, wall s, CPU s of the whole tree, of each kind (sampled), the machine's busy CPU s."""
    command = [str(ROOT / ".venv" / "bin" / "pytest"), "-q", "-n", "0", "-p", "no:cacheprovider", *options, path]
    cpu, busy, started = children_cpu(), machine_busy(), time.monotonic()
    test = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[tuple[int, float], tuple[str, float]] = {}
    while test.poll() is None:
        for process in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):  # it ended meanwhile: its last value stands
                times = process.cpu_times()
                key = process.pid, process.create_time()
                seen[key] = (kind(process), times.user + times.system)  # a forked renderer changes its name
        time.sleep(SAMPLE_S)
    left = reap()
    kinds = Counter()
    for name, seconds in seen.values():
        kinds[name] += seconds
    return {
        "status": test.returncode,
        "wall": time.monotonic() - started,
        "cpu": children_cpu() - cpu,
        "kinds": kinds,
        "machine": machine_busy() - busy,
        "left": left,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("files", nargs="*", default=FILES)
    parser.add_argument("-k", help="pytest's -k, for every file")
    arguments = parser.parse_args()
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, os.strerror(ctypes.get_errno())
    options = ["-k", arguments.k] if arguments.k else []
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; each file alone with pytest -n 0")
    print(f"| file | status | wall s | CPU s | {' | '.join(KINDS)} | machine busy CPU s |")
    print("|---|---|---|---|" + "---|" * len(KINDS) + "---|")
    total = Counter()
    for path in arguments.files:
        run = measure(path, options)
        total.update(cpu=run["cpu"], wall=run["wall"], machine=run["machine"])
        kinds = " | ".join(f"{run['kinds'][name]:.1f}" for name in KINDS)
        print(
            f"| {path} | {run['status']} | {run['wall']:.1f} | {run['cpu']:.1f} | {kinds} | {run['machine']:.1f} |",
            flush=True,
        )
        if run["left"]:
            print(f"  still running after pytest (killed): {run['left']}")
    print(f"| total | | {total['wall']:.1f} | {total['cpu']:.1f} |" + " |" * len(KINDS) + f" {total['machine']:.1f} |")


if __name__ == "__main__":
    main()
