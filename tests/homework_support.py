"""What the homework tests share: the fixture data, one build of every assignment per test run, and the
submissions made from it (references, wrong answers, the student notebooks), plus reading the grade sheets."""

from __future__ import annotations

import contextlib
import copy
import csv
import fcntl
import importlib
import json
import os
import re
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import nbformat
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]
HOMEWORK = ROOT / "homework"
FIXTURES = ROOT / "tests" / "fixtures" / "homework"
# The plausible mistakes of every assignment (tests/homework/test_homework_mistakes.py); those with a `file` are
# also handed in as files and graded in jails (WRONG: tests/homework/test_grading.py and
# tests/homework/test_grading_clean.py).
MISTAKES = tomllib.loads((FIXTURES / "mistakes.toml").read_text(encoding="utf8"))["mistake"]
WRONG = [mistake for mistake in MISTAKES if "file" in mistake]
INLINE_MARKERS = ("# BEGIN SOLUTION", "# END SOLUTION")
# Files a hostile submission tries to write: none may exist after grading.
MARKERS = [ROOT / "homework" / "pwned.txt", Path("/tmp/pwned-by-a-submission"), Path("/dev/shm/pwned-by-a-submission")]

sys.path.insert(0, str(HOMEWORK))  # the scripts import one another by name, from their folder
build, grade, leaks, checker, runner, jail = (
    importlib.import_module(name) for name in ("build", "grade", "leaks", "checker", "runner", "jail")
)
NAMES = build.assignment_names()


def run_folder(tmp_path_factory) -> Path:
    """The temporary folder that every test process of the run shares (each xdist worker has one of its own in it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def machine_memory(tmp_path_factory) -> Iterator[None]:
    """Held while a test fills the machine's tmpfs and shared memory (tests/homework/test_grading.py's bombs) or
    measures them machine-wide (the red team's memory test): one such test at a time over the run's processes. A
    bomb filling its jail's file systems on the other xdist worker failed the memory test (1537 MiB against 1024)."""
    with FileLock(str(run_folder(tmp_path_factory) / "machine-memory.lock")):
        yield


def shared_dist(tmp_path_factory) -> Path:
    """Every assignment built by ``otter assign``, once per test run: the first test process that asks builds it
    (in that process, one assignment after the other: ``build.assign``) under a file lock in the run's shared
    temporary folder, the others reuse it. Otter's own run of its tests on the solutions notebook (a kernel per
    assignment, most of ``make homework``'s time) is left out: tests/homework/test_grading_clean.py grades every
    reference solution with the zip's own grader, and tests/homework/test_homework.py runs every public test with
    otter on them."""
    shared = run_folder(tmp_path_factory)
    out, done = shared / "homework-dist", shared / "homework-dist.done"
    with FileLock(str(shared / "homework-dist.lock")):
        if not done.exists():
            package = build.package_grpo_core(shared / "homework-package")
            findings = {name: build.build(name, out, package, run_tests=False) for name in NAMES}
            assert findings == {name: [] for name in NAMES}, findings
            done.touch()
    return out


def questions(name: str) -> dict[str, int]:
    """Points possible per question of an assignment (one per test case)."""
    return {q["name"]: len(q["cases"]) for q in checker.make_key(build.master_notebook(name))["questions"]}


def points_of(mistake: dict) -> dict[str, int]:
    """The points a mistake of the fixture earns per question: its ``scores`` where it lists one, else full marks."""
    return {**questions(mistake["assignment"]), **mistake["scores"]}


def master_code(name: str) -> list[str]:
    """The master's code cells outside its tests: the reference solution, as the autograder notebook holds it."""
    found, block = [], None
    for cell in build.master_notebook(name).cells:
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "raw" and first in ("# BEGIN TESTS", "# END TESTS"):
            block = first.split()[1]
        elif cell.cell_type == "code" and block != "BEGIN":
            found.append(cell.source)
    return found


def blanked(source: str) -> str:
    """A cell as the student receives it: solution lines become ``...`` (otter assign's rule)."""
    lines, inside = [], False
    for line in source.splitlines():
        indent = line[: len(line) - len(line.lstrip())]
        if line.strip() in INLINE_MARKERS:
            inside = line.strip() == INLINE_MARKERS[0]
            lines += [f"{indent}..."] if inside else []
        elif line.endswith("# SOLUTION"):
            lines.append(re.sub(r"=.*", "= ...", line))
        elif not inside:
            lines.append(line)
    return "\n".join(lines)


def patched(name: str, patch: list[list[str]] | None) -> list[str]:
    """The master's code cells with each ``[old, new]`` of ``patch`` applied once (``old`` must occur exactly once,
    so a fixture cannot go stale silently), or blanked as the student receives them (``patch`` None)."""
    cells = master_code(name)
    if patch is None:
        return [blanked(source) for source in cells]
    for old, new in patch:
        hits = [i for i, source in enumerate(cells) if old in source]
        assert len(hits) == 1 and cells[hits[0]].count(old) == 1, f"{name}: stale patch {old!r}"
        cells[hits[0]] = cells[hits[0]].replace(old, new)
    return cells


def filled(student: nbformat.NotebookNode, solutions: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student notebook with every answer cell holding the reference answer (markers removed)."""
    answered = copy.deepcopy(student)
    mine_cells = answered.cells[1:]  # the student notebook's first cell writes its public tests
    assert len(mine_cells) == len(solutions.cells)
    for mine, reference in zip(mine_cells, solutions.cells, strict=True):
        if "otter_answer_cell" in mine.metadata.get("tags", []):
            assert "otter_assign_solution_cell" in reference.metadata.get("tags", [])
            lines = [line for line in reference.source.splitlines() if line.strip() not in INLINE_MARKERS]
            mine.source = unmarked("\n".join(lines))
    return answered


def unmarked(source: str) -> str:
    """``source`` without otter's ``# SOLUTION`` line markers."""
    return re.sub(r"[ \t]*# SOLUTION$", "", source, flags=re.MULTILINE)


def wrong_submission(dist: Path, fixture: dict) -> nbformat.NotebookNode:
    """The student notebook with the reference answers and the fixture's mistake (its ``patch``)."""
    name = fixture["assignment"]
    student = nbformat.read(dist / name / "student" / f"{name}.ipynb", as_version=4)
    solutions = nbformat.read(dist / name / "autograder" / f"{name}.ipynb", as_version=4)
    notebook = filled(student, solutions)
    for old, new in ([unmarked(text) for text in pair] for pair in fixture["patch"]):  # as filled() writes them
        hits = [cell for cell in notebook.cells if old in cell.source]
        assert len(hits) == 1 and hits[0].source.count(old) == 1, f"{fixture.get('file', fixture['mistake'])} is stale"
        hits[0].source = hits[0].source.replace(old, new)
    return notebook


def notebook(dist: Path, name: str, version: str) -> nbformat.NotebookNode:
    return nbformat.read(dist / name / version / f"{name}.ipynb", as_version=4)


def reference(dist: Path, name: str) -> nbformat.NotebookNode:
    """The student notebook with every answer filled in from the reference solutions."""
    return filled(notebook(dist, name, "student"), notebook(dist, name, "autograder"))


def with_cell(notebook: nbformat.NotebookNode, source: str, *, at: int | None = None) -> nbformat.NotebookNode:
    changed = copy.deepcopy(notebook)
    cell = nbformat.v4.new_code_cell(source)
    changed.cells.insert(len(changed.cells) if at is None else at, cell)
    return changed


def write(notebook: nbformat.NotebookNode, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


def sheets(out: Path) -> dict[str, dict[str, str]]:
    """Every row of every sheet in ``out``, by file (the points-possible rows under their sheet's name)."""
    rows = {}
    for sheet in sorted(out.glob("*.csv")):
        with sheet.open(newline="") as handle:
            for row in csv.DictReader(handle):
                key = f"{grade.POINTS_ROW} {sheet.stem}" if row["file"] == grade.POINTS_ROW else row["file"]
                assert key not in rows, f"{key} appears twice"
                rows[key] = {**row, "sheet": sheet.stem}
    return rows


def scores(row: dict[str, str], name: str) -> dict[str, float]:
    return {question: float(row[question]) for question in questions(name)}


def full_marks(row: dict[str, str], name: str) -> None:
    assert row["sheet"] == name and row["error"] == ""
    assert scores(row, name) == questions(name)
    assert float(row["total"]) == float(row["possible"]) == sum(questions(name).values())


def outside_state() -> tuple:
    """What a submission must not change: marker files, the homework folder's status, processes of the jails' users."""
    git = ["git", "status", "--porcelain", "--", "homework"]
    status = subprocess.run(git, cwd=ROOT, capture_output=True, text=True).stdout
    return [path.exists() for path in MARKERS], status, jail_processes()


def leased_by_a_running_grader(uid: int) -> bool:
    """Whether a grading run that is still going holds the lease of jail uid ``uid`` (:func:`jail.lease_uid`): its
    processes are that run's. A test asks once its own grading has ended, so its own leases are released."""
    try:
        lock = os.open(jail.UID_LOCKS / str(uid), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(lock)


def jail_processes() -> list[int]:
    """Processes of the jails' users that no grading run still going owns. Another pytest-xdist worker grades at
    the same time: its jails run under uids it leased, or (a root process of its own) started them. A process left
    behind under a uid no running grader holds, reparented to init or not, is counted unless it is a zombie: one
    runs nothing and holds nothing (as :meth:`jail.Jail._stop` counts), and a closed jail's first process stays one
    until the machine's init collects it, which may come after its run has released the uid."""
    parents, found = {}, []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
                parents[int(entry.name)] = int(parent)
                uid = entry.stat().st_uid
                alive_in_a_jail = jail.UID_BASE <= uid < jail.UID_BASE + jail.UIDS and state != "Z"
                if alive_in_a_jail and not leased_by_a_running_grader(uid):
                    found.append(int(entry.name))
        except OSError:
            pass
    me = os.getpid()
    others = {pid for pid, parent in parents.items() if parent == parents.get(me) and pid != me}  # fellow workers

    def started_by_another_worker(pid: int) -> bool:
        while pid > 1 and pid != me:
            if pid in others:
                return True
            pid = parents.get(pid, 0)
        return False

    return [pid for pid in found if not started_by_another_worker(pid)]


class InProcess:
    """The jailed runner's part, played in this process (for notebooks we wrote: the reference solutions); one
    request at a time, so that threads grading at once see each other's otter stand-in never."""

    lock = threading.Lock()
    deadline = float("inf")  # what the checker charges for reading replies comes off a time no jail here keeps

    def ask(self, request: dict, seconds: float | None = None) -> dict:  # no request is timed in this process
        with self.lock:
            otter = sys.modules.get("otter")
            try:  # the runner puts a stand-in for otter in sys.modules, as it does in the jail
                if not hasattr(self, "namespace"):
                    self.namespace, self.otter = runner.fresh_namespace(), sys.modules["otter"]
                sys.modules["otter"] = self.otter
                reply = runner.answer(request, self.namespace)
            finally:
                sys.modules.pop("otter")
                if otter is not None:
                    sys.modules["otter"] = otter
        return json.loads(json.dumps(reply))


def checked(key: dict, cells: list[str]) -> dict[str, list[tuple[bool, bool]]]:
    """``{question: [(hidden, passed), ...]}`` of code ``cells`` as the grader's checker scores them (the jail's
    part played in this process by :class:`InProcess`)."""
    _scores, feedback, error = checker.grade(key, list(enumerate(cells, 1)), InProcess())
    assert error == ""
    results: dict[str, list[tuple[bool, bool]]] = {}
    for entry in feedback:
        results.setdefault(entry["question"], []).append((entry["hidden"], entry["passed"]))
    return results
