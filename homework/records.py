"""What a grading run writes, and how it names a student's attempts.

Into ``OUT`` (made 0700; every file in it 0600):

* ``NAME.csv`` per assignment, one row per submitted file: ``student_id`` (from the roster; a regrade without
  one keeps the id the row had), ``file`` (its path below the class folder), ``attempt``, ``counts``, ``late``,
  ``submitted_at``, ``sha256``, ``graded_at``, one column per question, ``total``, ``possible``,
  ``written_points`` and ``error``; the first row, ``file = (points possible)``, holds each question's maximum.
  Grading a file again replaces its row; ``written_points`` is the instructor's column, which grading leaves
  empty and never overwrites.
* ``unmatched.csv``: the files that could not be graded as a submission, and why.
* ``feedback/NAME/HASH.json`` (HASH: the SHA-256 of the row's ``file``): each test case's result.
* ``manual-NAME.md``: every written answer, for grading by hand, each shown verbatim in a code block, below the
  model answers and rubrics that ``make homework`` wrote to ``DIST/NAME/autograder/rubric.md``.
* ``reports/NAME.html`` and ``reports/NAME.csv``: the class report (:mod:`class_report`); with a roster,
  ``reports/roster.csv``: the roster's students with no submission and the files no roster line names.

**Attempts.** A student's attempts at an assignment are the rows of one student: the same roster id, or without
one the same path once a browser's copy number and the extension are dropped (``alice/hw5 (2).ipynb``,
``alice/hw5.zip`` and ``alice/hw5.ipynb`` are one student's). They are numbered by hand-in time,
``submitted_at``: the file's modification time as it lies in the submissions folder (an exported zip's too: the
times inside a zip are the student's own clock, without a time zone). **The latest attempt counts** (``counts =
yes``; a tie goes to the later file name); with ``--deadline``, ``late = yes`` marks an attempt handed in after it.
Sheets, written answers and reports are written once, when the run ends (:meth:`Records.close`); until then each
row is journalled (``sheets.py``), so a run that is killed loses at most the row being written.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import json
import os
import re
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import class_report
from sheets import Sheet, csv_text

POINTS_ROW = "(points possible)"
WRITTEN = "written_points"
MAX_ANSWERS = 10  # written answers kept per submission; a homework asks one or two
MAX_ANSWER_CHARS = 20_000
BROWSER_COPY = re.compile(r" \(\d+\)$")  # "hw5 (2)": a browser's second download of hw5


@dataclass
class Row:
    """One submission's line in a sheet."""

    file: str
    assignment: str = ""
    sha256: str = ""
    scores: dict[str, float] = field(default_factory=dict)
    error: str = ""
    graded_at: str = ""
    submitted_at: str = ""
    student_id: str = ""


def utc(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")


# ---------------------------------------------------------------- roster and attempts


def read_roster(path: Path) -> list[tuple[str, str]]:
    """``(student_id, file)`` pairs; ``file`` is a submission path or folder relative to the class folder. A line
    with a file and no student id is an error, not a blank id."""
    with path.open(newline="", encoding="utf8") as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames or not {"student_id", "file"} <= set(reader.fieldnames):
            raise ValueError(f"roster: {path} needs the columns student_id and file")
        pairs = []
        for line, row in enumerate(reader, 2):
            student, file = (row["student_id"] or "").strip(), (row["file"] or "").strip().strip("/")
            if file and not student:
                raise ValueError(f"roster: line {line} of {path} ({file!r}) has no student_id")
            if file:
                pairs.append((student, file))
        return pairs


def student_of(file: str, roster: list[tuple[str, str]]) -> str:
    for student, prefix in roster:
        if file == prefix or file.startswith(prefix + "/"):
            return student
    return ""


def student_key(cells: dict[str, str]) -> str:
    """Whose attempt a sheet row is: its roster id, or its path without a browser's copy number and extension."""
    if cells.get("student_id"):
        return "id:" + cells["student_id"]
    return "path:" + BROWSER_COPY.sub("", str(PurePosixPath(cells["file"]).with_suffix("")))


def mark_attempts(rows: list[dict[str, str]], deadline: str | None) -> dict[str, dict[str, str]]:
    """``{file: {attempt, counts, late}}``: each student's attempts numbered by hand-in time, the latest counting."""
    by_student: dict[str, list[dict[str, str]]] = {}
    for cells in rows:
        by_student.setdefault(student_key(cells), []).append(cells)
    marks = {}
    for attempts in by_student.values():
        attempts.sort(key=lambda cells: (cells.get("submitted_at", ""), cells["file"]))
        for number, cells in enumerate(attempts, 1):
            late = bool(deadline and cells.get("submitted_at") and cells["submitted_at"] > deadline)
            marks[cells["file"]] = {"attempt": number, "counts": "yes" if number == len(attempts) else ""}
            marks[cells["file"]]["late"] = "yes" if late else ""
    return marks


# ---------------------------------------------------------------- written answers


def kept_answers(answers: list[str]) -> list[str]:
    """At most :data:`MAX_ANSWERS` answers of at most :data:`MAX_ANSWER_CHARS` characters each, the cut said."""
    kept = [
        text
        if len(text) <= MAX_ANSWER_CHARS
        else text[:MAX_ANSWER_CHARS] + f"\n[{len(text) - MAX_ANSWER_CHARS} more characters not shown]"
        for text in answers[:MAX_ANSWERS]
    ]
    if len(answers) > MAX_ANSWERS:
        kept[-1] += f"\n[{len(answers) - MAX_ANSWERS} more cells tagged as written answers not shown]"
    return kept


def verbatim(answer: str) -> str:
    """A written answer as a Markdown code block: a fence of more backticks than any run in the answer, so nothing
    in it (a heading, a list marker, HTML, a fence of its own) is read as Markdown; the answer is the block's
    text, every line as typed."""
    longest = max((len(run) for run in re.findall(r"`+", answer)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{answer.strip()}\n{fence}"


MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def heading_text(text: str) -> str:
    """``text`` on one line with every ASCII punctuation character backslash-escaped: read as literal text."""
    printable = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return MARKDOWN_PUNCTUATION.sub(r"\\\1", printable)


def manual_text(name: str, records: list[dict], rubric: str = "") -> str:
    """``manual-NAME.md``: the assignment's rubric (ours, as Markdown), then every written answer of every
    submission, by question; headings are ours alone."""
    records = sorted(records, key=lambda record: record["file"])
    count = max((len(record["written_answers"]) for record in records), default=0)
    lines = [f"# {heading_text(name)}: written answers, for grading by hand", ""]
    lines += [*("#" + line if line.startswith("#") else line for line in rubric.splitlines()), ""]
    for number in range(count):
        lines += [f"## Written answer {number + 1}", ""]
        for record in records:
            answers = record["written_answers"]
            who = record["file"] + (f" ({record['student_id']})" if record["student_id"] else "")
            text = verbatim(answers[number]) if number < len(answers) else "(no answer cell)"
            lines += [f"### {heading_text(who)}", "", text, ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- the output folder


def write_atomically(path: Path, text: str) -> None:
    """``text`` as ``path`` whole or not at all; a character UTF-8 cannot encode (a lone surrogate) as ``\\udXXX``."""
    handle, temporary = tempfile.mkstemp(prefix=".tmp.", dir=path.parent)  # mkstemp makes it 0600
    try:
        with os.fdopen(handle, "w", encoding="utf8", errors="backslashreplace") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class Records:
    """Where results go: one sheet per assignment, ``unmatched.csv``, feedback files, written answers, reports."""

    def __init__(
        self, out: Path, keys: dict[str, dict], deadline: str | None = None, rubrics: dict[str, str] | None = None
    ):
        self.out, self.keys, self.deadline, self.rubrics = out, keys, deadline, rubrics or {}
        self.points = {name: points(key) for name, key in keys.items()}
        for folder in (out, out / "reports", out / "feedback", *(out / "feedback" / name for name in keys)):
            folder.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o700)
        base = ["student_id", "file", "attempt", "counts", "late", "submitted_at", "sha256", "graded_at"]
        self.sheets = {}
        for name, possible in self.points.items():
            header = [*base, *possible, "total", "possible", WRITTEN, "error"]
            first = {"file": POINTS_ROW, **possible, "possible": sum(possible.values())}
            first = {key: f"{value:g}" if isinstance(value, float) else value for key, value in first.items()}
            self.sheets[name] = Sheet(out / f"{name}.csv", header, [first], keep=("student_id", WRITTEN))
        self.unmatched = Sheet(out / "unmatched.csv", [*base, "assignment", "error"], keep=("student_id",))
        self.graded: set[str] = set()
        self.lock = threading.Lock()

    def feedback_path(self, row: Row) -> Path:
        return self.out / "feedback" / row.assignment / (hashlib.sha256(row.file.encode()).hexdigest() + ".json")

    def record(self, row: Row, feedback: list[dict], answers: list[str]) -> None:
        cells = {"student_id": row.student_id, "file": row.file, "submitted_at": row.submitted_at}
        cells |= {"sha256": row.sha256, "graded_at": row.graded_at, "error": row.error}
        if row.assignment not in self.sheets:
            self.unmatched.put({**cells, "assignment": row.assignment})
            return
        possible = self.points[row.assignment]  # a row with an error scores 0 and says why
        cells.update({q: row.scores.get(q, 0.0) for q in possible})
        cells.update(total=sum(row.scores.values()), possible=sum(possible.values()))
        record = {"file": row.file, "student_id": row.student_id, "assignment": row.assignment, "sha256": row.sha256}
        record |= {"graded_at": row.graded_at, "submitted_at": row.submitted_at, "error": row.error}
        record |= {"written_answers": kept_answers(answers), "tests": feedback}
        write_atomically(self.feedback_path(row), json.dumps(record, indent=1))
        self.sheets[row.assignment].put(cells)
        with self.lock:
            self.graded.add(row.assignment)

    def close(self, roster: list[tuple[str, str]] | None = None) -> None:
        """Write what a run's rows change: each sheet with its attempts marked, written answers, reports."""
        self.unmatched.write()
        for name, sheet in self.sheets.items():
            if name not in self.graded:
                continue
            for file, marks in mark_attempts(list(sheet.rows.values()), self.deadline).items():
                sheet.update(file, marks)
            sheet.write()
            records = [json.loads(path.read_text()) for path in sorted((self.out / "feedback" / name).glob("*.json"))]
            write_atomically(self.out / f"manual-{name}.md", manual_text(name, records, self.rubrics.get(name, "")))
            counting = {cells["file"] for cells in sheet.rows.values() if cells["counts"] == "yes"}
            counted = [record for record in records if record["file"] in counting]
            html, table = class_report.report(name, self.keys[name], counted)
            write_atomically(self.out / "reports" / f"{name}.html", html)
            write_atomically(self.out / "reports" / f"{name}.csv", table)
        if roster:
            write_atomically(self.out / "reports" / "roster.csv", self.roster_text(roster))

    def roster_text(self, roster: list[tuple[str, str]]) -> str:
        """CSV of the roster's gaps: per graded assignment, each student with no submission, and each file that no
        roster line names (its row's student id is empty)."""
        students = sorted({student for student, _ in roster})
        lines = [["assignment", "student_id", "file", "problem"]]
        for name, sheet in self.sheets.items():
            if not sheet.rows:
                continue
            handed_in = {cells["student_id"] for cells in sheet.rows.values()}
            lines += [[name, student, "", "no submission"] for student in students if student not in handed_in]
            unknown = sorted(file for file, cells in sheet.rows.items() if not cells["student_id"])
            lines += [[name, "", file, "not in the roster"] for file in unknown]
        unmatched = sorted(self.unmatched.rows.items())
        lines += [["", cells["student_id"], file, f"not graded: {cells['error']}"] for file, cells in unmatched]
        return csv_text(lines)


def points(key: dict) -> dict[str, float]:
    return {q["name"]: float(q["points"] * len(q["cases"])) for q in key["questions"]}
