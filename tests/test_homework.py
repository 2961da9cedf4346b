"""The homework: masters, ``otter assign``, leak checks and the sandboxed grader.

Every assignment is built once per module into a temporary directory (with
``otter assign`` grading its own solutions, as ``make homework`` does), then
one call of the grading script grades, in parallel, a folder that mixes all
assignments: the reference solutions, the untouched student notebooks, the
deliberately wrong submissions of ``tests/fixtures/homework/`` (each must lose
exactly the points listed there) and hostile ones built here from the reference
notebooks — malformed files, a cell that kills its parent, rewrites its tests or
patches ``np.allclose``, a zip that shadows ``grpo_core``, odd names and kernels.
Each must be graded or reported in its own row, and no cheat may gain a point. A
later run (a late submission, an endless loop under a short ``--timeout``) must
keep every row of the first. A longer list of plausible mistakes is checked
in-process with otter's own doctest runner (no kernel): each must fail a hidden
test. The leak check is proven on masters broken on purpose. The slowest check,
marked ``homework``, installs an autograder zip's requirements into a clean
virtual environment without this project and grades there.
"""

from __future__ import annotations

import copy
import csv
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
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
# The pip that builds the clean environment, pinned with the project's: a grading service runs a current pip (in
# two paired runs 26.3 installed the zips' requirements with 16 and 38 % less CPU than the venv's own pip 23.2).
PIP = next(line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("pip=="))


sys.path.insert(0, str(HOMEWORK))  # the scripts import one another by name, from their folder
build, grade, leaks = (importlib.import_module(name) for name in ("build", "grade", "leaks"))
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
    assert config["init_cell"] and config["check_all_cell"] and config["tests"] == {"files": True}
    assert config["export_cell"]["pdf"] is False and config["generate"]["pdf"] is False
    assert config["requirements"] == "requirements.txt" and config["autograder_files"] == ["grpo_core"]
    assert str(config["python_version"]) == "3.11"
    assert [c for c in master.cells if "manual-answer" in c.metadata.get("tags", [])], (
        "a written question needs an answer cell"
    )
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
def package(tmp_path_factory) -> Path:
    """``grpo_core`` as its wheel installs it: what every autograder zip ships."""
    return build.package_grpo_core(tmp_path_factory.mktemp("grpo-core"))


@pytest.fixture(scope="module")
def dist(tmp_path_factory, package) -> Path:
    """Every assignment built by ``otter assign`` (which grades its own solutions)."""
    out = tmp_path_factory.mktemp("homework-dist")
    with ThreadPoolExecutor(max_workers=2) as pool:
        findings = dict(zip(NAMES, pool.map(lambda name: build.build(name, out, package), NAMES), strict=True))
    assert findings == {name: [] for name in NAMES}, findings
    return out


def test_package_is_grpo_core_whole(package):
    shipped = {path.relative_to(package).as_posix() for path in package.rglob("*.py")}
    source = ROOT / "src" / "grpo_core"
    assert shipped == {path.relative_to(source).as_posix() for path in source.rglob("*.py")}


@pytest.mark.parametrize("name", NAMES)
def test_otter_assign_writes_student_and_autograder_versions(dist, name):
    autograder = dist / name / "autograder"
    assert (dist / name / "student" / f"{name}.ipynb").is_file()
    assert (autograder / f"{name}.ipynb").is_file()
    with zipfile.ZipFile(autograder / f"{name}-autograder.zip") as archive:
        config = json.loads(archive.read("otter_config.json"))
        tests = sorted(path for path in archive.namelist() if path.startswith("tests/"))
        environment = yaml.safe_load(archive.read("environment.yml"))
        pip_lines = archive.read("requirements.txt").decode().splitlines()
        assert "files/grpo_core/__init__.py" in archive.namelist()
    assert config["assignment_name"] == name
    assert tests == sorted(f"tests/{question}.py" for question in questions(build.master_notebook(name)))
    pins = {line.split("==")[0]: line for line in (ROOT / "requirements.txt").read_text().splitlines() if "==" in line}
    wanted = (HOMEWORK / name / "requirements.txt").read_text().split()
    assert [pins[package] for package in wanted] == [line for line in pip_lines if not line.startswith(("-", "otter"))]
    assert pip_lines[0] == "otter-grader[grading]==7.0.0"
    assert ("torch" in wanted) == (build.TORCH_CPU_INDEX in pip_lines), "torch only from the CPU index"
    assert "python=3.11" in environment["dependencies"]
    assert environment["dependencies"][-1]["pip"][1:] == pip_lines[1:]
    student_lines = (dist / name / "student" / "requirements.txt").read_text().splitlines()
    assert student_lines == [*pip_lines[1:], "otter-grader==7.0.0"]


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
    assert [cell.cell_type for cell in student.cells if "manual-answer" in cell.metadata.get("tags", [])] == [
        "markdown"
    ]
    setup = student.cells[0]
    assert "otter_ignore" in setup.metadata["tags"] and setup.metadata["editable"] is False
    embedded = leaks._embedded_test_files(setup.source)
    cases = [case for file_cases in embedded.values() for case in file_cases]
    assert len(embedded) == len(questions(master)) and not any(case["hidden"] for case in cases)
    assert len(cases) == sum(info["public"] for info in questions(master).values())
    assert sorted(path.name for path in (dist / name / "student").iterdir()) == sorted(
        [f"{name}.ipynb", "requirements.txt"]
    )
    assert not any("grpo_core" in cell.source for cell in student.cells if cell.cell_type == "code")


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
    out = build.assign(master, "hw1-advantages", tmp_path, build.package_grpo_core(tmp_path), run_tests=False)
    student = (out / "student" / "hw1-advantages.ipynb").read_text(encoding="utf8")
    assert "centered / (std + eps)" in student, "the broken master must really leak"
    findings = leaks.find_leaks(master, out / "student")
    assert any("'return centered / (std + eps)'" in finding for finding in findings), findings
    assert {kind for kind in ("otter marker", "solution line") if any(kind in f for f in findings)} == expected_kinds
    assert not any("hidden-test line" in finding for finding in findings)


@pytest.mark.parametrize("still_marked_hidden", [True, False], ids=["marked-hidden", "unmarked"])
def test_leak_check_catches_a_hidden_test_embedded_in_the_student_notebook(dist, tmp_path, still_marked_hidden):
    """The student notebook carries its public tests in its first cell: a hidden one slipped in is found."""
    name = "hw2-clip-kl"
    student_dir = tmp_path / "student"
    student_dir.mkdir()
    student = nbformat.read(dist / name / "student" / f"{name}.ipynb", as_version=4)
    full = (dist / name / "autograder" / "tests" / "q3.py").read_text()
    if not still_marked_hidden:
        full = full.replace("'hidden': True", "'hidden': False")
    lines = student.cells[0].source.splitlines()
    (index,) = [i for i, line in enumerate(lines) if line.startswith("    'q3.py': ")]
    lines[index] = f"    'q3.py': {full!r},"
    student.cells[0].source = "\n".join(lines)
    nbformat.write(student, student_dir / f"{name}.ipynb")
    findings = leaks.find_leaks(build.master_notebook(name), student_dir)
    assert any("hidden-test line" in finding and "cell 0 embedded test" in finding for finding in findings)
    assert any("holds a hidden test case" in finding for finding in findings) == still_marked_hidden


# ---------------------------------------------------------------- the hidden tests' power


def _run_tests_in_process(notebook: nbformat.NotebookNode, tests: Path) -> dict[str, list[tuple[bool, bool]]]:
    """``{question: [(hidden, passed), ...]}``: the notebook's cells, then each test file, by otter's doctest runner."""
    namespace: dict = {}
    results: dict[str, list[tuple[bool, bool]]] = {}
    with warnings.catch_warnings():  # a submission's own warnings (and otter's import) are not under test
        warnings.simplefilter("ignore")
        from otter.test_files.ok_test import run_doctest

        for cell in notebook.cells:
            if cell.cell_type == "code" and "grader" not in cell.source and "import otter" not in cell.source:
                exec(compile(cell.source, "<homework cell>", "exec"), namespace)
        for path in sorted(tests.glob("*.py")):
            for number, case in enumerate(leaks._test_cases(path.read_text())):
                passed, _ = run_doctest(f"{path.stem} {number}", case["code"], namespace)
                results.setdefault(path.stem, []).append((case["hidden"], passed))
    return results


@pytest.mark.parametrize("mistake", MISTAKES, ids=[f"{m['assignment']}-{m['mistake']}" for m in MISTAKES])
def test_hidden_tests_catch_a_plausible_mistake(dist, mistake, capsys):
    name = mistake["assignment"]
    notebook = nbformat.read(dist / name / "autograder" / f"{name}.ipynb", as_version=4)
    tests = dist / name / "autograder" / "tests"
    assert all(passed for cases in _run_tests_in_process(notebook, tests).values() for _, passed in cases)
    for old, new in mistake["patch"]:
        hits = [cell for cell in notebook.cells if cell.cell_type == "code" and old in cell.source]
        assert len(hits) == 1 and hits[0].source.count(old) == 1, f"stale patch: {old!r}"
        hits[0].source = hits[0].source.replace(old, new)
    cases = _run_tests_in_process(notebook, tests)[mistake["question"]]
    assert any(hidden and not passed for hidden, passed in cases), "no hidden test catches this mistake"
    public_pass = all(passed for hidden, passed in cases if not hidden)
    assert public_pass == mistake["subtle"], "subtle mistakes pass the public tests, the others do not"
    capsys.readouterr()


# ---------------------------------------------------------------- grading


def _filled(student: nbformat.NotebookNode, solutions: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student notebook with every answer cell holding the reference answer (markers removed)."""
    filled = copy.deepcopy(student)
    mine_cells = filled.cells[1:]  # the student notebook's first cell writes its public tests
    assert len(mine_cells) == len(solutions.cells)
    for mine, reference in zip(mine_cells, solutions.cells, strict=True):
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


def _notebook(dist: Path, name: str, version: str) -> nbformat.NotebookNode:
    return nbformat.read(dist / name / version / f"{name}.ipynb", as_version=4)


def _reference(dist: Path, name: str) -> nbformat.NotebookNode:
    """The student notebook with every answer filled in from the reference solutions."""
    return _filled(_notebook(dist, name, "student"), _notebook(dist, name, "autograder"))


def _with_cell(notebook: nbformat.NotebookNode, source: str, *, at: int | None = None) -> nbformat.NotebookNode:
    changed = copy.deepcopy(notebook)
    cell = nbformat.v4.new_code_cell(source)
    changed.cells.insert(len(changed.cells) if at is None else at, cell)
    return changed


WRITTEN_ANSWER = "Every advantage shrinks by sqrt((G - 1) / G), whatever the rewards."
ROGUE_TEST = (
    "OK_FORMAT = True\ntest = {'name': NAME, 'points': 100, 'suites': [{'cases': [{'code': '>>> assert True', "
    "'hidden': False, 'locked': False}], 'scored': True, 'setup': '', 'teardown': '', 'type': 'doctest'}]}\n"
)
REWRITE_TESTS = f"""\
import glob
import pathlib

for _path in glob.glob("tests/*.py") + glob.glob("../tests/*.py"):
    try:
        pathlib.Path(_path).write_text({ROGUE_TEST!r}.replace("NAME", repr(pathlib.Path(_path).stem)))
    except OSError as error:
        print("could not rewrite", _path, error)
"""
PATCH_NUMPY = "np.allclose = lambda *args, **kwargs: True\nnp.array_equal = lambda *args, **kwargs: True"
KILL_PARENT = "import os\nimport signal\n\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(-1, signal.SIGKILL)"
WRITE_TO_REPO = f"open({str(ROOT / 'homework' / 'pwned.txt')!r}, 'w').write('pwned')"
SHADOW = {
    "grpo_core/__init__.py": "",
    "grpo_core/advantages.py": (
        "import numpy as np\n\n\ndef group_advantages(rewards, eps=1e-8):\n"
        "    rewards = np.asarray(rewards, dtype=float)\n"
        "    centered = rewards - rewards.mean(axis=-1, keepdims=True)\n"
        "    return centered / (rewards.std(axis=-1, keepdims=True, ddof=1) + eps)\n"
    ),
}
DDOF1 = next(fixture for fixture in WRONG if fixture["file"] == "hw1-ddof1.ipynb")
FORMULA_NAME = "=HYPERLINK(1)+2.ipynb"


def _write(notebook: nbformat.NotebookNode, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


def _submission_folder(dist: Path, folder: Path) -> None:
    """References, untouched and wrong submissions, strays, malformed and hostile files."""
    for name in NAMES:
        reference = _reference(dist, name)
        if name == "hw1-advantages":
            (answer,) = [c for c in reference.cells if "manual-answer" in c.metadata.get("tags", [])]
            answer.source = WRITTEN_ANSWER
        if name == "hw2-clip-kl":  # a zip, as the notebook's export cell makes it
            (folder / "solutions").mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(folder / "solutions" / f"{name}.zip", "w") as archive:
                archive.writestr(f"{name}.ipynb", nbformat.writes(reference))
        else:
            _write(reference, folder / "solutions" / f"{name}.ipynb")
        _write(_notebook(dist, name, "student"), folder / "untouched" / name / "any-name.ipynb")
    for fixture in WRONG:
        _write(_wrong_submission(dist, fixture), folder / fixture["file"])
    _write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import grpo_core")]), folder / "stray.ipynb")
    malformed = folder / "malformed"
    malformed.mkdir()
    for file, text in {
        "object.ipynb": "{}",
        "list.ipynb": "[]",
        "null.ipynb": "null",
        "text.ipynb": "not json",
    }.items():
        (malformed / file).write_text(text)
    otter_string = _notebook(dist, "hw1-advantages", "student")
    otter_string.metadata.otter = "hw1-advantages"
    _write(otter_string, malformed / "otter-not-a-dict.ipynb")
    untouched = _notebook(dist, "hw1-advantages", "student")
    hostile = folder / "hostile"
    _write(_with_cell(_reference(dist, "hw1-advantages"), KILL_PARENT), hostile / "kills-parent.ipynb")
    _write(_with_cell(untouched, REWRITE_TESTS, at=2), hostile / "rewrites-tests.ipynb")
    (numpy_cell,) = [i for i, cell in enumerate(untouched.cells) if cell.source.startswith("import numpy as np")]
    _write(_with_cell(untouched, PATCH_NUMPY, at=numpy_cell + 1), hostile / "patches-numpy.ipynb")
    _write(_with_cell(untouched, WRITE_TO_REPO, at=2), hostile / "writes-to-repo.ipynb")
    with zipfile.ZipFile(hostile / "shadows-grpo-core.zip", "w") as archive:
        archive.writestr("hw1-ddof1.ipynb", nbformat.writes(_wrong_submission(dist, DDOF1)))
        for file, text in SHADOW.items():
            archive.writestr(file, text)
    _write(_reference(dist, "hw1-advantages"), folder / "renamed" / "hw1-advantages (1).ipynb")
    custom_kernel = _reference(dist, "hw3-bandit-step")
    custom_kernel.metadata.kernelspec = {"name": "my-course-env", "display_name": "Course env", "language": "python"}
    _write(custom_kernel, folder / "custom-kernel.ipynb")
    _write(_reference(dist, "hw2-clip-kl"), folder / FORMULA_NAME)


def _sheets(out: Path) -> dict[str, dict[str, str]]:
    """Every row of every sheet in ``out``, by file (the points-possible rows under their sheet's name)."""
    rows = {}
    for sheet in sorted(out.glob("*.csv")):
        with sheet.open(newline="") as handle:
            for row in csv.DictReader(handle):
                key = f"{grade.POINTS_ROW} {sheet.stem}" if row["file"] == grade.POINTS_ROW else row["file"]
                assert key not in rows, f"{key} appears twice"
                rows[key] = {**row, "sheet": sheet.stem}
    return rows


@pytest.fixture(scope="module")
def graded(dist, tmp_path_factory) -> Path:
    """One run of the grading script over a folder that mixes every assignment and every hostile file."""
    folder = tmp_path_factory.mktemp("submissions")
    _submission_folder(dist, folder)
    roster = tmp_path_factory.mktemp("roster") / "roster.csv"
    roster.write_text("student_id,file\nS-001,solutions/hw1-advantages.ipynb\nS-002,untouched\n")
    out = tmp_path_factory.mktemp("grades")
    arguments = [str(folder), "--dist", str(dist), "--out", str(out), "--jobs", "2", "--roster", str(roster)]
    assert grade.main([*arguments, "--timeout", "300"]) == 0
    return out


@pytest.fixture(scope="module")
def grades(graded) -> dict[str, dict[str, str]]:
    return _sheets(graded)


def _scores(row: dict[str, str], name: str) -> dict[str, float]:
    return {question: float(row[question]) for question in questions(build.master_notebook(name))}


def _possible(name: str) -> dict[str, int]:
    return {q: info["public"] + info["hidden"] for q, info in questions(build.master_notebook(name)).items()}


def _full_marks(row: dict[str, str], name: str) -> None:
    assert row["sheet"] == name and row["error"] == "" and row["suspicious"] == ""
    assert _scores(row, name) == _possible(name)
    assert float(row["total"]) == float(row["possible"]) == sum(_possible(name).values())


@pytest.mark.parametrize("name", NAMES)
def test_reference_solutions_score_full_marks(grades, name):
    _full_marks(grades[f"solutions/{name}.zip" if name == "hw2-clip-kl" else f"solutions/{name}.ipynb"], name)


@pytest.mark.parametrize("name", NAMES)
def test_untouched_student_notebook_scores_zero_everywhere(grades, name):
    row = grades[f"untouched/{name}/any-name.ipynb"]
    assert row["sheet"] == name and row["error"] == ""
    assert _scores(row, name) == {question: 0.0 for question in _possible(name)}
    assert float(row["total"]) == 0.0 and float(row["possible"]) == sum(_possible(name).values())


@pytest.mark.parametrize("fixture", WRONG, ids=[fixture["file"] for fixture in WRONG])
def test_wrong_submission_loses_exactly_its_points(grades, fixture):
    row = grades[fixture["file"]]
    name = fixture["assignment"]
    assert row["sheet"] == name and row["error"] == ""
    assert _scores(row, name) == {question: float(points) for question, points in fixture["scores"].items()}
    assert sum(fixture["scores"].values()) < sum(_possible(name).values()), "the mistake must cost points"


@pytest.mark.parametrize("name", NAMES)
def test_one_sheet_per_assignment_with_points_possible(graded, name):
    with (graded / f"{name}.csv").open(newline="") as handle:
        header = next(csv.reader(handle))
    questions_ = list(_possible(name))
    assert header == [
        "student_id",
        "file",
        "sha256",
        "graded_at",
        *questions_,
        "total",
        "possible",
        "suspicious",
        "error",
    ]
    row = _sheets(graded)[f"{grade.POINTS_ROW} {name}"]
    assert _scores(row, name) == _possible(name) and float(row["possible"]) == sum(_possible(name).values())


@pytest.mark.parametrize(
    ("file", "reason"),
    [
        ("malformed/object.ipynb", "without a cell list"),
        ("malformed/list.ipynb", "JSON list"),
        ("malformed/null.ipynb", "JSON NoneType"),
        ("malformed/text.ipynb", "not JSON"),
        ("malformed/otter-not-a-dict.ipynb", "metadata.otter is str"),
        ("stray.ipynb", "metadata.otter is NoneType"),
    ],
)
def test_malformed_files_are_reported_in_their_own_row(grades, file, reason):
    row = grades[file]
    assert row["sheet"] == "unmatched" and reason in row["error"] and row["sha256"]


def test_a_cell_that_kills_its_parent_kills_nothing(grades):
    """In its own PID namespace the kernel has no parent to see (getppid() is 0) and kill(-1) reaches nobody."""
    row = grades["hostile/kills-parent.ipynb"]
    assert "os.kill" in row["suspicious"]
    _full_marks({**row, "suspicious": ""}, "hw1-advantages")


@pytest.mark.parametrize(
    ("file", "flag"),
    [
        ("hostile/rewrites-tests.ipynb", "names the tests or results"),
        ("hostile/patches-numpy.ipynb", "reassigns np.allclose"),
        ("hostile/writes-to-repo.ipynb", ""),
    ],
)
def test_cheats_on_an_empty_notebook_gain_nothing(grades, file, flag):
    row = grades[file]
    assert row["sheet"] == "hw1-advantages" and row["error"] == ""
    assert _scores(row, "hw1-advantages") == dict.fromkeys(_possible("hw1-advantages"), 0.0)
    assert flag in row["suspicious"]
    assert not (ROOT / "homework" / "pwned.txt").exists(), "the submission wrote into the repository"


def test_a_zip_cannot_shadow_the_answer_key(grades):
    """Only the notebook is taken from a zip: its own grpo_core does not replace the autograder's."""
    row = grades["hostile/shadows-grpo-core.zip"]
    assert row["error"] == ""
    assert _scores(row, "hw1-advantages") == {q: float(points) for q, points in DDOF1["scores"].items()}


@pytest.mark.parametrize(
    ("file", "name"),
    [
        ("renamed/hw1-advantages (1).ipynb", "hw1-advantages"),
        ("custom-kernel.ipynb", "hw3-bandit-step"),
        ("'" + FORMULA_NAME, "hw2-clip-kl"),
    ],
)
def test_odd_names_and_kernels_are_graded_normally(grades, file, name):
    _full_marks(grades[file], name)


def test_roster_feedback_and_written_answers(graded, grades):
    assert grades["solutions/hw1-advantages.ipynb"]["student_id"] == "S-001"
    assert grades["untouched/hw3-bandit-step/any-name.ipynb"]["student_id"] == "S-002"
    assert grades["solutions/hw3-bandit-step.ipynb"]["student_id"] == ""
    feedback = json.loads((graded / "feedback" / "hw1-advantages" / "solutions__hw1-advantages.ipynb.json").read_text())
    assert feedback["student_id"] == "S-001" and feedback["written_answers"] == [WRITTEN_ANSWER]
    scored = {test["name"]: test["score"] for test in feedback["otter"]["tests"] if "score" in test}
    assert scored == {q: float(points) for q, points in _possible("hw1-advantages").items()}
    manual = (graded / "manual-hw1-advantages.md").read_text()
    assert f"### solutions/hw1-advantages.ipynb (S-001)\n\n{WRITTEN_ANSWER}" in manual


def test_every_submission_has_exactly_one_row(grades):
    files = [file for file in grades if not file.startswith(grade.POINTS_ROW)]
    assert len(files) == 2 * len(NAMES) + len(WRONG) + 1 + 5 + 5 + 3
    assert all(row["suspicious"] == "" for file, row in grades.items() if file.startswith(("solutions/", "untouched/")))
    assert grades["stray.ipynb"]["suspicious"] == "imports grpo_core"


def test_later_runs_keep_the_earlier_ones_and_time_out_an_endless_loop(dist, graded, tmp_path):
    """A late file, then an endless loop under a short --timeout, into the same sheets: nothing is lost."""
    before = _sheets(graded)
    arguments = ["--dist", str(dist), "--out", str(graded), "--jobs", "2"]
    _write(_wrong_submission(dist, DDOF1), tmp_path / "late" / "late.ipynb")
    assert grade.main([str(tmp_path / "late"), *arguments]) == 0
    endless = _with_cell(_reference(dist, "hw1-advantages"), "while True:\n    pass", at=3)
    _write(endless, tmp_path / "endless" / "endless.ipynb")
    assert grade.main([str(tmp_path / "endless"), *arguments, "--timeout", "5"]) == 0
    after = _sheets(graded)
    assert {file: after[file] for file in before} == before
    assert set(after) - set(before) == {"endless.ipynb", "late.ipynb"}
    assert "timed out after 5 s" in after["endless.ipynb"]["error"] and after["endless.ipynb"]["total"] == ""
    assert _scores(after["late.ipynb"], "hw1-advantages") == {q: float(p) for q, p in DDOF1["scores"].items()}


# ---------------------------------------------------------------- kernels forked by the zygote

# What a kernel can see of how it was started, with the submission's folder written CWD.
KERNEL_PROBE = """\
import sys

started_warm = "otter" in sys.modules and "numpy" in sys.modules
import json, logging, os, pdb, re, signal, tempfile, threading, doctest, numpy, otter  # as a submission does
from ipykernel.kernelapp import IPKernelApp

app, cwd, ours = IPKernelApp.instance(), os.getcwd(), "JUPYTER_PATH"  # the test's, one per kind of kernel
logging.getLogger("otter.check").warning("reaches the notebook")
here = lambda text: str(text).replace(cwd, "CWD")
status = dict(line.split(":\\t") for line in open("/proc/self/status").read().splitlines())
print(json.dumps({
    "warm": started_warm,
    "ids": [os.getpid(), os.getppid(), os.getuid(), os.getgid(), os.getgroups()],
    "processes": sorted(name for name in os.listdir("/proc") if name.isdigit()),
    "privileges": [status[key] for key in ("NoNewPrivs", "CapEff", "CapPrm")],
    "argv": [here(arg) for arg in sys.argv], "path": [here(entry) for entry in sys.path],
    "main": sys.modules["__main__"].__name__, "cwd": here(cwd), "temp": here(tempfile.gettempdir()),
    "environment": {key: here(value) for key, value in os.environ.items() if key not in ("JPY_PARENT_PID", ours)},
    "signals": [str(signal.getsignal(number)) for number in (signal.SIGINT, signal.SIGCHLD, signal.SIGPIPE)],
    "threads": sorted(thread.name.split(" ")[0].rstrip("-0123456789") for thread in threading.enumerate()),
    "files": sorted(name for name in (re.sub("[0-9]+", "N", here(os.readlink(f"/proc/self/fd/{fd}")))
                                      for fd in os.listdir("/proc/self/fd") if os.path.exists(f"/proc/self/fd/{fd}"))
                    if not name.endswith("-journal")),  # open while IPython's history thread writes
    "mounts": sorted(line.split()[1] for line in open("/proc/self/mounts")),
    "pdb": [pdb.Pdb.__name__, doctest._OutputRedirectingPdb.__mro__[1].__name__],
    "parent_poller": type(getattr(app, "poller", None)).__name__, "stdout": type(sys.stdout).__name__,
    "flags": str(sys.flags), "warnings": len(__import__("warnings").filters),
}))
"""


def _probe_kernel(kernel: str, jupyter: Path, workdir: Path, monkeypatch) -> tuple[dict, str]:
    """What :data:`KERNEL_PROBE` prints in a kernel of ``kernel``'s spec started in ``workdir``, and its stderr."""
    from nbclient import NotebookClient

    monkeypatch.setenv("JUPYTER_PATH", str(jupyter))
    monkeypatch.setenv("PYTHONNOUSERSITE", "1")  # as in the grader's workers, which start the kernels
    monkeypatch.delenv("PYTHONPATH", raising=False)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(KERNEL_PROBE)])
    NotebookClient(notebook, kernel_name=kernel, timeout=120, resources={"metadata": {"path": str(workdir)}}).execute()
    streams = {output.name: output.text for output in notebook.cells[0].outputs}
    return json.loads(streams["stdout"]), streams.get("stderr", "")


@pytest.mark.homework
def test_a_kernel_forked_by_the_zygote_starts_as_a_fresh_one(monkeypatch):
    """The same probe in a kernel that started afresh and in one forked by ``zygote.py``: only the warm modules
    differ (and the submission's folder, written CWD). Each runs in the grader's sandbox as slot 0's user."""
    assert grade.sandboxed(), "the grader's sandbox needs root and util-linux's unshare"
    scratch = grade.prepare_scratch(Path(tempfile.mkdtemp(prefix="grade-probe-")))  # the sandbox user passes through
    workers = grade.Workers(sys.executable, 1, scratch, timeout=120)
    try:
        seen = {}
        for how, zygote in (("fresh", None), ("forked", workers.zygote_socket)):
            jupyter = scratch / f"jupyter-{how}"
            (kernel,) = grade.write_kernelspecs(jupyter, sys.executable, 1, zygote)
            workdir = scratch / "work" / how
            (workdir / "scratch").mkdir(parents=True)
            os.chown(workdir / "scratch", grade.UID_BASE, grade.UID_BASE)
            seen[how] = _probe_kernel(kernel, jupyter, workdir, monkeypatch)
    finally:
        workers.close()
        shutil.rmtree(scratch)
    (fresh, fresh_log), (forked, forked_log) = seen["fresh"], seen["forked"]
    assert (fresh.pop("warm"), forked.pop("warm")) == (False, True)
    assert forked == fresh
    assert "reaches the notebook" in fresh_log and "reaches the notebook" in forked_log
    assert fresh["ids"][:3] == [1, 0, grade.UID_BASE] and fresh["processes"] == ["1"]


# ---------------------------------------------------------------- the zip anywhere


@pytest.fixture(scope="module")
def clean_python(dist) -> Path:
    """A virtual environment holding only what the autograder zips require (no grpo_core, no project)."""
    home = Path(tempfile.mkdtemp(prefix="homework-clean-env-"))
    home.chmod(0o755)  # the sandbox user must be able to run its interpreter
    requirements = home / "requirements.txt"
    lines = []
    for name in NAMES:
        zip_path = dist / name / "autograder" / f"{name}-autograder.zip"
        with zipfile.ZipFile(zip_path) as archive:
            lines += [line for line in archive.read("requirements.txt").decode().splitlines() if line not in lines]
    requirements.write_text("\n".join(lines) + "\n")
    subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True)
    python = home / "venv" / "bin" / "python"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PIP_RETRIES"] = "0"  # where the PyTorch CPU index is unreachable, fail over to the other indexes at once
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, PIP], check=True, env=env)  # a grading service's current pip, not the venv's 23.2
    subprocess.run([*pip, "-r", str(requirements)], check=True, env=env)
    yield python
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.homework
def test_autograder_zip_grades_the_same_in_a_clean_environment(dist, grades, clean_python, tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    probe = subprocess.run([str(clean_python), "-c", "import grpo_core"], capture_output=True, env=env, cwd=tmp_path)
    assert probe.returncode != 0, "the clean environment must not hold the project"
    folder = tmp_path / "submissions"
    for name in NAMES:
        _write(_reference(dist, name), folder / "solutions" / f"{name}.ipynb")
    for fixture in WRONG:
        _write(_wrong_submission(dist, fixture), folder / fixture["file"])
    out = tmp_path / "grades"
    arguments = [str(folder), "--dist", str(dist), "--out", str(out), "--jobs", "2", "--python", str(clean_python)]
    assert grade.main(arguments) == 0
    clean = _sheets(out)
    for name in NAMES:
        _full_marks(clean[f"solutions/{name}.ipynb"], name)
    for fixture in WRONG:
        assert _scores(clean[fixture["file"]], fixture["assignment"]) == _scores(
            grades[fixture["file"]], fixture["assignment"]
        )
