"""CPU-seconds and wall seconds of the homework and grading test files, each run alone on one worker (``-n 0``).

    .venv/bin/python bench/bench_grading_cpu.py [TEST_FILE ...] [--durations]

``make test`` keeps both cores busy the whole run, so its wall time is about the CPU-seconds of everything it runs
over two: each CPU-second a file saves counts. A file's CPU-seconds here are those of its whole process tree:
pytest, otter, the notebook kernels, the grader's jails (bwrap's own PID namespaces, the sandbox users) and
whatever a jail's first process leaves to the machine's init to collect, which ``getrusage(RUSAGE_CHILDREN)``
never sees. They are read from a cpuacct cgroup made for the run (every process the run starts stays in it,
whatever becomes of its parent); where none can be made (no cgroup v1 cpuacct, not root), from ``/proc/stat``:
the whole machine's busy time, other users' work included, so an upper bound on a shared machine.

Each file's run builds what it uses (``otter assign`` of every assignment, once per run: tests/homework_support.py),
as a lone worker of ``make test`` does; the first line, ``(build)``, is that build alone. ``--durations``: pytest's
ten slowest phases per file too. Run it once before the run you keep: the first one compiles the venv's bytecode.

Measured on a shared 2-core machine (load 5.5-7.6: other sessions' work, not counted), warm bytecode, before the
grading tier's cuts (90a99f8) and after them (d3d9f75), CPU-s: test_grading 54.5 -> 38.0, test_grading_redteam
30.5 -> 12.6, test_grading_clean 36.0 -> 30.7, test_homework 19.1 -> 15.9, test_public_checks 18.9 -> 17.1
(back to back, twice: 24.3 and 21.4 -> 16.2 and 17.1), test_homework_new (now test_course_plan) 5.8 -> 5.6; all
six 164.8 -> 119.9. A first baseline run (183.3) was inflated by cold bytecode: the commits before d3d9f75 quote it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = [
    "tests/homework/test_homework.py",
    "tests/homework/test_course_plan.py",
    "tests/homework/test_public_checks.py",
    "tests/homework/test_grading.py",
    "tests/homework/test_grading_redteam.py",
    "tests/homework/test_grading_clean.py",
]
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
# As `make test` runs (its Makefile unexports PYTHONDONTWRITEBYTECODE): Python keeps the bytecode it compiles.
ENVIRONMENT = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
BUILD = """\
import sys, tempfile
from pathlib import Path
sys.path.insert(0, "tests")
from homework_support import NAMES, build
with tempfile.TemporaryDirectory() as scratch:
    package = build.package_grpo_core(Path(scratch) / "package")
    assert all(build.build(name, Path(scratch) / "dist", package, run_tests=False) == [] for name in NAMES)
"""


def machine_busy() -> float:
    """CPU-seconds the whole machine has been busy (``/proc/stat``: every field but idle and iowait)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def cgroup():
    """A fresh cpuacct cgroup (its folder), removed afterwards; ``None`` where none can be made."""
    folder = CPUACCT / f"bench-grading-{os.getpid()}"
    try:
        folder.mkdir()
    except OSError:
        yield None
        return
    try:
        yield folder
    finally:
        for _ in range(100):  # the last processes of a jail may take a moment to be collected
            with contextlib.suppress(OSError):
                folder.rmdir()
                break
            time.sleep(0.1)


def run(command: list[str]) -> tuple[float, float, str, str]:
    """``(CPU-s, wall s, how the CPU-s were counted, output)`` of ``command`` and every process it starts."""
    with cgroup() as group:
        # The child joins the cgroup before it runs the command: a shell writes its own PID, then execs.
        prefix = ["sh", "-c", f'echo $$ > {group / "cgroup.procs"} && exec "$@"', "sh"] if group else []
        busy, started = machine_busy(), time.monotonic()
        done = subprocess.run([*prefix, *command], cwd=ROOT, capture_output=True, text=True, env=ENVIRONMENT)
        wall, machine = time.monotonic() - started, machine_busy() - busy
        if group:
            cpu, how = int((group / "cpuacct.usage").read_text()) / 1e9, "cgroup"
        else:
            cpu, how = machine, "machine"
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return cpu, wall, how, done.stdout


def main(files: list[str], durations: bool) -> None:
    python = str(ROOT / ".venv" / "bin" / "python")
    rows = [("(build)", *run([python, "-c", BUILD])[:3])]
    reports = []
    for test_file in files:
        with tempfile.TemporaryDirectory(prefix="bench-grading-cpu-") as base:
            command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", f"--basetemp={base}/t"]
            cpu, wall, how, output = run([*command, *(["--durations=10"] if durations else []), test_file])
        rows.append((test_file, cpu, wall, how))
        summary = output.strip().splitlines()[-1]
        reports.append(f"{test_file}: {summary}")
        if durations:
            lines = output.splitlines()
            start = next(i for i, line in enumerate(lines) if "slowest" in line)
            reports += lines[start + 1 : start + 12]
    load = os.getloadavg()[0]
    print(f"Homework and grading test files, each alone with -n 0 (load average {load:.1f} on {os.cpu_count()} cores)")
    print("\n| file | CPU-s | wall s | counted by |\n|---|---|---|---|")
    for name, cpu, wall, how in rows:
        print(f"| {name} | {cpu:.1f} | {wall:.1f} | {how} |")
    total = sum(cpu for name, cpu, _, _ in rows[1:])
    print(f"| all files | {total:.1f} | {sum(wall for _, _, wall, _ in rows[1:]):.1f} | |\n")
    print("\n".join(reports))


if __name__ == "__main__":
    arguments = [argument for argument in sys.argv[1:] if argument != "--durations"]
    main(arguments or DEFAULT, "--durations" in sys.argv[1:])
