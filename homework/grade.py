"""Grade a folder of submissions, each in its own jail, into one sheet per assignment.

    python homework/grade.py SUBMISSIONS [--dist homework/dist] [--out DIR] [--jobs N] [--timeout SECONDS]
                             [--cell-timeout SECONDS] [--call-timeout SECONDS] [--roster roster.csv]
                             [--deadline 2026-12-01T23:59+00:00] [--python PYTHON]

Every file under SUBMISSIONS (any depth; ``.ipynb_checkpoints`` folders skipped) gets exactly one
row. A notebook (``*.ipynb``) or a zip made by the notebook's export cell (only the one notebook
inside is read) is matched to its assignment by the name otter stores in it
(``metadata.otter.assignment_name``) and graded against that assignment's key
(``DIST/NAME/autograder/key.json``); anything else — another kind of file, a symlink, a file or zip
member over :data:`MAX_BYTES`, a notebook that does not parse or names no known assignment — gets
a row in ``unmatched.csv`` saying why. Sizes are checked before anything is read.

Each notebook's code runs in a jail (``jail.py``: bubblewrap, seccomp, no network, limits) with
the Python environment of ``--python``; the jail returns answers as data and ``checker.py`` scores
them in this process. ``--timeout`` bounds each submission's wall time (and its CPU seconds), restarts included;
``--cell-timeout`` each of its cells (one that does not finish is left out, the rest graded) and ``--call-timeout``
each call of its functions by a test (a call that does not return fails that test).

``OUT`` (default ``DIST/grades``) receives the sheets (one row per file, merged by file, each student's
attempts numbered and the latest marked as the one that counts), ``unmatched.csv``, feedback, written answers and
the class reports: ``records.py`` says what each holds. SUBMISSIONS may also be one student's folder or file
inside a class folder graded before into the same ``OUT``: its files keep the names, so the rows, of that run
(:func:`class_folder`).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import checker
from jail import Jail, python_paths
from records import POINTS_ROW as POINTS_ROW  # the sheets' first row, for readers of them
from records import Records, Row, read_roster, student_of, utc

HOMEWORK = Path(__file__).resolve().parent
MANUAL_TAG = "manual-answer"
MAX_BYTES = 16 * 2**20  # a notebook, a zip, or the notebook inside a zip
MAX_MEMBERS = 1000
MAX_CELLS = 5000  # a homework notebook has a few dozen
GRADER_ERROR = "grader error"  # how a row's error that is the grader's failure, not the submission's, begins
# Run by --python with module names before grading: imports (so compiles, and keeps the bytecode of) each module
# whose bytecode is not there and current, with all it imports. A jail sees the environment read-only: without
# this, each jail would compile numpy (and torch: 2.4 CPU-s a jail) again. A check costs 0.03 CPU-s, importing
# numpy and torch 2.4 (bench/bench_grading_cpu.py).
WARM_UP = """\
import importlib, importlib.util, os, sys
for name in sys.argv[1:]:
    spec = importlib.util.find_spec(name)
    cached, origin = (spec.cached, spec.origin) if spec else (None, None)
    if cached and not (os.path.exists(cached) and os.stat(cached).st_mtime >= os.stat(origin).st_mtime):
        importlib.import_module(name)
"""


def submissions(folder: Path) -> list[Path]:
    """Every file and symlink under ``folder`` (symlinked folders are not entered)."""
    found = []
    for directory, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if name != ".ipynb_checkpoints"]
        links = [name for name in folders if os.path.islink(os.path.join(directory, name))]
        found += [Path(directory, name) for name in files + links]
    return sorted(found)


def file_name(path: Path, folder: Path) -> str:
    """The path below ``folder`` as text, one-to-one: a byte that is not UTF-8 is written ``\\xNN`` and a
    backslash ``\\\\`` (so a file literally named ``caf\\xe9`` is not the one named ``caf`` and byte 0xE9)."""
    text = path.relative_to(folder).as_posix().replace("\\", "\\\\")
    return text.encode("utf8", "surrogateescape").decode("utf8", "backslashreplace")


def read_bytes(path: Path) -> bytes:
    """The file itself, or the single notebook inside an exported zip; never a symlink, never over the cap."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise ValueError("a symlink or special file, refused")
    if info.st_size > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES // 2**20} MiB")
    if path.suffix not in (".ipynb", ".zip"):
        raise ValueError("not a notebook (.ipynb) or exported zip")
    with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
        data = handle.read(MAX_BYTES + 1)
    if path.suffix == ".ipynb":
        return data
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise ValueError(f"a zip of more than {MAX_MEMBERS} files")
        notebooks = [m for m in members if m.filename.endswith(".ipynb") and "checkpoint" not in m.filename]
        if len(notebooks) != 1:
            raise ValueError(f"expected one notebook in the zip, found {len(notebooks)}")
        if notebooks[0].file_size > MAX_BYTES:
            raise ValueError(f"the notebook in the zip is larger than {MAX_BYTES // 2**20} MiB")
        with archive.open(notebooks[0]) as member:
            data = member.read(MAX_BYTES + 1)  # the header's size may lie
        if len(data) > MAX_BYTES:
            raise ValueError(f"the notebook in the zip is larger than {MAX_BYTES // 2**20} MiB")
        return data


def parse_notebook(data: bytes) -> dict:
    """What grading reads of a notebook, as a notebook's JSON holds it (each cell's ``cell_type``, ``source`` and
    ``metadata.tags``; ``metadata.otter``), or ValueError saying what is wrong with the file. Nothing else is read,
    nor validated: the cost is one ``json.loads`` of at most :data:`MAX_BYTES` and a pass over at most
    :data:`MAX_CELLS` cells, before any limit of the jail holds. (No nbformat: importing it costs 1.5 CPU-s here,
    mostly jsonschema's URI grammar, for a validation grading does not do.)"""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"not JSON: {type(error).__name__}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError(f"not a notebook: the file holds a JSON {type(raw).__name__} without a cell list")
    if len(raw["cells"]) > MAX_CELLS:
        raise ValueError(f"not a valid notebook: more than {MAX_CELLS} cells")
    metadata = raw.get("metadata", {})
    if not isinstance(metadata, dict):
        raise ValueError("not a valid notebook: its metadata is not a JSON object")
    cells = [_cell(cell, number) for number, cell in enumerate(raw["cells"], 1)]
    return {"cells": cells, "metadata": {"otter": metadata.get("otter")}}


def _cell(cell: object, number: int) -> dict:
    source = cell.get("source", "") if isinstance(cell, dict) else None
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    metadata = cell.get("metadata", {}) if isinstance(cell, dict) else None
    tags = metadata.get("tags", []) if isinstance(metadata, dict) else None
    if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str) or not isinstance(source, str):
        raise ValueError(f"not a valid notebook: cell {number} has no cell_type and source text")
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise ValueError(f"not a valid notebook: cell {number}'s metadata.tags is not a list of text")
    return {"cell_type": cell["cell_type"], "source": source, "metadata": {"tags": tags}}


def assignment_name(notebook: dict) -> str:
    otter = notebook["metadata"].get("otter")
    if not isinstance(otter, dict):
        raise ValueError(f"metadata.otter is {type(otter).__name__}, not otter's settings")
    name = otter.get("assignment_name")
    if not isinstance(name, str) or not name:
        raise ValueError("metadata.otter holds no assignment_name")
    return name


def code_sources(notebook: dict) -> list[tuple[int, str]]:
    """The code grading runs, as ``(number of the cell in the notebook, from 1; source)``: every code cell but
    those otter skips (tagged ``otter_ignore``)."""
    return [
        (number, cell["source"])
        for number, cell in enumerate(notebook["cells"], 1)
        if cell["cell_type"] == "code" and "otter_ignore" not in cell["metadata"]["tags"]
    ]


def manual_answers(notebook: dict) -> list[str]:
    return [cell["source"] for cell in notebook["cells"] if MANUAL_TAG in cell["metadata"]["tags"]]


def load_keys(dist: Path) -> dict[str, dict]:
    """``{assignment: key}`` for every ``DIST/NAME/autograder/key.json``."""
    return {path.parent.parent.name: checker.load_key(path) for path in sorted(dist.glob("*/autograder/key.json"))}


def load_rubrics(dist: Path) -> dict[str, str]:
    """``{assignment: rubric.md}`` for every ``DIST/NAME/autograder/rubric.md`` (the written answers' rubrics)."""
    return {path.parent.parent.name: path.read_text() for path in sorted(dist.glob("*/autograder/rubric.md"))}


# ---------------------------------------------------------------- grading a folder


class Grader:
    """Grades one submission at a time per job slot, each in a fresh jail."""

    def __init__(
        self,
        keys: dict[str, dict],
        python: str,
        timeout: float,
        call_timeout: float = checker.CALL_SECONDS,
        cell_timeout: float = checker.CELL_SECONDS,
    ):
        self.keys, self.timeout, self.call_timeout, self.cell_timeout = keys, timeout, call_timeout, cell_timeout
        self.paths = python_paths(python)
        self.python = python
        # The jail sees the environment read-only: Python compiles here, once, what every jail imports.
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([python, "-c", WARM_UP, "numpy", "torch"], env=env, capture_output=True, check=False)

    def jail(self) -> Jail:
        return Jail(self.python, self.paths, self.timeout)

    def grade_one(self, path: Path, folder: Path) -> tuple[Row, list[dict], list[str]]:
        """Grade one file; every failure becomes the row's error, never an exception."""
        row = Row(file=file_name(path, folder))
        row.graded_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        try:
            data = read_bytes(path)
            row.sha256 = hashlib.sha256(data).hexdigest()[:16]
            notebook = parse_notebook(data)
            row.assignment = assignment_name(notebook)
        except (ValueError, OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as error:
            row.error = f"unreadable submission: {error}"
            return row, [], []
        if row.assignment not in self.keys:
            row.error = f"assignment {row.assignment[:100]!r} is not one of: {', '.join(self.keys)}"
            return row, [], []
        jail = self.jail()
        try:
            key, cells = self.keys[row.assignment], code_sources(notebook)
            row.scores, feedback, row.error = checker.grade(key, cells, jail, self.call_timeout, self.cell_timeout)
        finally:
            jail.close()
        return row, feedback, manual_answers(notebook)


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def _deadline(text: str) -> str:
    """An ISO 8601 time with its zone, as the UTC text ``submitted_at`` is compared with."""
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"give the deadline's time zone, e.g. {text}+00:00")
    return utc(moment.timestamp())


def class_folder(out: Path, graded: Path) -> Path:
    """The folder that file names are relative to: the outermost folder this output folder graded before that holds
    ``graded`` (so a regrade of one student's folder or file names its files as the class's run did, and replaces
    their rows, roster ids included), else ``graded`` itself (a file's own folder), which is remembered."""
    graded = graded.resolve()
    memory = out / "class-folders"
    known = [Path(os.fsdecode(line)) for line in memory.read_bytes().splitlines()] if memory.is_file() else []
    holding = [folder for folder in known if folder == graded or folder in graded.parents]
    if holding:
        return min(holding, key=lambda folder: len(folder.parts))
    folder = graded if graded.is_dir() else graded.parent
    descriptor = os.open(memory, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(descriptor, "ab") as handle:
        handle.write(os.fsencode(folder) + b"\n")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks (.ipynb or exported .zip), "
                        "or one student's folder or file in a class folder graded before")  # fmt: skip
    parser.add_argument("--dist", type=Path, default=HOMEWORK / "dist", help="where `make homework` built the keys")
    parser.add_argument("--out", type=Path, help="where sheets and feedback go (default: DIST/grades)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="submissions graded at once")
    parser.add_argument("--timeout", type=_positive, default=600.0, help="seconds one submission may run")
    parser.add_argument(
        "--call-timeout", type=_positive, default=checker.CALL_SECONDS,
        help="seconds one call of a student's function may run (a test whose call does not return fails)",
    )  # fmt: skip
    parser.add_argument(
        "--cell-timeout", type=_positive, default=checker.CELL_SECONDS,
        help="seconds one cell of a notebook may run (a cell that does not finish is left out, the rest graded)",
    )  # fmt: skip
    parser.add_argument("--roster", type=Path, help="CSV with columns student_id,file (file: path or folder)")
    parser.add_argument("--deadline", type=_deadline, help="ISO 8601 time with zone: later hand-ins are marked late")
    parser.add_argument("--python", default=sys.executable, help="the Python environment that runs the notebooks")
    args = parser.parse_args(argv)
    if not args.submissions.exists():
        parser.error(f"{args.submissions} does not exist")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    try:
        roster = read_roster(args.roster) if args.roster else []
    except (OSError, ValueError) as error:
        parser.error(str(error))
    keys = load_keys(args.dist)
    if not keys:
        parser.error(f"no key in {args.dist}/*/autograder/: run `make homework` first")
    for name in keys:
        master = HOMEWORK / name / f"{name}.md"
        if master.is_file() and master.stat().st_mtime > (args.dist / name / "autograder" / "key.json").stat().st_mtime:
            print(f"warning: homework/{name}/{name}.md is newer than its key; run `make homework`", file=sys.stderr)
    out = args.out or args.dist / "grades"
    records = Records(out, keys, args.deadline, load_rubrics(args.dist))
    folder = class_folder(out, args.submissions)
    grader = Grader(keys, args.python, args.timeout, args.call_timeout, args.cell_timeout)

    def grade_and_record(path: Path) -> Row:
        try:
            row, feedback, answers = grader.grade_one(path, folder)
        except Exception as error:  # the grader's own failure still becomes a row
            row, feedback, answers = Row(file=file_name(path, folder)), [], []
            row.error = f"{GRADER_ERROR}: {type(error).__name__}"
        row.student_id = student_of(row.file, roster)
        row.submitted_at = utc(os.lstat(path).st_mtime)  # the hand-in time: see records.py
        try:
            records.record(row, feedback, answers)
        except (OSError, ValueError) as error:  # e.g. a full disk: say so, and go on with the next file
            print(f"{row.file!r}: could not be recorded: {type(error).__name__}", file=sys.stderr)
        status = row.error or f"{sum(row.scores.values()):g} / {sum(records.points[row.assignment].values()):g}"
        line = f"{row.file!r}: {row.assignment[:100] or '?'}: {status}"
        print(line.encode("utf-8", "backslashreplace").decode("utf-8"), flush=True)  # a lone surrogate, escaped
        return row

    found = [args.submissions] if args.submissions.is_file() or args.submissions.is_symlink() else []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(grade_and_record, found or submissions(args.submissions)))
    records.close(roster)
    failed = sum(bool(row.error) for row in rows)
    print(f"{len(rows)} files, {failed} not graded (see the error column) -> {out}/")
    if roster:
        print(f"students with no submission and files not in the roster: {out}/reports/roster.csv")
    if broken := sum(row.error.startswith(GRADER_ERROR) for row in rows):
        print(f"{broken} files were not graded because of the grader: fix it and grade them again", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
