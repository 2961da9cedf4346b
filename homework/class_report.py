"""The class report of one assignment: what the class got right and wrong, from each student's counting attempt.

:func:`report` returns an HTML page (semantic tables with captions and column headers; meaning in words and
numbers, none in colour) and the same facts as CSV (``section, question, item, students, examples``):

* **points**: per question, how many students earned each score;
* **mistake**: per hidden test case that failed, the mistake it is designed to catch (:func:`mistake_of`), how
  many students made it and up to :data:`EXAMPLES` of their files;
* **public passed, hidden failed**: per question, the students whose public checks all passed and whose hidden
  cases did not (what a student could not see coming);
* **hang**: the submissions that ran out of time, whole, in a cell or in one call, and what the grader said.
"""

from __future__ import annotations

import html
import re
from collections import Counter

from sheets import csv_text

EXAMPLES = 3


def mistake_of(question: str, number: int, case: dict) -> str:
    """The mistake a hidden case is designed to catch: the ``mistake`` the key gives it (the master's ``# mistake:
    NAME`` line, :func:`checker.mistake_of`), or its place when the master names none."""
    return case.get("mistake") or f"{question}, hidden case {number}"


HANG = re.compile(r"`[^`]*\(…\)` did not return within \S+ s|cell \d+ \(`.*?`\) did not finish within \S+ s")


def hang_of(record: dict) -> str:
    """What ran out of time in one submission (the whole notebook, a cell or a call: the grader's words), or ''."""
    if "time limit" in record["error"]:
        return record["error"]
    said = [entry.get("message") or entry.get("reason", "") for entry in record["tests"]]
    return "; ".join(sorted({hang for text in said for hang in HANG.findall(text)}))


def facts(key: dict, records: list[dict]) -> list[tuple[str, str, str, int, list[str]]]:
    """``(section, question, item, students, example files)`` rows of the report."""
    cases = {(q["name"], number): case for q in key["questions"] for number, case in enumerate(q["cases"], 1)}
    rows = []
    for question in key["questions"]:
        name, each = question["name"], question["points"]
        earned = Counter()
        for record in records:
            entries = [e for e in record["tests"] if e["question"] == name]
            earned[each * sum(e["passed"] for e in entries)] += 1
        possible = each * len(question["cases"])
        rows += [("points", name, f"{score:g} of {possible:g}", earned[score], []) for score in sorted(earned)]
    mistakes: dict[tuple[str, str], list[str]] = {}
    surprised: dict[str, list[str]] = {}
    for record in records:
        for entry in record["tests"]:
            if entry["hidden"] and not entry["passed"]:
                case = cases[(entry["question"], entry["case"])]
                what = mistake_of(entry["question"], entry["case"], case)
                files = mistakes.setdefault((entry["question"], what), [])
                if record["file"] not in files:
                    files.append(record["file"])
        for question in key["questions"]:
            entries = [e for e in record["tests"] if e["question"] == question["name"]]
            public = [e["passed"] for e in entries if not e["hidden"]]
            if public and all(public) and not all(e["passed"] for e in entries if e["hidden"]):
                surprised.setdefault(question["name"], []).append(record["file"])
    for (question, what), files in sorted(mistakes.items(), key=lambda item: (item[0][0], -len(item[1]))):
        rows.append(("mistake", question, what, len(files), sorted(files)[:EXAMPLES]))
    for question, files in sorted(surprised.items()):
        rows.append(("public passed, hidden failed", question, "", len(files), sorted(files)[:EXAMPLES]))
    for record in sorted(records, key=lambda record: record["file"]):
        if what := hang_of(record):
            rows.append(("hang", "", what, 1, [record["file"]]))
    return rows


SECTIONS = {
    "points": ("Points per question: how many students earned each score", ["Question", "Points", "Students"]),
    "mistake": (
        "Mistakes the hidden tests caught, most frequent first within each question",
        ["Question", "Mistake the hidden case is designed to catch", "Students", "Example files"],
    ),
    "public passed, hidden failed": (
        "Questions where every public check passed but a hidden case failed",
        ["Question", "Students", "Example files"],
    ),
    "hang": ("Submissions that ran out of time", ["What ran out of time", "File"]),
}


def report(name: str, key: dict, records: list[dict]) -> tuple[str, str]:
    """``(HTML page, CSV text)`` of assignment ``name`` for the counting attempts' feedback ``records``."""
    rows = facts(key, records)
    header = [["section", "question", "item", "students", "examples"]]
    table = csv_text(header + [[*row[:4], " | ".join(row[4])] for row in rows])
    title = html.escape(f"{name}: class report")
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">',
        f"<title>{title}</title>\n</head>\n<body>\n<main>\n<h1>{title}</h1>",
        f"<p>{len(records)} students (each one's counting attempt).</p>",
    ]
    for section, (caption, columns) in SECTIONS.items():
        mine = [row for row in rows if row[0] == section]
        if not mine:
            parts.append(f"<p>{html.escape(caption)}: none.</p>")
            continue
        parts.append(f"<table>\n<caption>{html.escape(caption)}</caption>\n<thead><tr>")
        parts.append("".join(f'<th scope="col">{html.escape(column)}</th>' for column in columns) + "</tr></thead>")
        parts.append("<tbody>")
        for _, question, item, count, files in mine:
            examples = "<br>".join(f"<code>{html.escape(file)}</code>" for file in files)
            q, it, n = html.escape(question), html.escape(item), str(count)
            cells = {
                "points": [q, it, n],
                "mistake": [q, it, n, examples],
                "public passed, hidden failed": [q, n, examples],
                "hang": [it, examples],
            }[section]
            parts.append(f'<tr><th scope="row">{cells[0]}</th>' + "".join(f"<td>{c}</td>" for c in cells[1:]))
        parts.append("</tbody>\n</table>")
    parts.append("</main>\n</body>\n</html>\n")
    return "\n".join(parts), table
