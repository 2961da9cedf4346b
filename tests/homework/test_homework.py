"""The homework masters, ``otter assign``, the leak check, and the power of the hidden tests.

Every assignment is built once per test run (``homework_support.shared_dist``, as ``make homework`` does but for
otter's own run of its tests on the solutions: here otter's ``grader.check`` runs every public test on them in this
process, and the zips grade them in tests/homework/test_grading_clean.py). The leak check is proven on masters broken on
purpose. Every untouched student notebook is graded in-process by the same checker that grades submissions
(``homework/checker.py``; the notebook's cells run here instead of in a jail): it earns nothing (the plausible
mistakes of every assignment: tests/homework/test_homework_mistakes.py). Grading itself, in jails, is tested by
tests/homework/test_grading.py and tests/homework/test_grading_clean.py.
"""

from __future__ import annotations

import copy
import json
import math
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
import yaml
from homework_support import (
    HOMEWORK,
    NAMES,
    ROOT,
    build,
    checked,
    checker,
    grade,
    leaks,
    reference,
    shared_dist,
)

BIN = Path(sys.executable).parent
# The shared build runs otter on every master: allow for a busy machine.
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


NO_GRPO_CORE = "the autograder runs your notebook without it"


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
    prose = " ".join(" ".join(c.source.split()) for c in master.cells if c.cell_type == "markdown")
    assert NO_GRPO_CORE in prose and "flags" not in prose, (
        "the student's notebook has grpo_core wherever the companion is installed, and its checks pass with it; "
        f"the jail has no grpo_core (an answer that imports it scores 0), so the master must say: {NO_GRPO_CORE!r}"
    )


def test_a_master_is_parsed_again_when_its_file_changes_and_each_caller_gets_a_copy(tmp_path, monkeypatch):
    """build.master_notebook parses a master once per process (the tests ask hundreds of times): a caller that
    changes what it got changes no other caller's copy, and an edited file is parsed again."""
    name = "hw1-advantages"
    (tmp_path / name).mkdir()
    shutil.copy(HOMEWORK / name / f"{name}.md", tmp_path / name / f"{name}.md")
    monkeypatch.setattr(build, "HOMEWORK", tmp_path)
    first = build.master_notebook(name)
    original, first.cells[-1].source = first.cells[-1].source, "changed by a caller"
    assert build.master_notebook(name).cells[-1].source == original
    with (tmp_path / name / f"{name}.md").open("a") as master:
        master.write("\nAn edit at the end.\n")
    assert build.master_notebook(name).cells[-1].source.endswith("An edit at the end.")


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
    return shared_dist(tmp_path_factory)


@pytest.fixture(scope="module")
def package(dist) -> Path:
    """``grpo_core`` as its wheel installs it: what every autograder zip ships."""
    return dist.parent / "homework-package" / "grpo_core"


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
        shipped = archive.namelist()
        key = json.loads(archive.read("key.json"))
        environment = yaml.safe_load(archive.read("environment.yml"))
        pip_lines = archive.read("requirements.txt").decode().splitlines()
        assert archive.read("run_otter.py") == (HOMEWORK / "gradescope.py").read_bytes()
    assert "files/grpo_core/__init__.py" in shipped and {f"grader/{s}" for s in build.GRADER_SCRIPTS} <= set(shipped)
    assert not [path for path in shipped if path.startswith("tests/")], "the hidden tests are in key.json only"
    assert config["assignment_name"] == name
    assert key == checker.make_key(build.master_notebook(name)) == json.loads((autograder / "key.json").read_text())
    assert [q["name"] for q in key["questions"]] == list(questions(build.master_notebook(name)))
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
    assert len(cases) == len(questions(master)), "a question's public tests run as one check"
    public = build.public_test_files(checker.make_key(master)).values()
    assert list(embedded.values()) == [leaks._test_cases(text) for text in public], "the checks build writes"
    assert sorted(path.name for path in (dist / name / "student").iterdir()) == sorted(
        [f"{name}.ipynb", "requirements.txt"]
    )
    assert not any("grpo_core" in cell.source for cell in student.cells if cell.cell_type == "code")


@pytest.mark.parametrize("name", NAMES)
def test_public_tests_pass_with_otter_on_the_reference_solutions(dist, name, tmp_path, monkeypatch):
    """What ``otter assign`` checks when it runs its tests on the solutions (the shared build leaves that run out):
    in the student notebook filled with the reference answers, otter's own ``grader.check`` passes every public
    test of every question, as in a student's kernel. The cells run in this process, in order, from the notebook's
    folder (its first cell writes the tests there, and otter looks for the notebook there); the cells that call the
    grader are left to the checks here."""
    from IPython.core.inputtransformer2 import TransformerManager

    monkeypatch.chdir(tmp_path)
    solved = reference(dist, name)
    nbformat.write(solved, tmp_path / f"{name}.ipynb")
    namespace: dict = {"__name__": "__main__"}
    for cell in solved.cells:
        if cell.cell_type == "code" and not re.search(r"^grader\.", cell.source, re.MULTILINE):  # check, export
            exec(compile(TransformerManager().transform_cell(cell.source), "<cell>", "exec"), namespace)
    grader = namespace["grader"]
    results = {question: grader.check(question, namespace) for question in questions(build.master_notebook(name))}
    assert sorted(path.stem for path in (tmp_path / build.tests_folder(name)).glob("*.py")) == sorted(results)
    failed = {question: result.summary() for question, result in results.items() if not result.passed_all}
    assert not failed and all(result.test_cases for result in results.values())


@pytest.mark.parametrize("name", NAMES)
def test_untouched_student_notebook_scores_zero_everywhere(dist, name):
    """The student notebook as shipped earns no point: the code grading runs of it, run by the grader's runner in
    this process, scored by its checker against the zip's key (tests/homework/test_grading.py grades hw1's in a
    jail)."""
    student = grade.parse_notebook((dist / name / "student" / f"{name}.ipynb").read_bytes())
    cells = [source for _, source in grade.code_sources(student)]
    results = checked(checker.load_key(dist / name / "autograder" / "key.json"), cells)
    assert list(results) == list(questions(build.master_notebook(name)))
    assert [case for cases in results.values() for case in cases if case[1]] == []


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
def test_leak_check_catches_a_master_that_ships_its_solution(package, tmp_path, mutate, expected_kinds):
    """Otter accepts both broken masters without a word and ships the solution of q1."""
    master = _broken_master("hw1-advantages", "q1", mutate)
    out = build.assign(master, "hw1-advantages", tmp_path, package, run_tests=False)
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


def test_a_masters_namespace_follows_its_setup_cells_not_the_keys_address():
    """The checker runs a master's setup once per process. Cached by ``id(key)``, a freed key's address went to the
    next key, which was then checked against the other master's namespace (a reference solution failed hw3's
    tests at random, depending on which test ran before it)."""
    first = {"setup": ["x = 1"], "questions": []}
    address = id(first)
    assert checker.reference(first)["x"] == 1
    del first
    keys = [{"setup": [f"x = {n}"], "questions": []} for n in range(2, 200)]
    assert any(id(key) == address for key in keys), "no key took the freed address: the test shows nothing"
    assert [checker.reference(key)["x"] for key in keys] == list(range(2, 200))


def _cases(notebook: nbformat.NotebookNode, name: str) -> dict[str, list[tuple[bool, bool]]]:
    """``{question: [(hidden, passed), ...]}`` of the notebook's code as the checker grades it."""
    cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    return checked(checker.make_key(build.master_notebook(name)), cells)


# ---------------------------------------------------------------- comparisons that do not broadcast

# Answers that know nothing: arrays with a leading axis of length 0 (np.allclose broadcasts them against any
# vector) and the policy a student could guess from the question's target.
HW3_EMPTY_AND_GUESSED = """\
import numpy as np

def softmax(theta):
    return np.zeros((0, 4))

def log_softmax(theta):
    return np.zeros((0, 4))

def grpo_gradient(*args, **kwargs):
    return np.zeros((0, 4))

def grpo_step(*args, **kwargs):
    return np.zeros((0, 4))

def train(seed, **settings):
    return np.array([0.0, 1.0, 0.0, 0.0])
"""


def test_empty_arrays_and_a_guessed_policy_earn_nothing_on_hw3(dist):
    """Only q4's public check (a probability vector) may pass; every hidden case fails."""
    name = "hw3-bandit-step"
    notebook = nbformat.read(dist / name / "student" / f"{name}.ipynb", as_version=4)
    notebook.cells = [*notebook.cells[1:], nbformat.v4.new_code_cell(HW3_EMPTY_AND_GUESSED)]  # 0: writes files
    passed = {question: [hidden for hidden, ok in cases if ok] for question, cases in _cases(notebook, name).items()}
    assert passed == {"q1": [], "q2": [], "q3": [], "q4": [False]}


@pytest.mark.parametrize(
    ("name", "old", "new", "refusal"),
    [
        ("hw9-failure-modes", "assert matches(", "assert np.allclose(", "bare allclose"),
        ("hw6-verifier-groups", 'f"the answers {_t_a!r} and', 'f"{_t_a!r} and', "without its outer quote"),
    ],
    ids=["bare-allclose", "message-otter-strips"],
)
def test_build_refuses_a_master_whose_tests_mislead(name, old, new, refusal, monkeypatch, tmp_path):
    """A bare allclose broadcasts (an empty answer passes it); otter prints ``str(error).strip("'")``, so a public
    message that begins with a quoted value loses its first quote (``1/2' and '2/4' are the same number``)."""
    master = build.master_notebook(name)
    (cell,) = [cell for cell in master.cells if old in cell.source]
    cell.source = cell.source.replace(old, new)
    monkeypatch.setattr(build, "master_notebook", lambda name: master)
    with pytest.raises(RuntimeError, match=refusal):
        build.build(name, tmp_path, tmp_path / "unused")


# ---------------------------------------------------------------- what a failing public check prints, in a kernel


def test_a_failing_check_in_the_students_kernel_prints_six_lines(dist, tmp_path):
    """The student notebook, answered with the sample std, run in a Jupyter kernel up to ``grader.check("q1")``:
    the check's output (text and HTML) is the failing assertion and its message with the student's value.
    (tests/homework/test_public_checks.py checks every near-miss of every assignment through the same otter call.)"""
    from nbclient import NotebookClient

    name = "hw1-advantages"
    student = reference(dist, name)
    sample_std = ("std = rewards.std(axis=-1, keepdims=True)", "std = rewards.std(axis=-1, keepdims=True, ddof=1)")
    (answer,) = [cell for cell in student.cells if sample_std[0] in cell.source]
    answer.source = answer.source.replace(*sample_std)
    end = next(i for i, cell in enumerate(student.cells) if cell.source == 'grader.check("q1")')
    student.cells = student.cells[: end + 1]
    nbformat.write(student, tmp_path / f"{name}.ipynb")
    NotebookClient(student, timeout=600, resources={"metadata": {"path": str(tmp_path)}}).execute()
    (output,) = student.cells[-1].outputs
    text, html = output["data"]["text/plain"], output["data"]["text/html"]
    lines, yours = text.splitlines(), f"yours {math.sqrt(3 / 4):.6f}"  # ddof=1 shrinks the std by sqrt((G-1)/G)
    assert len(lines) == 6 and lines[0] == "q1 results:" and "Traceback" not in text + html, text
    assert lines[-1].strip() == f"AssertionError: standardised: population std (np.std, ddof=0) 1, {yours}"
    assert yours in html and "Trying:" not in html
