"""A grading worker: imports otter once, then grades one prepared submission after another.

    PYTHON grade_worker.py RESULTS_FD < tasks

Started by ``grade.py`` (one worker per ``--jobs``), in the Python environment
that grades — this one, or a clean one built from an autograder zip — so it
uses the standard library and otter only. Each line on stdin is a task (JSON):
the prepared notebook, its working directory (holding a fresh copy of the tests
and of the autograder's files), the sandbox kernel to run it in and the time
limit. Each answer (JSON, one line) goes to file descriptor ``RESULTS_FD``, a
pipe no kernel inherits, so nothing a submission prints can pose as a result.

A submission is graded as ``otter run`` grades it — otter's own
``GradingPreprocessor`` adds the cells that run every test file in the kernel
and pickle the results — but the kernel is the grader's sandbox kernel (see
``sandbox.py``), started in the submission's directory, and killed with its
whole process group when the time limit passes. The results pickle is written
by the submission's kernel, so it is read back with an unpickler that builds
otter's result classes and plain data only.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import signal
import sys
import threading
import time
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ExecutePreprocessor
from otter.execute.logging import start_server
from otter.execute.preprocessor import GradingPreprocessor
from otter.run.run_autograder.autograder_config import AutograderConfig
from otter.test_files import GradingResults
from traitlets.config import Config

# What a results pickle may contain: otter's result classes and plain data, nothing callable else.
ALLOWED_CLASSES = {
    ("otter.test_files", "GradingResults"),
    ("otter.test_files.ok_test", "OKTestFile"),
    ("otter.test_files.metadata_test", "NotebookMetadataOKTestFile"),
    ("otter.test_files.abstract_test", "TestCase"),
    ("otter.test_files.abstract_test", "TestCaseResult"),
    ("copyreg", "_reconstructor"),
    ("builtins", "object"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("collections", "OrderedDict"),
}


class ResultsUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) not in ALLOWED_CLASSES:
            raise pickle.UnpicklingError(f"results pickle refers to {module}.{name}")
        return super().find_class(module, name)


def read_results(path: Path) -> GradingResults:
    """The pickled results, never following a link a submission may have put in their place."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(descriptor, "rb") as handle:
        results = ResultsUnpickler(io.BytesIO(handle.read())).load()
    if not isinstance(results, GradingResults):
        raise TypeError("the results pickle does not hold otter's GradingResults")
    return results


def kill_kernels() -> None:
    """SIGKILL the process group of every child of this worker (each is a sandbox kernel's ``unshare``)."""
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(stat.parent.name), signal.SIGKILL)


def grade(task: dict) -> dict:
    """Run one prepared submission; ``{"tests": [...], "feedback": {...}}`` or ``{"error": ...}``."""
    workdir = Path(task["workdir"])
    notebook = nbformat.read(task["notebook"], as_version=4)
    results_path = Path(task["scratch"]) / "results.pkl"
    tests = sorted(str(path) for path in (workdir / "tests").glob("*.py"))
    config = Config()
    (host, port), stop_server = start_server()
    timed_out = threading.Event()

    def on_timeout() -> None:
        timed_out.set()
        kill_kernels()

    watchdog = threading.Timer(task["timeout"], on_timeout)
    try:
        grading = config.GradingPreprocessor
        grading.cwd, grading.test_dir, grading.tests_glob = str(workdir), str(workdir / "tests"), tests
        grading.results_path, grading.force_python3_kernel = str(results_path), False
        grading.logging_server_host, grading.logging_server_port = host, port
        grading.seed = grading.seed_variable = grading.otter_log = grading.variables = None  # as otter run sets them
        config.ExecutePreprocessor.allow_errors = True
        config.ExecutePreprocessor.kernel_name = task["kernel"]
        config.ExecutePreprocessor.timeout = task["timeout"]
        notebook, _ = GradingPreprocessor(config=config).preprocess(notebook)
        watchdog.start()
        ExecutePreprocessor(config=config).preprocess(notebook, {"metadata": {"path": str(workdir)}})
    except Exception as error:
        if timed_out.is_set():
            return {"error": f"timed out after {task['timeout']:g} s"}
        return {"error": f"the notebook could not be run: {type(error).__name__}: {error}"}
    finally:
        watchdog.cancel()
        stop_server()
        kill_kernels()  # anything the kernel left behind
    if timed_out.is_set():
        return {"error": f"timed out after {task['timeout']:g} s"}
    try:
        results = read_results(results_path)
    except Exception as error:
        return {"error": f"no results from the notebook: {type(error).__name__}: {error}"}
    tests = [
        {
            "name": name,
            "score": float(results.get_result(name).score),
            "possible": float(results.get_result(name).possible),
        }
        for name in results.test_files
    ]
    feedback = results.to_gradescope_dict(AutograderConfig({"show_hidden": False}))
    return {"tests": tests, "feedback": feedback}


def main(argv: list[str]) -> int:
    answers = os.fdopen(int(argv[0]), "w", buffering=1)
    for line in sys.stdin:
        task = json.loads(line)
        started = time.perf_counter()
        try:
            answer = grade(task)
        except Exception as error:  # a worker never dies of one submission
            answer = {"error": f"grading failed: {type(error).__name__}: {error}"}
        answer.update(id=task["id"], seconds=round(time.perf_counter() - started, 3))
        answers.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
