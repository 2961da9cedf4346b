"""The homework: masters, ``otter assign``, leak checks and grading with ``otter run``.

Every assignment is built once per module into a temporary directory (with
``otter assign`` grading its own solutions, as ``make homework`` does), then
one call of the grading script grades, in parallel, a folder that mixes all
assignments: the reference solutions, the untouched student notebooks and the
deliberately wrong submissions of ``tests/fixtures/homework/``, each of which
must lose exactly the points listed there. A longer list of plausible mistakes
is checked in-process with otter's own doctest runner (no kernel): each must
fail a hidden test. The leak check is proven on masters broken on purpose.
"""

from __future__ import annotations

import copy
import csv
import importlib.util
import json
import re
import subprocess
import sys
import tomllib
import warnings
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HOMEWORK = ROOT / "homework"
FIXTURES = ROOT / "tests" / "fixtures" / "homework"
BIN = Path(sys.executable).parent
FIXTURE_DATA = tomllib.loads((FIXTURES / "wrong_submissions.toml").read_text(encoding="utf8"))
WRONG, MISTAKES = FIXTURE_DATA["submission"], FIXTURE_DATA["mistake"]
INLINE_MARKERS = ("# BEGIN SOLUTION", "# END SOLUTION")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"homework_{name}", HOMEWORK / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build = _load("build")
grade = _load("grade")
leaks = _load("leaks")
NAMES = build.assignment_names()
# The module fixtures build and grade notebooks (about 25 kernels): allow for a busy machine.
pytestmark = pytest.mark.timeout(1800)


# ---------------------------------------------------------------- the masters


def _raw_config(cell) -> dict:
    return yaml.safe_load(cell.source) or {}


def questions(master: nbformat.NotebookNode) -> dict[str, dict]:
    """Per question of a master: its config, number of public and hidden tests, solution blocks."""
    found, current, block = {}, None, None
    for cell in master.cells:
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "raw" and first == "# BEGIN QUESTION":
            current = _raw_config(cell)
            found[current["name"]] = {"config": current, "public": 0, "hidden": 0, "solutions": 0}
        elif cell.cell_type == "raw" and first in ("# BEGIN SOLUTION", "# BEGIN TESTS"):
            block = first.split()[-1]
            found[current["name"]]["solutions"] += block == "SOLUTION"
        elif cell.cell_type == "raw" and first.startswith("# END"):
            block = None
        elif cell.cell_type == "code" and block == "TESTS":
            found[current["name"]]["hidden" if first == "# HIDDEN" else "public"] += 1
    return found


def test_there_are_at_least_four_assignments():
    assert len(NAMES) >= 4
    assert {"hw1-advantages", "hw2-clip-kl", "hw3-bandit-step", "hw4-length-bias"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_master_follows_the_house_rules(name):
    """Otter config as documented; every test case is worth one point; public and hidden tests."""
    master = build.master_notebook(name)
    config = _raw_config(master.cells[0])
    assert master.cells[0].cell_type == "raw" and master.cells[0].source.startswith("# ASSIGNMENT CONFIG")
    assert config["name"] == name, "the otter assignment name is what grading matches submissions by"
    assert config["init_cell"] and config["check_all_cell"] and config["tests"] == {"files": False}
    assert config["export_cell"]["pdf"] is False and config["generate"]["pdf"] is False
    found = questions(master)
    assert list(found) == [f"q{number}" for number in range(1, len(found) + 1)]
    for question, info in found.items():
        assert info["config"]["points"] == {"each": 1}, f"{question}: every test case is worth one point"
        assert info["solutions"] == 1, f"{question}: one solution block"
        assert info["public"] >= 1 and info["hidden"] >= 1, f"{question}: needs public and hidden tests"


def test_masters_and_scripts_pass_ruff(tmp_path):
    for name in NAMES:
        nbformat.write(build.master_notebook(name), tmp_path / f"{name}.ipynb")
    scripts = sorted(str(path) for path in HOMEWORK.glob("*.py"))
    for command in (["check"], ["format", "--check"]):
        done = subprocess.run(
            [str(BIN / "ruff"), *command, "--config", str(ROOT / "pyproject.toml"), str(tmp_path), *scripts],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout + done.stderr


# ---------------------------------------------------------------- otter assign


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """Every assignment built by ``otter assign`` (which grades its own solutions)."""
    out = tmp_path_factory.mktemp("homework-dist")
    with ThreadPoolExecutor(max_workers=2) as pool:
        findings = dict(zip(NAMES, pool.map(lambda name: build.build(name, out), NAMES), strict=True))
    assert findings == {name: [] for name in NAMES}, findings
    return out


@pytest.mark.parametrize("name", NAMES)
def test_otter_assign_writes_student_and_autograder_versions(dist, name):
    autograder = dist / name / "autograder"
    assert (dist / name / "student" / f"{name}.ipynb").is_file()
    assert (autograder / f"{name}.ipynb").is_file()
    with zipfile.ZipFile(autograder / f"{name}-autograder.zip") as archive:
        config = json.loads(archive.read("otter_config.json"))
        tests = sorted(path for path in archive.namelist() if path.startswith("tests/"))
    assert config["assignment_name"] == name
    assert tests == sorted(f"tests/{question}.py" for question in questions(build.master_notebook(name)))


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_holds_no_solution_and_no_hidden_test(dist, name):
    master = build.master_notebook(name)
    student = nbformat.read(dist / name / "student" / f"{name}.ipynb", as_version=4)
    assert leaks.find_leaks(master, dist / name / "student") == []
    solutions, hidden = leaks.master_secrets(master)
    assert solutions and hidden, "the leak check must have secrets to look for"
    answer_cells = [cell for cell in student.cells if "otter_answer_cell" in cell.metadata.get("tags", [])]
    assert len(answer_cells) == len(questions(master)), "one answer cell per question"
    assert all(re.search(r"^\s*(\w+ = )?\.\.\.$", cell.source, re.MULTILINE) for cell in answer_cells)
    cases = [
        case
        for test in student.metadata["otter"]["tests"].values()
        for suite in test["suites"]
        for case in suite["cases"]
    ]
    assert not any(case["hidden"] for case in cases)
    assert len(cases) == sum(info["public"] for info in questions(master).values())


def _broken_master(name: str, question: str, mutate) -> nbformat.NotebookNode:
    """A copy of a master with ``mutate(cells, start, stop)`` applied to one question's cells."""
    master = copy.deepcopy(build.master_notebook(name))
    sources = [cell.source.strip() for cell in master.cells]
    start = next(
        i for i, cell in enumerate(master.cells) if cell.cell_type == "raw" and f"name: {question}" in cell.source
    )
    stop = sources.index("# END QUESTION", start)
    mutate(master.cells, start, stop)
    return master


def _drop_raw_solution_cells(cells, start, stop):
    for index in reversed(range(start, stop)):
        if cells[index].cell_type == "raw" and cells[index].source.strip() in ("# BEGIN SOLUTION", "# END SOLUTION"):
            del cells[index]


def _drop_inline_markers(cells, start, stop):
    for cell in cells[start:stop]:
        if cell.cell_type == "code" and "# BEGIN SOLUTION" in cell.source:
            cell.source = "\n".join(line for line in cell.source.splitlines() if "SOLUTION" not in line)


@pytest.mark.parametrize(
    ("mutate", "expected_kinds"),
    [(_drop_raw_solution_cells, {"otter marker", "solution line"}), (_drop_inline_markers, {"solution line"})],
    ids=["raw-solution-cells-missing", "inline-markers-missing"],
)
def test_leak_check_catches_a_master_that_ships_its_solution(tmp_path, mutate, expected_kinds):
    """Otter accepts both broken masters without a word and ships the solution of q1."""
    master = _broken_master("hw1-advantages", "q1", mutate)
    out = build.assign(master, "hw1-advantages", tmp_path, run_tests=False)
    student = (out / "student" / "hw1-advantages.ipynb").read_text(encoding="utf8")
    assert "centered / (std + eps)" in student, "the broken master must really leak"
    findings = leaks.find_leaks(master, out / "student")
    assert any("'return centered / (std + eps)'" in finding for finding in findings), findings
    assert {kind for kind in ("otter marker", "solution line") if any(kind in f for f in findings)} == expected_kinds
    assert not any("hidden-test line" in finding for finding in findings)


def test_leak_check_catches_a_hidden_test_in_the_student_metadata(dist, tmp_path):
    name = "hw2-clip-kl"
    student_dir = tmp_path / "student"
    student_dir.mkdir()
    student = nbformat.read(dist / name / "autograder" / f"{name}.ipynb", as_version=4)
    student.metadata["otter"]["tests"]["q3"]["suites"][0]["cases"][-1]["hidden"] = False
    nbformat.write(student, student_dir / f"{name}.ipynb")
    findings = leaks.find_leaks(build.master_notebook(name), student_dir)
    assert any("hidden-test line" in finding and "metadata test q3" in finding for finding in findings)
    assert any("solution line" in finding for finding in findings), "the autograder notebook holds solutions"


# ---------------------------------------------------------------- the hidden tests' power


def _run_tests_in_process(notebook: nbformat.NotebookNode) -> dict[str, list[tuple[bool, bool]]]:
    """``{question: [(hidden, passed), ...]}``: the notebook's cells, then every test, with otter's doctest runner."""
    namespace: dict = {}
    results: dict[str, list[tuple[bool, bool]]] = {}
    with warnings.catch_warnings():  # a submission's own warnings (and otter's import) are not under test
        warnings.simplefilter("ignore")
        from otter.test_files.ok_test import run_doctest

        for cell in notebook.cells:
            if cell.cell_type == "code" and "grader" not in cell.source and "import otter" not in cell.source:
                exec(compile(cell.source, "<homework cell>", "exec"), namespace)
        for question, test in notebook.metadata["otter"]["tests"].items():
            for number, case in enumerate(test["suites"][0]["cases"]):
                passed, _ = run_doctest(f"{question} {number}", case["code"], namespace)
                results.setdefault(question, []).append((case["hidden"], passed))
    return results


@pytest.mark.parametrize("mistake", MISTAKES, ids=[f"{m['assignment']}-{m['mistake']}" for m in MISTAKES])
def test_hidden_tests_catch_a_plausible_mistake(dist, mistake, capsys):
    name = mistake["assignment"]
    notebook = nbformat.read(dist / name / "autograder" / f"{name}.ipynb", as_version=4)
    assert all(passed for cases in _run_tests_in_process(notebook).values() for _, passed in cases)
    for old, new in mistake["patch"]:
        hits = [cell for cell in notebook.cells if cell.cell_type == "code" and old in cell.source]
        assert len(hits) == 1 and hits[0].source.count(old) == 1, f"stale patch: {old!r}"
        hits[0].source = hits[0].source.replace(old, new)
    cases = _run_tests_in_process(notebook)[mistake["question"]]
    assert any(hidden and not passed for hidden, passed in cases), "no hidden test catches this mistake"
    public_pass = all(passed for hidden, passed in cases if not hidden)
    assert public_pass == mistake["subtle"], "subtle mistakes pass the public tests, the others do not"
    capsys.readouterr()


# ---------------------------------------------------------------- grading


def _filled(student: nbformat.NotebookNode, solutions: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student notebook with every answer cell holding the reference answer (markers removed)."""
    filled = copy.deepcopy(student)
    assert len(filled.cells) == len(solutions.cells)
    for mine, reference in zip(filled.cells, solutions.cells, strict=True):
        if "otter_answer_cell" in mine.metadata.get("tags", []):
            assert "otter_assign_solution_cell" in reference.metadata.get("tags", [])
            lines = [line for line in reference.source.splitlines() if line.strip() not in INLINE_MARKERS]
            mine.source = "\n".join(re.sub(r"\s*# SOLUTION$", "", line) for line in lines)
    return filled


def _wrong_submission(dist: Path, fixture: dict) -> nbformat.NotebookNode:
    name = fixture["assignment"]
    student = nbformat.read(dist / name / "student" / f"{name}.ipynb", as_version=4)
    solutions = nbformat.read(dist / name / "autograder" / f"{name}.ipynb", as_version=4)
    notebook = _filled(student, solutions)
    hits = [cell for cell in notebook.cells if fixture["replace"] in cell.source]
    assert len(hits) == 1 and hits[0].source.count(fixture["replace"]) == 1, f"{fixture['file']} is stale"
    hits[0].source = hits[0].source.replace(fixture["replace"], fixture["with"])
    return notebook


@pytest.fixture(scope="module")
def grades(dist, tmp_path_factory) -> dict[str, dict[str, str]]:
    """One run of the grading script over a folder that mixes every assignment."""
    folder = tmp_path_factory.mktemp("submissions")
    for name in NAMES:
        (folder / "solutions").mkdir(exist_ok=True)
        (folder / "untouched" / name).mkdir(parents=True)
        solution = dist / name / "autograder" / f"{name}.ipynb"
        if name == "hw2-clip-kl":  # a zip, as the notebook's export cell makes it
            with zipfile.ZipFile(folder / "solutions" / f"{name}.zip", "w") as archive:
                archive.write(solution, f"{name}.ipynb")
        else:
            (folder / "solutions" / f"{name}.ipynb").write_bytes(solution.read_bytes())
        (folder / "untouched" / name / "any-name.ipynb").write_bytes(
            (dist / name / "student" / f"{name}.ipynb").read_bytes()
        )
    for fixture in WRONG:
        nbformat.write(_wrong_submission(dist, fixture), folder / fixture["file"])
    stray = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import grpo_core")])
    nbformat.write(stray, folder / "stray.ipynb")
    sheet = tmp_path_factory.mktemp("grades") / "grades.csv"
    assert grade.main([str(folder), "--dist", str(dist), "--csv", str(sheet), "--jobs", "2"]) == 0
    with sheet.open(newline="") as handle:
        return {row["file"]: row for row in csv.DictReader(handle)}


def _scores(row: dict[str, str], name: str) -> dict[str, float]:
    return {question: float(row[question]) for question in questions(build.master_notebook(name))}


def _possible(name: str) -> dict[str, int]:
    return {q: info["public"] + info["hidden"] for q, info in questions(build.master_notebook(name)).items()}


@pytest.mark.parametrize("name", NAMES)
def test_reference_solutions_score_full_marks(grades, name):
    row = grades[f"solutions/{name}.zip" if name == "hw2-clip-kl" else f"solutions/{name}.ipynb"]
    assert row["assignment"] == name and row["error"] == ""
    assert _scores(row, name) == _possible(name)
    assert float(row["total"]) == float(row["possible"]) == sum(_possible(name).values())


@pytest.mark.parametrize("name", NAMES)
def test_untouched_student_notebook_scores_zero_everywhere(grades, name):
    row = grades[f"untouched/{name}/any-name.ipynb"]
    assert row["assignment"] == name and row["error"] == ""
    assert _scores(row, name) == {question: 0.0 for question in _possible(name)}
    assert float(row["total"]) == 0.0 and float(row["possible"]) == sum(_possible(name).values())


@pytest.mark.parametrize("fixture", WRONG, ids=[fixture["file"] for fixture in WRONG])
def test_wrong_submission_loses_exactly_its_points(grades, fixture):
    row = grades[fixture["file"]]
    name = fixture["assignment"]
    assert row["assignment"] == name and row["error"] == ""
    assert _scores(row, name) == {question: float(points) for question, points in fixture["scores"].items()}
    assert sum(fixture["scores"].values()) < sum(_possible(name).values()), "the mistake must cost points"


def test_grade_sheet_has_one_row_per_submission_and_reports_strays(grades):
    assert len(grades) == 2 * len(NAMES) + len(WRONG) + 1
    header = list(next(iter(grades.values())))
    assert header[:2] == ["file", "assignment"] and header[-4:] == ["total", "possible", "imports_grpo_core", "error"]
    assert header[2:-4] == [f"q{number}" for number in range(1, len(header) - 5)]
    stray = grades["stray.ipynb"]
    assert "assignment name" in stray["error"] and stray["total"] == "" and stray["imports_grpo_core"] == "yes"
    assert all(row["imports_grpo_core"] == "no" for file, row in grades.items() if file != "stray.ipynb")
