"""Grade a folder of submissions with ``otter run`` into one CSV.

    python homework/grade.py SUBMISSIONS [--dist homework/dist] [--csv FILE] [--jobs N]

Every ``*.ipynb`` under SUBMISSIONS (any depth; checkpoints skipped) and every
``*.zip`` made by the notebook's export cell is a submission. A submission is
matched to its autograder by the assignment name otter stores in the notebook
metadata (``metadata.otter.assignment_name``, written by ``otter assign`` into
every student notebook) — the same name ``otter run`` itself checks, so file
names and folder layout do not matter and one folder may mix assignments. A
notebook without that name, or with an unknown one, gets a row with an error.

Each submission is graded by ``otter run`` (no container: it executes in this
Python environment) against ``DIST/NAME/autograder/NAME-autograder.zip``. The
CSV has one row per submission: ``file`` (relative to SUBMISSIONS),
``assignment``, one column per question (``q1``, ``q2``, …; empty where the
assignment has fewer), ``total``, ``possible``, ``imports_grpo_core`` (``yes``
when a code cell mentions the answer-key package) and ``error``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

HOMEWORK = Path(__file__).resolve().parent
OTTER = Path(sys.executable).with_name("otter")
ANSWER_KEY = re.compile(r"\bgrpo_core\b")
TIMEOUT_SECONDS = 900


@dataclass
class Row:
    file: str
    assignment: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    possible: float = 0.0
    imports_grpo_core: bool = False
    error: str = ""


def autograders(dist: Path) -> dict[str, Path]:
    """``{assignment name: autograder zip}`` for every built assignment."""
    return {path.parent.parent.name: path for path in sorted(dist.glob("*/autograder/*-autograder.zip"))}


def submissions(folder: Path) -> list[Path]:
    found = [*folder.rglob("*.ipynb"), *folder.rglob("*.zip")]
    return sorted(path for path in found if ".ipynb_checkpoints" not in path.parts)


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook itself, or the single notebook inside an exported zip."""
    if path.suffix != ".zip":
        return nbformat.read(path, as_version=4)
    with zipfile.ZipFile(path) as archive:
        names = [name for name in archive.namelist() if name.endswith(".ipynb") and "checkpoint" not in name]
        if len(names) != 1:
            raise ValueError(f"expected one notebook in the zip, found {len(names)}")
        return nbformat.reads(archive.read(names[0]).decode("utf-8"), as_version=4)


def _question_order(name: str) -> tuple[int, str]:
    digits = re.findall(r"\d+", name)
    return (int(digits[-1]) if digits else 0, name)


def grade_one(path: Path, folder: Path, graders: dict[str, Path]) -> Row:
    row = Row(file=str(path.relative_to(folder)))
    try:
        notebook = read_notebook(path)
    except (ValueError, OSError, zipfile.BadZipFile, nbformat.reader.NotJSONError) as error:
        row.error = f"unreadable submission: {error}"
        return row
    row.imports_grpo_core = any(cell.cell_type == "code" and ANSWER_KEY.search(cell.source) for cell in notebook.cells)
    row.assignment = notebook.metadata.get("otter", {}).get("assignment_name") or ""
    if row.assignment not in graders:
        known = ", ".join(graders)
        row.error = f"assignment name {row.assignment!r} in the notebook metadata is not one of: {known}"
        return row
    with tempfile.TemporaryDirectory(prefix="otter-run-") as out:
        command = [str(OTTER), "run", "--no-logo", "-a", str(graders[row.assignment]), "-o", out, str(path)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            row.error = f"otter run timed out after {TIMEOUT_SECONDS} s"
            return row
        results = Path(out) / "results.json"
        if done.returncode != 0 or not results.is_file():
            lines = (done.stderr or done.stdout).strip().splitlines()
            row.error = f"otter run failed: {lines[-1] if lines else 'no output'}"
            return row
        tests = json.loads(results.read_text())["tests"]
    for test in tests:
        if test.get("max_score") is not None:
            row.scores[test["name"]] = float(test.get("score") or 0.0)
            row.possible += float(test["max_score"])
    return row


def _number(value: float) -> str:
    return f"{value:g}"


def write_csv(rows: list[Row], path: Path) -> list[str]:
    questions = sorted({name for row in rows for name in row.scores}, key=_question_order)
    header = ["file", "assignment", *questions, "total", "possible", "imports_grpo_core", "error"]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in rows:
            graded = not row.error
            writer.writerow(
                [
                    row.file,
                    row.assignment,
                    *(_number(row.scores[q]) if q in row.scores else "" for q in questions),
                    _number(sum(row.scores.values())) if graded else "",
                    _number(row.possible) if graded else "",
                    "yes" if row.imports_grpo_core else "no",
                    row.error,
                ]
            )
    return header


def _stale(dist: Path, graders: dict[str, Path]) -> list[str]:
    """Assignments whose master changed after their autograder was built."""
    stale = []
    for name, zip_path in graders.items():
        master = HOMEWORK / name / f"{name}.md"
        if master.is_file() and master.stat().st_mtime > zip_path.stat().st_mtime:
            stale.append(name)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submissions", type=Path, help="folder of submitted notebooks (.ipynb or exported .zip)")
    parser.add_argument(
        "--dist", type=Path, default=HOMEWORK / "dist", help="where `make homework` built the autograders"
    )
    parser.add_argument("--csv", type=Path, default=HOMEWORK / "dist" / "grades.csv", help="the CSV to write")
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1), help="submissions graded in parallel")
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        parser.error(f"{args.submissions} is not a folder")
    graders = autograders(args.dist)
    if not graders:
        parser.error(f"no autograder in {args.dist}/*/autograder/: run `make homework` first")
    for name in _stale(args.dist, graders):
        print(f"warning: homework/{name}/{name}.md is newer than its autograder; run `make homework`", file=sys.stderr)
    found = submissions(args.submissions)
    if not found:
        parser.error(f"no .ipynb or .zip submission under {args.submissions}")
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(lambda path: grade_one(path, args.submissions, graders), found))
    write_csv(rows, args.csv)
    for row in rows:
        status = row.error or f"{_number(sum(row.scores.values()))} / {_number(row.possible)}"
        print(f"{row.file}: {row.assignment or '?'}: {status}")
    failed = sum(bool(row.error) for row in rows)
    print(f"{len(rows)} submissions, {failed} not graded (see the error column) -> {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
