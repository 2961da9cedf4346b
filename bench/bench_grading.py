"""Per-submission grading time: ``otter run`` per file (the old grader) against ``grade.py``'s workers.

    .venv/bin/python bench/bench_grading.py [N]

Builds ``hw1-advantages`` into a temporary directory, then grades its reference
solutions N times (default 4), one at a time (no parallelism, so the numbers are
per submission):

* ``otter run`` — one process per submission, as the old ``grade.py`` did: a new
  Python that imports otter, unpacks the zip and starts a kernel;
* ``grade.py`` worker — one long-lived worker (otter imported once); each
  submission gets a fresh sandbox directory and kernel, started afresh or
  forked by ``homework/zygote.py`` (ipykernel, otter and numpy already
  imported). Its first submission includes starting the worker (and the zygote's
  imports, which run beside it).

Also the cost that the worker avoids: starting Python and importing what
``otter run`` imports (median of 3 fresh interpreters).
"""

from __future__ import annotations

import importlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
HOMEWORK = ROOT / "homework"
NAME = "hw1-advantages"


def otter_run_seconds(zip_path: Path, submission: Path, out: Path) -> float:
    otter = Path(sys.executable).with_name("otter")
    started = time.perf_counter()
    command = [str(otter), "run", "--no-logo", "-a", str(zip_path), "-o", str(out), str(submission)]
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def import_seconds() -> float:
    code = "import otter.run, nbconvert.preprocessors, otter.execute"
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def main(count: int) -> None:
    sys.path.insert(0, str(HOMEWORK))  # the scripts import one another by name, from their folder
    build, grade = importlib.import_module("build"), importlib.import_module("grade")
    with tempfile.TemporaryDirectory(prefix="bench-grading-") as temporary:
        scratch = Path(temporary)
        dist = scratch / "dist"
        assert build.build(NAME, dist, build.package_grpo_core(scratch)) == []
        submission = dist / NAME / "autograder" / f"{NAME}.ipynb"
        old = [
            otter_run_seconds(dist / NAME / "autograder" / f"{NAME}-autograder.zip", submission, scratch)
            for _ in range(count)
        ]
        scratch.chmod(0o711)
        notebook = nbformat.read(submission, as_version=4)
        timings = {}
        for warm in (False, True):
            work = scratch / f"grade-{warm}"
            work.mkdir()
            grade.prepare_scratch(work)
            graders = grade.load_autograders(dist, work)
            workers = grade.Workers(sys.executable, 1, work, 600.0, warm=warm)
            timings[warm] = []
            try:
                for _ in range(count):
                    started = time.perf_counter()
                    answer = workers.run(notebook, graders[NAME])
                    timings[warm].append(time.perf_counter() - started)
                    assert "error" not in answer, answer
            finally:
                workers.close()
    print(f"Grading {NAME} (reference solutions), one submission at a time, {count} submissions each\n")
    print("| method | first submission (s) | each further submission, median (s) |")
    print("|---|---|---|")
    print(f"| `otter run` per file (old) | {old[0]:.1f} | {statistics.median(old[1:] or old):.1f} |")
    for warm, label in ((False, "each kernel started afresh"), (True, "kernels forked by `zygote.py`")):
        runs = timings[warm]
        print(f"| `grade.py` worker, sandboxed, {label} | {runs[0]:.1f} | {statistics.median(runs[1:] or runs):.1f} |")
    print(f"\nStarting Python and importing otter's grading modules: {import_seconds():.1f} s (median of 3)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
