"""Homework 5-10, the assignments that give every section of the chapter graded work (issue #29).

Each master is built once by ``otter assign`` without running it (the full build, with otter
grading its own solutions, and the sandboxed grading of the reference and of the untouched notebook
are tests/test_homework.py's, parametrized over every assignment). Here, in this process and
without a kernel, every notebook is scored test case by test case, one point each, as the grader
scores it: the reference solutions must earn full marks, the untouched student notebook 0, and
each plausible near-miss of tests/fixtures/homework/near_misses.toml exactly the points listed
there, losing them to hidden tests named for the mistake. The hidden tests use only what a
student's notebook can hand back as data (numbers, arrays, strings, dicts) and calls of the
student's functions on inputs the test chooses, and every number they compare with comes from
``grpo_core``, never typed.
"""

from __future__ import annotations

import ast
import copy
import importlib
import re
import shutil
import sys
import tomllib
import warnings
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
HOMEWORK = ROOT / "homework"
sys.path.insert(0, str(HOMEWORK))
build, leaks = (importlib.import_module(name) for name in ("build", "leaks"))

NEW = [name for name in build.assignment_names() if int(re.match(r"hw(\d+)-", name)[1]) >= 5]
NEAR_MISSES = tomllib.loads((ROOT / "tests" / "fixtures" / "homework" / "near_misses.toml").read_text())["near_miss"]
INLINE_MARKERS = ("# BEGIN SOLUTION", "# END SOLUTION")
SECTIONS = {f"§{number}" for number in range(2, 13)}


def course_map() -> dict[str, set[str]]:
    """``{assignment: {"§2", ...}}`` from the table of book/course-map.md (one row per assignment)."""
    rows = {}
    for line in (ROOT / "book" / "course-map.md").read_text(encoding="utf8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and (name := re.search(r"hw\d+-[\w-]+", cells[0])):
            rows[name[0]] = set(re.findall(r"§\d+", cells[1]))
    return rows


def test_course_map_lists_every_assignment_and_every_section():
    rows = course_map()
    assert sorted(rows) == build.assignment_names(), "one row per assignment of homework/"
    covered = set().union(*rows.values())
    assert SECTIONS <= covered, f"no graded work for {sorted(SECTIONS - covered)}"


def test_every_new_assignment_has_near_misses():
    assert len(NEW) >= 5
    assert {miss["assignment"] for miss in NEAR_MISSES} == set(NEW)


# ---------------------------------------------------------------- the cases, as the grader scores them


def cases(master: nbformat.NotebookNode) -> list[tuple[str, bool, str]]:
    """``(question, hidden, code)`` of every test case of a master, in order."""
    found, question, block = [], None, None
    for cell in master.cells:
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "raw" and first == "# BEGIN QUESTION":
            question = re.search(r"name: (\w+)", cell.source)[1]
        elif cell.cell_type == "raw" and first in ("# BEGIN TESTS", "# END TESTS"):
            block = first.split()[1]
        elif cell.cell_type == "code" and block == "BEGIN":
            found.append((question, first == "# HIDDEN", cell.source))
    return found


def score(notebook: nbformat.NotebookNode, master: nbformat.NotebookNode) -> dict[str, list[tuple[bool, bool]]]:
    """``{question: [(hidden, passed), ...]}``: the notebook's code cells run here, then each test case."""
    namespace: dict = {"__name__": "__main__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cell in notebook.cells:
            tags = cell.metadata.get("tags", [])
            if cell.cell_type != "code" or "otter_ignore" in tags or "otter" in cell.source:
                continue
            try:
                exec(compile(cell.source, "<homework cell>", "exec"), namespace)
            except Exception:  # noqa: BLE001 - a broken cell ends, as in the grader
                pass
        results: dict[str, list[tuple[bool, bool]]] = {}
        for question, hidden, code in cases(master):
            try:
                exec(compile(code, "<test>", "exec"), dict(namespace))
                passed = True
            except Exception:  # noqa: BLE001 - any error fails the case
                passed = False
            results.setdefault(question, []).append((hidden, passed))
    return results


def points(results: dict[str, list[tuple[bool, bool]]]) -> dict[str, int]:
    return {question: sum(passed for _, passed in outcome) for question, outcome in results.items()}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The new assignments by ``otter assign --no-run-tests`` (student and autograder versions)."""
    out = tmp_path_factory.mktemp("homework-new")
    package = out / "package" / "grpo_core"
    shutil.copytree(ROOT / "src" / "grpo_core", package, ignore=shutil.ignore_patterns("__pycache__"))
    for name in NEW:
        build.assign(build.master_notebook(name), name, out, package, run_tests=False)
    return out


def student(dist: Path, name: str) -> nbformat.NotebookNode:
    return nbformat.read(dist / name / "student" / f"{name}.ipynb", as_version=4)


def reference(dist: Path, name: str) -> nbformat.NotebookNode:
    """The student notebook with every answer cell holding the reference answer (markers removed)."""
    filled = student(dist, name)
    solutions = nbformat.read(dist / name / "autograder" / f"{name}.ipynb", as_version=4)
    assert len(filled.cells) == len(solutions.cells) + 1  # the student's first cell writes its public tests
    for mine, answer in zip(filled.cells[1:], solutions.cells, strict=True):
        if "otter_answer_cell" in mine.metadata.get("tags", []):
            lines = [line for line in answer.source.splitlines() if line.strip() not in INLINE_MARKERS]
            mine.source = "\n".join(re.sub(r"\s*# SOLUTION$", "", line) for line in lines)
    return filled


def possible(master: nbformat.NotebookNode) -> dict[str, int]:
    total: dict[str, int] = {}
    for question, _, _ in cases(master):
        total[question] = total.get(question, 0) + 1
    return total


@pytest.mark.parametrize("name", NEW)
def test_reference_earns_full_marks_and_the_blank_notebook_nothing(dist, name):
    master = build.master_notebook(name)
    assert points(score(reference(dist, name), master)) == possible(master)
    assert points(score(student(dist, name), master)) == dict.fromkeys(possible(master), 0)


@pytest.mark.parametrize("name", NEW)
def test_student_version_leaks_nothing(dist, name):
    assert leaks.find_leaks(build.master_notebook(name), dist / name / "student") == []


@pytest.mark.parametrize("name", NEW)
def test_keys_are_computed_never_typed(name):
    """A hidden test compares with grpo_core: no float literal with more than 3 significant digits in it."""
    for question, hidden, code in cases(build.master_notebook(name)):
        floats = [n.value for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Constant) and type(n.value) is float]
        typed = [value for value in floats if len(f"{abs(value):.15e}".split("e")[0].replace(".", "").rstrip("0")) > 3]
        assert not (hidden and typed), f"{name} {question}: typed values {typed} in a hidden test"


@pytest.mark.parametrize("miss", NEAR_MISSES, ids=[f"{m['assignment']}-{m['mistake']}" for m in NEAR_MISSES])
def test_near_miss_loses_exactly_its_points(dist, miss):
    name = miss["assignment"]
    master = build.master_notebook(name)
    notebook = reference(dist, name)
    hits = [cell for cell in notebook.cells if cell.cell_type == "code" and miss["replace"] in cell.source]
    assert len(hits) == 1 and hits[0].source.count(miss["replace"]) == 1, f"stale near-miss: {miss['replace']!r}"
    wrong = copy.deepcopy(notebook)
    (cell,) = [c for c in wrong.cells if c.cell_type == "code" and miss["replace"] in c.source]
    cell.source = cell.source.replace(miss["replace"], miss["with"])
    results = score(wrong, master)
    assert points(results) == {**possible(master), **miss["scores"]}
    lost = [hidden for outcome in results.values() for hidden, passed in outcome if not passed]
    assert lost and all(lost) == miss["subtle"], "a subtle near-miss loses hidden points only; the others fail a public test"
