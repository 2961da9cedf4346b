"""Grade a folder of submissions, each in its own sandbox, into one sheet per assignment.

    python homework/grade.py SUBMISSIONS [--dist homework/dist] [--out DIR] [--jobs N]
                             [--timeout SECONDS] [--roster roster.csv] [--python PYTHON]

Every ``*.ipynb`` under SUBMISSIONS (any depth; checkpoints skipped) and every
``*.zip`` made by the notebook's export cell (only the notebook inside is used)
is a submission, matched to its assignment by the name otter stores in the
notebook (``metadata.otter.assignment_name``). Nothing a submission holds can end
the run: a file that is not a notebook, or has no assignment name, gets a row
saying why in ``unmatched.csv``.

Each submission is graded against its autograder zip (``DIST/NAME/autograder/``)
by a worker process (``grade_worker.py``, started once per ``--jobs`` slot in the
environment of ``--python``), in a working directory of its own that holds only
a fresh, read-only copy of the tests and of the autograder's files. Its kernel
runs in its own PID namespace as an unprivileged user of its own (``sandbox.py``),
forked by ``zygote.py`` with ipykernel, otter and numpy already imported, when the
grader runs as root; otherwise as the grader's user (a warning says so).
After ``--timeout`` seconds the kernel's whole process group is killed.

``OUT`` (default ``DIST/grades``) receives, row by row as submissions finish:

* ``NAME.csv`` per assignment: ``student_id`` (from ``--roster``), ``file``,
  ``sha256``, ``graded_at``, one column per question, ``total``, ``possible``,
  ``suspicious``, ``error``; the first row, ``file = (points possible)``, holds each
  question's maximum. A sheet that exists is **merged by submission**: a row is
  replaced only when the same ``file`` is graded again, every other row stays.
  Each write goes to a temporary file renamed over the sheet, so an interrupted
  run leaves the sheet as it was after the last finished submission.
* ``unmatched.csv``: the submissions that could not be matched, and why.
* ``feedback/NAME/FILE.json``: otter's per-test results for each submission
  (what Gradescope would show the student), kept for feedback and regrades.
* ``manual-NAME.md``: every written answer (cells tagged ``manual-answer``) by
  submission, for grading by hand.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import csv
import datetime
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sheets import Sheet
from suspicious import findings

HOMEWORK = Path(__file__).resolve().parent
POINTS_ROW = "(points possible)"
MANUAL_TAG = "manual-answer"
UID_BASE = 64000  # the sandbox user of job slot k is UID_BASE + k (no passwd entry needed)


# ---------------------------------------------------------------- reading submissions


@dataclass
class Row:
    """One submission's line in a sheet."""

    file: str
    assignment: str = ""
    sha256: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    suspicious: list[str] = field(default_factory=list)
    error: str = ""
    graded_at: str = ""
    student_id: str = ""


def submissions(folder: Path) -> list[Path]:
    found = [*folder.rglob("*.ipynb"), *folder.rglob("*.zip")]
    return sorted(path for path in found if ".ipynb_checkpoints" not in path.parts and path.is_file())


def notebook_bytes(path: Path) -> bytes:
    """The file itself, or the single notebook inside an exported zip (nothing else is extracted)."""
    if path.suffix != ".zip":
        return path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        names = [
            info.filename
            for info in archive.infolist()
            if info.filename.endswith(".ipynb") and "checkpoint" not in info.filename and not info.is_dir()
        ]
        if len(names) != 1:
            raise ValueError(f"expected one notebook in the zip, found {len(names)}")
        return archive.read(names[0])


def parse_notebook(data: bytes) -> nbformat.NotebookNode:
    """A version-4 notebook, or ValueError saying what is wrong with the file."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError(f"not a notebook: the file holds a JSON {type(raw).__name__} without a cell list")
    try:
        notebook = nbformat.reads(json.dumps(raw), as_version=4)
        nbformat.validate(notebook)
    except Exception as error:  # nbformat raises jsonschema's and its own errors
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"not a valid notebook: {first}") from None
    return notebook


def assignment_name(notebook: nbformat.NotebookNode) -> str:
    otter = notebook.metadata.get("otter")
    if not isinstance(otter, dict):
        raise ValueError(f"metadata.otter is {type(otter).__name__}, not otter's settings")
    name = otter.get("assignment_name")
    if not isinstance(name, str) or not name:
        raise ValueError("metadata.otter holds no assignment_name")
    return name


def _ignored(cell: nbformat.NotebookNode) -> bool:
    """Cells otter never runs when grading (the student notebook's setup cell is one)."""
    metadata = cell.get("metadata", {})
    otter = metadata.get("otter")
    return "otter_ignore" in metadata.get("tags", []) or (isinstance(otter, dict) and bool(otter.get("ignore")))


def code_sources(notebook: nbformat.NotebookNode) -> list[str]:
    """The code grading runs: every code cell but those otter skips."""
    return [cell.source for cell in notebook.cells if cell.cell_type == "code" and not _ignored(cell)]


def manual_answers(notebook: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in notebook.cells if MANUAL_TAG in cell.get("metadata", {}).get("tags", [])]


# ---------------------------------------------------------------- the autograders


@dataclass
class Autograder:
    """One assignment's autograder zip, unpacked once for every submission of the run."""

    name: str
    zip_path: Path
    source: Path  # the unpacked zip
    points: dict[str, float]  # question -> points possible
    imports: list[str]  # the master's own import statements, re-run before the tests

    @property
    def files(self) -> Path:
        return self.source / "files"


def _test_points(test_file: Path) -> tuple[str, float]:
    """``(name, points)`` of an otter test file (``test = {...}``), read without running it."""
    for node in ast.parse(test_file.read_text(encoding="utf8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "test" for t in node.targets):
            test = ast.literal_eval(node.value)
            points = test.get("points")
            cases = sum(len(suite["cases"]) for suite in test["suites"])
            total = sum(points) if isinstance(points, list) else (points if points is not None else cases)
            return test["name"], float(total)
    raise ValueError(f"{test_file}: no `test = {{...}}` dictionary")


def _question_order(name: str) -> tuple[int, str]:
    digits = re.findall(r"\d+", name)
    return (int(digits[-1]) if digits else 0, name)


def _master_imports(reference: nbformat.NotebookNode) -> list[str]:
    """Top-level import statements of the reference notebook's code, answer key excluded."""
    statements = []
    for source in code_sources(reference):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                text = ast.unparse(node)
                if "grpo_core" not in text and "otter" not in text and text not in statements:
                    statements.append(text)
    return statements


def load_autograders(dist: Path, scratch: Path) -> dict[str, Autograder]:
    graders = {}
    for zip_path in sorted(dist.glob("*/autograder/*-autograder.zip")):
        name = zip_path.parent.parent.name
        source = scratch / "autograders" / name
        with zipfile.ZipFile(zip_path) as archive:
            archive.extractall(source)
        points = dict(
            sorted(
                (_test_points(path) for path in (source / "tests").glob("*.py")), key=lambda p: _question_order(p[0])
            )
        )
        reference = nbformat.read(zip_path.parent / f"{name}.ipynb", as_version=4)
        graders[name] = Autograder(name, zip_path, source, points, _master_imports(reference))
    return graders


# ---------------------------------------------------------------- the sandbox


def sandboxed() -> bool:
    """Whether kernels can get a PID namespace and a user of their own (root, util-linux present)."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


def write_kernelspecs(jupyter_dir: Path, python: str, jobs: int, zygote: Path | None) -> list[str]:
    """One kernelspec per job slot (its own sandbox user, its kernel forked by ``zygote`` if any); their names."""
    names = []
    for slot in range(jobs):
        name = f"grade-sandbox-{slot}"
        spec = jupyter_dir / "kernels" / name
        spec.mkdir(parents=True)
        launch = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        if sandboxed():
            sandbox = [python, str(HOMEWORK / "sandbox.py"), str(UID_BASE + slot), "{connection_file}"]
            sandbox += [str(zygote)] if zygote else []
            namespace = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--"]
            launch = ["setpriv", "--pdeathsig", "KILL", "--", *namespace, *sandbox]  # dies with its worker
        kernel = {"argv": launch, "display_name": "Python 3 (grading sandbox)", "language": "python"}
        (spec / "kernel.json").write_text(json.dumps(kernel))
        names.append(name)
    return names


GUARD_SNAPSHOT = """\
def _snapshot():
    import sys
    {imports}
    saved = {{
        name: (module, dict(vars(module)))
        for name, module in list(sys.modules.items())
        if module is not None and name.split(".")[0] in ("builtins", "math", "numpy", "torch")
    }}

    def restore():
        for name, (module, attributes) in saved.items():
            sys.modules[name] = module
            vars(module).update(attributes)

    return restore


{restore} = _snapshot()
del _snapshot
"""

GUARD_RESTORE = """\
{restore}()
{imports}
from otter.execute import Checker as _Checker

_Checker.clear_results()
"""


def prepared_notebook(notebook: nbformat.NotebookNode, grader: Autograder, kernel: str) -> nbformat.NotebookNode:
    """The submission as it is run: kernelspec set to the sandbox, numpy & co. restored before the tests.

    Otter runs the tests in the student's kernel (otter 7 has no other mode for
    notebooks). The first cell added here records every attribute of numpy,
    torch, math and builtins before any student code runs; the last one puts them
    back, re-runs the assignment's own imports (``np`` is numpy again) and drops
    whatever results the student's ``grader.check`` calls recorded, so otter's
    final cell runs every test afresh.
    """
    run = copy.deepcopy(notebook)
    restore = f"_grader_restore_{secrets.token_hex(8)}"
    imports = "\n".join(grader.imports)
    snapshot = GUARD_SNAPSHOT.format(imports="\n    ".join(grader.imports) or "pass", restore=restore)
    run.cells.insert(0, nbformat.v4.new_code_cell(snapshot))
    run.cells.append(nbformat.v4.new_code_cell(GUARD_RESTORE.format(restore=restore, imports=imports)))
    run.metadata.kernelspec = {"name": kernel, "display_name": "Python 3 (grading sandbox)", "language": "python"}
    run.metadata.language_info = {"name": "python"}
    return run


def prepare_scratch(scratch: Path) -> Path:
    """The grader's temporary directory: sandbox users may pass through it, list nothing in it."""
    for sub, mode in (("work", 0o711), ("notebooks", 0o700), ("runtime", 0o700)):
        (scratch / sub).mkdir(mode=mode)
        (scratch / sub).chmod(mode)
    scratch.chmod(0o711)
    return scratch


def _read_only(path: Path) -> None:
    for item in [path, *path.rglob("*")]:
        item.chmod(0o555 if item.is_dir() else 0o444)


class Workers:
    """``jobs`` long-lived ``grade_worker.py`` processes; each grades one submission at a time."""

    def __init__(self, python: str, jobs: int, scratch: Path, timeout: float, *, warm: bool = True):
        """``warm``: kernels are forked by ``zygote.py`` (when sandboxed), not started afresh."""
        self.python, self.scratch, self.timeout = python, scratch, timeout
        jupyter = scratch / "jupyter"
        self.env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
        self.env.update(JUPYTER_PATH=str(jupyter), JUPYTER_RUNTIME_DIR=str(scratch / "runtime"), PYTHONNOUSERSITE="1")
        self.zygote_socket = scratch / "runtime" / "zygote.sock" if sandboxed() and warm else None  # root's alone
        self.zygote = self._start_zygote(self.zygote_socket) if self.zygote_socket else None
        self.kernels = write_kernelspecs(jupyter, python, jobs, self.zygote_socket)
        self.free = list(range(jobs))
        self.lock = threading.Lock()
        self.processes: dict[int, tuple[subprocess.Popen, io.TextIOWrapper]] = {}

    def _start_zygote(self, socket_path: Path) -> subprocess.Popen:
        """``zygote.py``, which forks every kernel with ipykernel, otter and numpy already imported."""
        log = (self.scratch / "zygote.log").open("ab")
        command = [self.python, str(HOMEWORK / "zygote.py"), str(socket_path)]
        zygote = subprocess.Popen(command, stdout=log, stderr=log, env=self.env, start_new_session=True)
        while not socket_path.exists():  # it listens before it imports: a kernel asked for early waits in line
            if zygote.poll() is not None:
                raise RuntimeError(f"zygote.py exited: {(self.scratch / 'zygote.log').read_text()}")
            time.sleep(0.005)
        return zygote

    def _start(self, slot: int):
        read, write = os.pipe()
        log = (self.scratch / f"worker-{slot}.log").open("ab")
        process = subprocess.Popen(
            [self.python, str(HOMEWORK / "grade_worker.py"), str(write)],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=log,
            pass_fds=(write,),
            env=self.env,
            text=True,
            start_new_session=True,
        )
        os.close(write)
        self.processes[slot] = (process, os.fdopen(read, "r"))
        return self.processes[slot]

    def _stop(self, slot: int) -> None:
        process, answers = self.processes.pop(slot)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        process.wait()
        answers.close()

    def run(self, notebook: nbformat.NotebookNode, grader: Autograder) -> dict:
        with self.lock:
            slot = self.free.pop()
        try:
            return self._run_in(slot, notebook, grader)
        finally:
            with self.lock:
                self.free.append(slot)

    def _workdir(self, slot: int, grader: Autograder) -> tuple[Path, Path]:
        """A fresh directory: read-only tests and autograder files, a scratch dir only the sandbox user owns."""
        workdir = Path(tempfile.mkdtemp(prefix="sub-", dir=self.scratch / "work"))
        shutil.copytree(grader.source / "tests", workdir / "tests")
        if grader.files.is_dir():
            shutil.copytree(grader.files, workdir, dirs_exist_ok=True)
        _read_only(workdir)
        scratch = workdir / "scratch"
        workdir.chmod(0o755)
        scratch.mkdir()
        if sandboxed():
            os.chown(scratch, UID_BASE + slot, UID_BASE + slot)
        scratch.chmod(0o700)
        workdir.chmod(0o555)
        return workdir, scratch

    def _run_in(self, slot: int, notebook: nbformat.NotebookNode, grader: Autograder) -> dict:
        workdir, scratch = self._workdir(slot, grader)
        kernel = self.kernels[slot]
        path = self.scratch / "notebooks" / f"{workdir.name}.ipynb"
        task = {"id": workdir.name, "notebook": str(path), "workdir": str(workdir), "scratch": str(scratch)}
        task.update(kernel=kernel, timeout=self.timeout)
        try:
            nbformat.write(prepared_notebook(notebook, grader, kernel), path)
            process, answers = self.processes.get(slot) or self._start(slot)
            process.stdin.write(json.dumps(task) + "\n")
            process.stdin.flush()
            line = _readline(answers, self.timeout + 120)
            answer = json.loads(line) if line else {}
            if answer.get("id") != task["id"]:
                raise RuntimeError("the grading worker died")
            return answer
        except (OSError, TimeoutError, RuntimeError, ValueError) as error:
            if slot in self.processes:  # a worker that failed once is replaced for the next submission
                self._stop(slot)
            return {"error": f"grading failed: {error or type(error).__name__}"}
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
            path.unlink(missing_ok=True)

    def close(self) -> None:
        for slot in list(self.processes):
            process, _answers = self.processes[slot]
            process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=30)
            self._stop(slot)
        if self.zygote:
            self.zygote.kill()
            self.zygote.wait()


def _readline(handle, timeout: float) -> str:
    """One line from a worker ("" if it died), or TimeoutError when it is stuck beyond any kernel's limit."""
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(handle.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        raise TimeoutError("the grading worker did not answer")
    return result[0]


# ---------------------------------------------------------------- sheets, feedback, roster


def read_roster(path: Path) -> list[tuple[str, str]]:
    """``(student_id, file)`` pairs; ``file`` is a submission path or folder relative to SUBMISSIONS."""
    with path.open(newline="", encoding="utf8") as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames or not {"student_id", "file"} <= set(reader.fieldnames):
            raise ValueError(f"roster: {path} needs the columns student_id and file")
        return [(row["student_id"].strip(), row["file"].strip().strip("/")) for row in reader if row["file"].strip()]


def student_of(file: str, roster: list[tuple[str, str]]) -> str:
    for student, prefix in roster:
        if file == prefix or file.startswith(prefix + "/"):
            return student
    return ""


class Records:
    """Where results go: one sheet per assignment, ``unmatched.csv``, feedback files, written answers."""

    def __init__(self, out: Path, graders: dict[str, Autograder]):
        self.out, self.graders = out, graders
        base = ["student_id", "file", "sha256", "graded_at"]
        self.sheets = {}
        for name, grader in graders.items():
            header = [*base, *grader.points, "total", "possible", "suspicious", "error"]
            possible = {"file": POINTS_ROW, **grader.points, "possible": sum(grader.points.values())}
            self.sheets[name] = Sheet(out / f"{name}.csv", header, [{k: _text(v) for k, v in possible.items()}])
        self.unmatched = Sheet(out / "unmatched.csv", [*base, "assignment", "suspicious", "error"])
        self.manual_lock = threading.Lock()

    def feedback_path(self, row: Row) -> Path:
        return self.out / "feedback" / row.assignment / (row.file.replace("/", "__") + ".json")

    def record(self, row: Row, feedback: dict | None, answers: list[str]) -> None:
        cells = {
            "student_id": row.student_id,
            "file": row.file,
            "sha256": row.sha256,
            "graded_at": row.graded_at,
            "suspicious": "; ".join(row.suspicious),
            "error": row.error,
        }
        if row.assignment not in self.sheets:
            self.unmatched.put({**cells, "assignment": row.assignment})
            return
        points = self.graders[row.assignment].points
        if not row.error:
            cells.update({q: row.scores.get(q, 0.0) for q in points})
            cells.update(total=sum(row.scores.values()), possible=sum(points.values()))
        path = self.feedback_path(row)
        record = {"file": row.file, "student_id": row.student_id, "assignment": row.assignment, "sha256": row.sha256}
        record.update(graded_at=row.graded_at, error=row.error, written_answers=answers, otter=feedback)
        _write_atomically(path, json.dumps(record, indent=1))
        self.sheets[row.assignment].put(cells)
        self._write_manual(row.assignment)

    def _write_manual(self, name: str) -> None:
        """``manual-NAME.md``: every written answer of every submission with feedback, by question."""
        with self.manual_lock:
            records = [json.loads(p.read_text()) for p in sorted((self.out / "feedback" / name).glob("*.json"))]
            count = max((len(record["written_answers"]) for record in records), default=0)
            lines = [f"# {name}: written answers, for grading by hand", ""]
            for number in range(count):
                lines += [f"## Written answer {number + 1}", ""]
                for record in records:
                    answers = record["written_answers"]
                    who = f"{record['file']}" + (f" ({record['student_id']})" if record["student_id"] else "")
                    text = answers[number].strip() if number < len(answers) else "(no answer cell)"
                    lines += [f"### {who}", "", text or "(empty)", ""]
            _write_atomically(self.out / f"manual-{name}.md", "\n".join(lines))


def _text(value: object) -> str:
    return f"{value:g}" if isinstance(value, float | int) else str(value)


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(handle, "w", encoding="utf8") as out:
        out.write(text)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)


# ---------------------------------------------------------------- grading a folder


def grade_one(
    path: Path, folder: Path, graders: dict[str, Autograder], workers: Workers
) -> tuple[Row, dict | None, list[str]]:
    """Grade one submission; every failure becomes the row's error, never an exception."""
    row = Row(
        file=path.relative_to(folder).as_posix(),
        graded_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )
    try:
        data = notebook_bytes(path)
        row.sha256 = hashlib.sha256(data).hexdigest()[:16]
        notebook = parse_notebook(data)
        row.suspicious = findings(code_sources(notebook))
        row.assignment = assignment_name(notebook)
    except (ValueError, OSError, zipfile.BadZipFile) as error:
        row.error = f"unreadable submission: {error}"
        return row, None, []
    if row.assignment not in graders:
        row.error = f"assignment {row.assignment!r} is not one of: {', '.join(graders)}"
        return row, None, []
    answers = manual_answers(notebook)
    answer = workers.run(notebook, graders[row.assignment])
    if "error" in answer:
        row.error = answer["error"]
        return row, None, answers
    row.scores = {test["name"]: test["score"] for test in answer["tests"]}
    unknown = set(row.scores) - set(graders[row.assignment].points)
    if unknown:
        row.error, row.scores = f"results for unknown questions: {sorted(unknown)}", {}
    return row, answer["feedback"], answers


def _stale(graders: dict[str, Autograder]) -> list[str]:
    """Assignments whose master changed after their autograder was built."""
    stale = []
    for name, grader in graders.items():
        master = HOMEWORK / name / f"{name}.md"
        if master.is_file() and master.stat().st_mtime > grader.zip_path.stat().st_mtime:
            stale.append(name)
    return stale


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks (.ipynb or exported .zip)")
    parser.add_argument(
        "--dist", type=Path, default=HOMEWORK / "dist", help="where `make homework` built the autograders"
    )
    parser.add_argument("--out", type=Path, help="where sheets and feedback go (default: DIST/grades)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="submissions graded at once")
    parser.add_argument("--timeout", type=_positive, default=600.0, help="seconds one submission may run")
    parser.add_argument("--roster", type=Path, help="CSV with columns student_id,file (file: path or folder)")
    parser.add_argument("--python", default=sys.executable, help="the Python environment that runs the notebooks")
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a folder")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    roster = read_roster(args.roster) if args.roster else []
    found = submissions(args.submissions)
    if not found:
        parser.error(f"no .ipynb or .zip submission under {args.submissions}")
    if not sandboxed():
        print("warning: not root or no unshare: kernels run as this user, unisolated", file=sys.stderr)
    out = args.out or args.dist / "grades"
    with tempfile.TemporaryDirectory(prefix="grade-") as temporary:
        scratch = prepare_scratch(Path(temporary))
        graders = load_autograders(args.dist, scratch)
        if not graders:
            parser.error(f"no autograder in {args.dist}/*/autograder/: run `make homework` first")
        for name in _stale(graders):
            print(
                f"warning: homework/{name}/{name}.md is newer than its autograder; run `make homework`", file=sys.stderr
            )
        records = Records(out, graders)
        workers = Workers(args.python, args.jobs, scratch, args.timeout)

        def grade_and_record(path: Path) -> Row:
            try:
                row, feedback, answers = grade_one(path, args.submissions, graders, workers)
            except Exception as error:  # the grader's own failure still becomes a row
                row = Row(
                    file=path.relative_to(args.submissions).as_posix(),
                    error=f"grader error: {type(error).__name__}: {error}",
                )
                feedback, answers = None, []
            row.student_id = student_of(row.file, roster)
            records.record(row, feedback, answers)
            status = row.error or f"{sum(row.scores.values()):g} / {sum(graders[row.assignment].points.values()):g}"
            print(f"{row.file}: {row.assignment or '?'}: {status}", flush=True)
            return row

        try:
            with ThreadPoolExecutor(max_workers=args.jobs) as pool:
                rows = list(pool.map(grade_and_record, found))
        finally:
            workers.close()
    failed = sum(bool(row.error) for row in rows)
    print(f"{len(rows)} submissions, {failed} not graded (see the error column) -> {out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
