"""What a student sees when a public check fails: the assertion, its message and their own values, in six lines.

Each variant of every assignment's master (the reference, the blank notebook, and each plausible near-miss of
tests/fixtures/homework/mistakes.toml) runs its code cells in this process; then
every question is checked as the student's notebook checks it: otter's ``Notebook.check`` on the public test
files the student notebook writes (``build.public_test_files``) and the variant's namespace. A question whose
public tests the grader's checker fails must print at most six lines, end with the failing assertion's message
as the checker computed it, show a value the student's code produced, and hold no traceback, doctest trace or
hidden-test line; every other question prints one line: all passed. About 30 CPU-s in all (importing otter, 5).
"""

from __future__ import annotations

import ast
import re

import pytest
from homework_support import MISTAKES, InProcess, build, checker, leaks, patched

MAX_LINES = 6
STUB = re.compile(r"returned None: finish the function|is still \.\.\.: replace it with your answer")
TRACE = re.compile(r"Traceback|File \"|Trying:|Expecting|\*{10}|Failed example")


def variants() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """``(id, assignment, [(old, new), ...])``: every master as given and with each plausible mistake."""
    found = [(f"{name}-reference", name, []) for name in build.assignment_names()]
    found += [(f"{name}-blank", name, None) for name in build.assignment_names()]
    found += [(f"{m['assignment']}-{m['mistake']}", m["assignment"], m["patch"]) for m in MISTAKES]
    return found


def public_failures(key: dict, cells: list[str]) -> tuple[dict[str, str], dict]:
    """``({question: message}, namespace)``: the message of the first public case that the grader's checker fails,
    per question, and the namespace the cells left (the jail's part is played in this process)."""
    jail = InProcess()
    _scores, feedback, error = checker.grade(key, list(enumerate(cells, 1)), jail)
    assert error == ""
    failures: dict[str, str] = {}
    for entry in feedback:
        if not entry["hidden"] and not entry["passed"]:
            failures.setdefault(entry["question"], entry["message"])
    return failures, jail.namespace


def shows_a_value(source_line: str, message: str) -> bool:
    """The assertion on ``source_line`` has an f-string message, and ``message`` is it with something filled in."""
    statement = ast.parse(source_line.strip()).body[0]
    assert isinstance(statement, ast.Assert) and isinstance(statement.msg, ast.JoinedStr), source_line
    parts = statement.msg.values
    pattern = "".join(re.escape(part.value) if isinstance(part, ast.Constant) else "(.+)" for part in parts)
    filled = re.fullmatch(pattern, message, re.DOTALL)
    return bool(filled) and bool(filled.groups()) and all(group.strip() for group in filled.groups())


@pytest.fixture(scope="module")
def otter():
    import otter

    return otter


@pytest.mark.parametrize(("variant", "name", "patches"), variants(), ids=[v[0] for v in variants()])
def test_a_failing_public_check_prints_its_message_and_the_students_value(
    otter, variant, name, patches, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # otter writes its .OTTER_LOG into the working folder
    master = build.master_notebook(name)
    key = checker.make_key(master)
    for file, text in build.public_test_files(key).items():
        (tmp_path / file).write_text(text)
    cells = patched(name, patches)
    failures, env = public_failures(key, cells)
    _solutions, hidden = leaks.master_secrets(master)
    for question in [q["name"] for q in key["questions"]]:
        shown = repr(otter.Notebook(tests_dir=str(tmp_path)).check(question, env))
        lines = shown.strip().splitlines()
        if question not in failures:
            assert lines == [f"{question} results: All test cases passed!"], shown
            continue
        assert len(lines) <= MAX_LINES and not TRACE.search(shown), shown
        assert not [line for line in lines if " ".join(line.split()) in hidden], shown
        error, message = lines[-1].strip().split(": ", 1)
        expected = " ".join(re.sub(r" \(your values: .*\)$", "", failures[question], flags=re.DOTALL).split())
        if error == "AssertionError" and patches is not None:  # blank: the checker cannot read `...`, otter can
            assert message == expected, (message, failures[question])
        if patches is None:  # the blank notebook: the check names the stub, not what a stub did to a test
            assert STUB.search(message), shown
        elif error == "AssertionError" and lines[-2].strip().startswith("assert "):
            assert shows_a_value(lines[-2], message), shown


@pytest.mark.parametrize("raised", [None, ZeroDivisionError("division by zero")], ids=["none-raised", "one-raised"])
def test_a_name_not_yet_defined_says_whether_a_cell_above_raised(raised, monkeypatch):
    """A public check of a name that is not defined says to run the cells above; if a cell raised (IPython keeps the
    last error in ``sys.last_value``), it says so first: running the cells again would not define it."""
    key = checker.make_key(build.master_notebook("hw1-advantages"))
    namespace: dict = {}
    exec(build.public_test_files(key)["q1.py"], namespace)
    monkeypatch.delattr("sys.last_value", raising=False)
    if raised is not None:
        monkeypatch.setattr("sys.last_value", raised, raising=False)
    with pytest.raises(NameError) as error:
        namespace["notebook_values"]({}, "group_advantages")
    hint = "a cell above raised ZeroDivisionError: fix it, then " if raised else ""
    assert str(error.value) == f"group_advantages not defined: {hint}run the cells above this check first"
