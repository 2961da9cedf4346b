"""What a grading run writes, without a jail: written answers no answer can forge, sheets in linear time, names
one-to-one, regrades and late work by student, the roster's gaps, the instructor's column, the class report.

``grade.main`` runs here with a stand-in for the jailed grader (:class:`FakeGrader`): each submission file is JSON
saying what grading it gives (its assignment, scores, feedback, written answers), so every row, sheet and report
is exactly predictable; the jails themselves are tested in tests/homework/test_grading.py.
"""

from __future__ import annotations

import csv
import json
import os
from html.parser import HTMLParser
from pathlib import Path

import homework_support  # first: it puts homework/ on the path
import pytest
from class_report import SECTIONS
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from records import MAX_ANSWERS, POINTS_ROW, WRITTEN, Row, student_key
from sheets import Sheet

grade = homework_support.grade

NAME = "hw0-toy"
# Two questions; q1: one public case and two hidden ones, each naming its mistake (checker.make_key: "# mistake: NAME");
# q2: one hidden.
KEY = {
    "setup": [],
    "student_names": [],
    "questions": [
        {
            "name": "q1",
            "points": 1,
            "cases": [
                {"code": "assert sign_ok", "hidden": False},
                {"code": "# HIDDEN\nassert a", "hidden": True, "mistake": "sign-flipped"},
                {"code": "# HIDDEN\nassert b", "hidden": True},
            ],
        },
        {
            "name": "q2",
            "points": 2,
            "cases": [{"code": "# HIDDEN\nassert c", "hidden": True, "mistake": "reseeded-in-loop"}],
        },
    ],
}


def entries(passed: list[bool]) -> list[dict]:
    """Feedback entries of KEY's four cases in order (q1 public, q1 hidden, q1 hidden, q2 hidden)."""
    places = [("q1", 1, False), ("q1", 2, True), ("q1", 3, True), ("q2", 1, True)]
    return [
        {"question": q, "case": case, "hidden": hidden, "passed": ok} | ({} if ok else {"reason": "a check failed"})
        for (q, case, hidden), ok in zip(places, passed, strict=True)
    ]


def submission(path: Path, passed: list[bool], answers=(), error: str = "", mtime: float | None = None) -> None:
    """A file FakeGrader grades as ``passed`` (KEY's four cases), with written ``answers``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"passed": passed, "answers": list(answers), "error": error}))
    if mtime is not None:
        os.utime(path, (mtime, mtime))


class FakeGrader:
    def __init__(self, keys, python, timeout, call_timeout, cell_timeout):
        pass

    def grade_one(self, path: Path, folder: Path):
        row = Row(file=grade.file_name(path, folder), graded_at="2026-12-07T00:00:00+00:00")
        try:
            given = json.loads(grade.read_bytes(path))
        except ValueError as error:
            row.error = f"unreadable submission: {error}"
            return row, [], []
        row.assignment = NAME
        feedback = [] if given["error"] else entries(given["passed"])
        row.scores = {"q1": 0.0, "q2": 0.0}
        for entry in feedback:
            row.scores[entry["question"]] += {"q1": 1, "q2": 2}[entry["question"]] * entry["passed"]
        row.error = given["error"]
        return row, feedback, given["answers"]


@pytest.fixture
def dist(tmp_path, monkeypatch) -> Path:
    (tmp_path / "dist" / NAME / "autograder").mkdir(parents=True)
    (tmp_path / "dist" / NAME / "autograder" / "key.json").write_text(json.dumps(KEY))
    monkeypatch.setattr(grade, "Grader", FakeGrader)
    return tmp_path / "dist"


def run(dist: Path, folder: Path, *options: str) -> dict[str, dict[str, str]]:
    out = dist.parent / "out"
    assert grade.main([str(folder), "--dist", str(dist), "--out", str(out), "--jobs", "2", *options]) == 0
    with (out / f"{NAME}.csv").open(newline="", encoding="utf8") as handle:
        return {row["file"]: row for row in csv.DictReader(handle) if row["file"] != POINTS_ROW}


# ---------------------------------------------------------------- written answers no answer can forge

FORGERIES = [
    "* ### manual/c-honest.ipynb\n\nmy answer",
    "<h3>manual/c-honest.ipynb</h3>\n<!-- hides what follows",
    "1. ## Written answer 2",
    "```\nan unclosed fence that would swallow the next students' answers",
    "````python\n~~~\n<details><summary>x</summary>",
    "text\n===\nsetext heading\n---",
    "> ### quoted heading\n\\### escaped",
]


def test_written_answers_can_neither_forge_nor_hide_a_heading(dist, tmp_path):
    """Each hostile answer (a list marker, a numbered item, inline HTML, an unclosed fence, a setext underline, a
    quote) beside two honest classmates: the manual's headings are exactly ours, in order, and each answer is one
    code block holding the answer exactly. Before: the heading test looked only for lines starting with ``### ``
    and these forged or swallowed headings."""
    folder = tmp_path / "class"
    for number, answer in enumerate(FORGERIES):
        submission(folder / f"b-forger-{number}.ipynb", [True] * 4, [answer, "second"])
    submission(folder / "a-honest.ipynb", [True] * 4, ["honest *one*", "honest two"])
    submission(folder / "c-honest.ipynb", [True] * 4, ["honest three", "<b>honest</b> four"])
    run(dist, folder)
    tokens = MarkdownIt("commonmark").parse((dist.parent / "out" / f"manual-{NAME}.md").read_text())
    headings = [
        (token.tag, "".join(child.content for child in tokens[i + 1].children))
        for i, token in enumerate(tokens)
        if token.type == "heading_open"
    ]
    files = ["a-honest.ipynb", *(f"b-forger-{n}.ipynb" for n in range(len(FORGERIES))), "c-honest.ipynb"]
    assert headings == [("h1", f"{NAME}: written answers, for grading by hand")] + [
        heading for number in (1, 2) for heading in [("h2", f"Written answer {number}")] + [("h3", f) for f in files]
    ]
    blocks = [token.content.removesuffix("\n") for token in tokens if token.type == "fence"]
    second = ["honest two", *["second"] * len(FORGERIES), "<b>honest</b> four"]
    assert blocks == ["honest *one*", *FORGERIES, "honest three", *second]
    assert not [token for token in tokens if token.type in ("html_block", "html_inline", "bullet_list_open")]


def test_a_flood_of_answer_cells_is_capped(dist, tmp_path):
    """One notebook with 4,900 tagged answer cells: its classmates get at most MAX_ANSWERS "(no answer cell)" entries
    (before: 4,900 each, 2.8 MiB rewritten after every row)."""
    folder = tmp_path / "class"
    submission(folder / "flood.ipynb", [True] * 4, [f"cell {n}" for n in range(4900)])
    submission(folder / "honest.ipynb", [True] * 4, ["one answer"])
    run(dist, folder)
    manual = (dist.parent / "out" / f"manual-{NAME}.md").read_text()
    assert manual.count("(no answer cell)") == MAX_ANSWERS - 1
    assert f"[{4900 - MAX_ANSWERS} more cells tagged as written answers not shown]" in manual


def test_a_run_writes_each_sheet_once(dist, tmp_path, monkeypatch):
    """200 rows: the sheet is replaced once, at the end of the run, and each row is appended once to its journal
    (before: the whole sheet and the manual were rewritten after every row, quadratic in the class)."""
    folder = tmp_path / "class"
    for number in range(200):
        submission(folder / f"s{number:03}.ipynb", [True, False, True, True], [f"answer {number}"])
    replaced = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (replaced.append(Path(b)), real_replace(a, b))[1])
    rows = run(dist, folder)
    out = dist.parent / "out"
    assert (
        len(rows) == 200 and replaced.count(out / f"{NAME}.csv") == 1 and replaced.count(out / f"manual-{NAME}.md") == 1
    )
    assert not list((dist.parent / "out").glob(".*.journal"))


def test_a_killed_run_keeps_its_journalled_rows(tmp_path):
    """Rows put but never written (the run was killed): the next opening of the sheet replays them; a torn last
    line is dropped."""
    path = tmp_path / "sheet.csv"
    sheet = Sheet(path, ["file", "total"])
    sheet.put({"file": "a.ipynb", "total": 3.0})
    sheet.put({"file": "b.ipynb", "total": 1.0})
    with sheet.journal.open("a") as handle:
        handle.write('{"file": "c.ipy')
    again = Sheet(path, ["file", "total"])
    assert again.rows == {"a.ipynb": {"file": "a.ipynb", "total": "3"}, "b.ipynb": {"file": "b.ipynb", "total": "1"}}
    assert path.is_file() and not sheet.journal.exists()


# ---------------------------------------------------------------- names one-to-one


@settings(max_examples=300, deadline=None)
@given(st.sets(st.binary(min_size=1, max_size=6).filter(lambda b: b"/" not in b and b"\0" not in b), min_size=2))
def test_file_names_map_one_to_one_to_row_text(names):
    """Any two file names (any bytes) get two row texts: b"caf\\xe9" (a byte that is not UTF-8) and a file literally
    named ``caf\\xe9`` got the same text, so one student's row and feedback replaced the other's."""
    folder = Path("/class")
    texts = {grade.file_name(folder / os.fsdecode(name), folder) for name in names if name not in (b".", b"..")}
    assert len(texts) == len([name for name in names if name not in (b".", b"..")])


def test_the_colliding_names_of_the_red_team_get_two_rows(dist, tmp_path):
    folder = tmp_path / "class"
    submission(folder / os.fsdecode(b"caf\xe9.ipynb"), [True] * 4)
    submission(folder / "caf\\xe9.ipynb", [False] * 4)
    rows = run(dist, folder)
    assert {file: row["total"] for file, row in rows.items()} == {"caf\\xe9.ipynb": "5", "caf\\\\xe9.ipynb": "0"}
    assert len(list((dist.parent / "out" / "feedback" / NAME).iterdir())) == 2


# ---------------------------------------------------------------- regrades, late work, the roster


def test_a_regrade_of_one_students_folder_replaces_that_students_row(dist, tmp_path):
    """The class with a roster, then alice's folder alone: her row is replaced (same file, same id), no row is
    added. Before: a row ``file = hw1.ipynb`` with an empty student_id beside the old one."""
    folder = tmp_path / "class"
    submission(folder / "alice" / "hw0.ipynb", [False] * 4)
    submission(folder / "bob" / "hw0.ipynb", [True] * 4)
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,file\nA-1,alice\nB-2,bob\n")
    first = run(dist, folder, "--roster", str(roster))
    submission(folder / "alice" / "hw0.ipynb", [True] * 4)  # fixed, e.g. after a regrade request
    again = run(dist, folder / "alice")
    assert set(again) == set(first) == {"alice/hw0.ipynb", "bob/hw0.ipynb"}
    assert (again["alice/hw0.ipynb"]["student_id"], again["alice/hw0.ipynb"]["total"]) == ("A-1", "5")
    assert again["bob/hw0.ipynb"] == first["bob/hw0.ipynb"]
    one_file = run(dist, folder / "bob" / "hw0.ipynb")  # a single file, too
    assert set(one_file) == set(first) and one_file["bob/hw0.ipynb"]["student_id"] == "B-2"


def test_a_late_browser_copy_is_a_new_attempt_and_the_latest_counts(dist, tmp_path):
    """``hw0 (2).ipynb`` handed in after ``hw0.ipynb``: attempt 2 of the same student, the one that counts, marked
    late after --deadline; ``submitted_at`` is each file's modification time, ``graded_at`` the grading time."""
    folder = tmp_path / "class"
    on_time, late = 1_800_000_000, 1_800_090_000  # 2027-01-15 08:00 UTC and a day (and 1 h) later
    submission(folder / "alice" / "hw0.ipynb", [False] * 4, mtime=on_time)
    submission(folder / "alice" / "hw0 (2).ipynb", [True] * 4, mtime=late)
    submission(folder / "bob.ipynb", [True, True, False, False], mtime=on_time)
    rows = run(dist, folder, "--deadline", "2027-01-15T12:00:00+00:00")
    got = {file: (r["attempt"], r["counts"], r["late"], r["submitted_at"]) for file, r in rows.items()}
    assert got == {
        "alice/hw0.ipynb": ("1", "", "", "2027-01-15T08:00:00+00:00"),
        "alice/hw0 (2).ipynb": ("2", "yes", "yes", "2027-01-16T09:00:00+00:00"),
        "bob.ipynb": ("1", "yes", "", "2027-01-15T08:00:00+00:00"),
    }
    assert {row["graded_at"] for row in rows.values()} == {"2026-12-07T00:00:00+00:00"}


@pytest.mark.parametrize("folder", ["", "alice/", "a.b/", "dir (2)/"])
@pytest.mark.parametrize("copy", ["", " (2)", " (13)"])
@pytest.mark.parametrize("extension", [".ipynb", ".zip"])
def test_a_browser_copy_or_an_export_is_the_same_students_attempt(folder, copy, extension):
    """Without a roster, every copy number and either extension name one student's attempts; another folder, another
    stem, or a copy number that is not a browser's (no space, not the end) another student."""
    same = student_key({"file": f"{folder}hw5-critic-cost{copy}{extension}"})
    assert same == student_key({"file": f"{folder}hw5-critic-cost.ipynb"})
    others = [
        f"{folder}hw6{copy}{extension}",
        f"other/{folder}hw5-critic-cost{extension}",
        f"{folder}hw5-critic-cost(2)",
    ]
    assert same not in {student_key({"file": file}) for file in others}
    assert student_key({"file": f"{folder}x.ipynb", "student_id": "S-1"}) == student_key(
        {"file": "y", "student_id": "S-1"}
    )


def test_the_roster_gaps_are_listed(dist, tmp_path):
    """A student of the roster with no submission, a file no roster line names, and a file that is no submission
    are listed in reports/roster.csv (before: a blank id, silently, and the missing student nowhere)."""
    folder = tmp_path / "class"
    submission(folder / "alice" / "hw0.ipynb", [True] * 4)
    submission(folder / "carol" / "hw0.ipynb", [True] * 4)
    (folder / "notes.txt").write_text("x")
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,file\nA-1,alice\nD-4,dave\n")
    run(dist, folder, "--roster", str(roster))
    with (dist.parent / "out" / "reports" / "roster.csv").open(newline="") as handle:
        gaps = [tuple(line) for line in csv.reader(handle)][1:]
    assert gaps == [
        (NAME, "D-4", "", "no submission"),
        (NAME, "", "carol/hw0.ipynb", "not in the roster"),
        ("", "", "notes.txt", "not graded: unreadable submission: not a notebook (.ipynb) or exported zip"),
    ]


def test_a_roster_line_without_a_student_id_is_an_error(dist, tmp_path):
    submission(tmp_path / "class" / "alice" / "hw0.ipynb", [True] * 4)
    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,file\n,alice\n")
    with pytest.raises(SystemExit):
        run(dist, tmp_path / "class", "--roster", str(roster))


def test_the_written_points_column_survives_a_regrade(dist, tmp_path):
    """The instructor fills written_points; a regrade of the class rewrites every score and keeps it."""
    folder = tmp_path / "class"
    submission(folder / "alice.ipynb", [True] * 4, ["my answer"])
    submission(folder / "bob.ipynb", [True] * 4, ["his answer"])
    run(dist, folder)
    path = dist.parent / "out" / f"{NAME}.csv"
    with path.open(newline="") as handle:
        lines = list(csv.DictReader(handle))
    for line in lines:
        line[WRITTEN] = {"alice.ipynb": "3.5", "bob.ipynb": "2"}.get(line["file"], "")
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, list(lines[0]))
        writer.writeheader()
        writer.writerows(lines)
    submission(folder / "alice.ipynb", [False] * 4, ["my answer"])
    rows = run(dist, folder)
    assert {file: (row[WRITTEN], row["total"]) for file, row in rows.items()} == {
        "alice.ipynb": ("3.5", "0"),
        "bob.ipynb": ("2", "5"),
    }


# ---------------------------------------------------------------- the class report


class Tables(HTMLParser):
    """Each table's caption, column headers and rows (cell texts), as a screen reader's table navigation sees them."""

    def __init__(self):
        super().__init__()
        self.tables, self.text, self.cell, self.scopes, self.lang = [], "", None, [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "html":
            self.lang = attrs.get("lang")
        if tag == "table":
            self.tables.append({"caption": "", "columns": [], "rows": []})
        if tag in ("caption", "th", "td"):
            self.text = ""
        if tag == "th":
            self.scopes.append(attrs.get("scope"))
        if tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        if tag == "br":
            self.text += " | "

    def handle_data(self, data):
        self.text += data

    def handle_endtag(self, tag):
        if tag == "caption":
            self.tables[-1]["caption"] = self.text
        if tag in ("th", "td"):
            self.tables[-1]["rows"][-1].append(self.text)


def test_the_class_report_names_the_mistakes_on_a_synthetic_class(dist, tmp_path):
    """Ten students: 4 flip the sign (q1 hidden case 2), 3 of them passing q1's public check; 2 re-seed (q2); one
    hangs; each count, example and score distribution is computed here from the class as built."""
    folder = tmp_path / "class"
    sign = ["s1.ipynb", "s2.ipynb", "s3.ipynb", "s4.ipynb"]
    seeded = ["s5.ipynb", "s6.ipynb"]
    for number in range(1, 10):
        file = f"s{number}.ipynb"
        public = file != "s4.ipynb"
        submission(folder / file, [public, file not in sign, True, file not in seeded])
    submission(folder / "s10.ipynb", [True] * 4, error="ran longer than its time limit")
    run(dist, folder)
    report = dist.parent / "out" / "reports"
    with (report / f"{NAME}.csv").open(newline="") as handle:
        facts = [tuple(line) for line in csv.reader(handle)]
    assert facts == [
        ("section", "question", "item", "students", "examples"),
        ("points", "q1", "0 of 3", "1", ""),  # s10: no case ran
        ("points", "q1", "1 of 3", "1", ""),  # s4: only hidden case 3
        ("points", "q1", "2 of 3", "3", ""),
        ("points", "q1", "3 of 3", "5", ""),
        ("points", "q2", "0 of 2", "3", ""),  # s5, s6 and s10
        ("points", "q2", "2 of 2", "7", ""),
        ("mistake", "q1", "sign-flipped", "4", "s1.ipynb | s2.ipynb | s3.ipynb"),
        ("mistake", "q2", "reseeded-in-loop", "2", "s5.ipynb | s6.ipynb"),
        ("public passed, hidden failed", "q1", "", "3", "s1.ipynb | s2.ipynb | s3.ipynb"),
        ("hang", "", "ran longer than its time limit", "1", "s10.ipynb"),
    ]
    page = Tables()
    page.feed((report / f"{NAME}.html").read_text())
    assert page.lang == "en" and set(page.scopes) == {"col", "row"}
    captions = [table["caption"] for table in page.tables]
    assert captions == [caption for caption, _ in SECTIONS.values()]
    (mistakes,) = [table for table in page.tables if table["caption"].startswith("Mistakes")]
    assert mistakes["rows"][1:] == [
        ["q1", "sign-flipped", "4", "s1.ipynb | s2.ipynb | s3.ipynb"],
        ["q2", "reseeded-in-loop", "2", "s5.ipynb | s6.ipynb"],
    ]


def test_the_report_counts_only_the_attempt_that_counts(dist, tmp_path):
    folder = tmp_path / "class"
    submission(folder / "alice" / "hw0.ipynb", [True, False, True, True], mtime=1_800_000_000)
    submission(folder / "alice" / "hw0 (2).ipynb", [True] * 4, mtime=1_800_000_100)
    run(dist, folder)
    text = (dist.parent / "out" / "reports" / f"{NAME}.csv").read_text()
    assert "mistake" not in text and "points,q1,3 of 3,1," in text
