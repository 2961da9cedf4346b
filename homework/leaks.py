"""Does a student notebook give away a solution or a hidden test?

Otter Assign strips a solution only where two things agree: the code cell sits
between raw ``# BEGIN SOLUTION`` / ``# END SOLUTION`` cells, *and* its secret
lines are marked inline (``# BEGIN SOLUTION`` … ``# END SOLUTION`` comments, or a
line ending in ``# SOLUTION``). Drop a raw delimiter cell, or the inline
markers, and the solution ships to students without any error or warning.

So the secrets are read from the master independently of the raw cells:

* every line between inline solution markers, and every line ending in
  ``# SOLUTION`` / ``# SOLUTION NO PROMPT``, in *any* code cell;
* every line of a code cell inside a raw solution block that has no inline
  marker at all (otter would ship it verbatim);
* every line of a hidden test cell (first line ``# HIDDEN``).

Lines the master shows students anyway (prompt code, public tests, prose) and
lines too short to identify anything are not secrets. The student directory
written by ``otter assign`` must then contain none of the secret lines and none
of otter's markers, and no test it ships — in the notebook's metadata, in a test
file, or embedded in a cell as the student notebook carries its public tests; in
otter's doctest or exception-based format — may be a hidden one.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat

INLINE_BEGIN = re.compile(r"^\s*# BEGIN SOLUTION( NO PROMPT)?\s*$")
INLINE_END = re.compile(r"^\s*# END SOLUTION\s*$")
LINE_SOLUTION = re.compile(r"^(?P<code>.*?)\s*# SOLUTION( NO PROMPT)?\s*$")
RAW_BOUNDARY = re.compile(r"^\s*#\s*(BEGIN|END)\s+(QUESTION|SOLUTION|TESTS|PROMPT)\b", re.IGNORECASE)
HIDDEN_TEST = re.compile(r"^\s*#.*\bhidden\b", re.IGNORECASE)
# Otter's authoring markers: none of them may survive into a student notebook.
MARKERS = re.compile(
    r"# (BEGIN|END) SOLUTION|# SOLUTION\b|# (BEGIN|END) (QUESTION|TESTS|PROMPT)|# ASSIGNMENT CONFIG|^\s*# HIDDEN\b",
    re.MULTILINE,
)
DOCTEST_PROMPT = re.compile(r"^(>>>|\.\.\.) ?")
MIN_SECRET_CHARS = 8


def _lines(source: str) -> list[str]:
    return source.splitlines()


def _normal(line: str) -> str:
    return " ".join(line.split())


def _test_lines(source: str) -> list[str]:
    """A test cell's lines as written and as otter stores them (``ast.unparse``: ``1e-9`` → ``1e-09``)."""
    lines = _lines(source)
    try:
        return lines + _lines(ast.unparse(ast.parse(source)))
    except SyntaxError:
        return lines


def _identifying(line: str) -> bool:
    """Long enough, and more than brackets and punctuation, to identify code."""
    text = _normal(line)
    return len(text) >= MIN_SECRET_CHARS and not text.startswith("#") and bool(re.search(r"\w{2}", text))


def _raw_block(cell) -> tuple[str, str] | None:
    """``("BEGIN", "SOLUTION")`` etc. for otter's raw delimiter cells."""
    if cell.cell_type != "raw":
        return None
    first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
    match = RAW_BOUNDARY.match(first)
    return (match.group(1).upper(), match.group(2).upper()) if match else None


def _inline_secrets(source: str) -> tuple[list[str], list[str], bool]:
    """(secret lines, public lines, whether any inline marker was found) of one code cell."""
    secrets, public, inside, marked = [], [], False, False
    for line in _lines(source):
        if INLINE_BEGIN.match(line):
            inside = marked = True
        elif INLINE_END.match(line):
            inside = False
        elif inside:
            secrets.append(line)
        elif match := LINE_SOLUTION.match(line):
            marked = True
            secrets.append(match.group("code"))
        else:
            public.append(line)
    return secrets, public, marked


def master_secrets(master: nbformat.NotebookNode) -> tuple[set[str], set[str]]:
    """The solution lines and hidden-test lines of a master notebook (normalised)."""
    solutions, hidden, shown = set(), set(), set()
    blocks: list[str] = []
    for cell in master.cells:
        boundary = _raw_block(cell)
        if boundary is not None:
            kind, block = boundary
            if kind == "BEGIN":
                blocks.append(block)
            elif blocks:
                blocks.pop()
            continue
        if cell.cell_type == "raw":
            continue
        if cell.cell_type != "code":
            shown.update(_normal(line) for line in _lines(cell.source))
            continue
        lines = _lines(cell.source)
        if blocks and blocks[-1] == "TESTS":
            is_hidden = bool(lines) and HIDDEN_TEST.match(lines[0]) is not None
            (hidden if is_hidden else shown).update(_normal(line) for line in _test_lines(cell.source))
            continue
        secrets, public, marked = _inline_secrets(cell.source)
        in_solution = bool(blocks) and blocks[-1] == "SOLUTION"
        if in_solution and not marked:
            secrets, public = lines, []
        solutions.update(_normal(line) for line in secrets)
        shown.update(_normal(line) for line in public)

    def keep(lines: set[str]) -> set[str]:
        return {line for line in lines if _identifying(line) and line not in shown}

    return keep(solutions), keep(hidden)


def _test_cases(text: str) -> list[dict] | None:
    """The cases (``{"code", "hidden"}``) of an otter test file's source, or None if ``text`` is not one: a doctest
    file's ``test = {...}``, or an exception-based file's functions decorated with ``@test_case(...)``."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "test" for target in node.targets):
            try:
                test = ast.literal_eval(node.value)
            except ValueError:
                return None
            if isinstance(test, dict):
                return [case for suite in test.get("suites", []) for case in suite.get("cases", [])]
    cases = [
        {"code": ast.unparse(node), "hidden": _hidden_keyword(decorator)}
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        for decorator in node.decorator_list
        if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "test_case"
    ]
    return cases or None


def _hidden_keyword(decorator: ast.Call) -> bool:
    """``hidden=`` of a ``@test_case(...)`` decorator: False if absent (otter's default) or the constant False,
    True for anything else (an expression is taken to be hidden)."""
    hidden = [keyword.value for keyword in decorator.keywords if keyword.arg == "hidden"]
    return bool(hidden) and not (isinstance(hidden[0], ast.Constant) and hidden[0].value is False)


def _without_magic(line: str) -> str:
    """An IPython magic or shell line as ``pass`` (same indentation), so the cell parses as Python."""
    stripped = line.lstrip()
    return line[: len(line) - len(stripped)] + "pass" if stripped.startswith(("%", "!")) else line


def _embedded_test_files(source: str) -> dict[str, list[dict]]:
    """Otter test files held as string constants in a code cell (the student notebook ships its public tests so)."""
    try:
        tree = ast.parse("\n".join(_without_magic(line) for line in _lines(source)))
    except SyntaxError:
        return {}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "test" in node.value:
            cases = _test_cases(node.value)
            if cases is not None:
                found[f"embedded test {len(found)}"] = cases
    return found


def _test_files(student_dir: Path) -> dict[str, list[dict]]:
    """Every otter test a student receives: metadata tests, test files, tests embedded in cells."""
    found: dict[str, list[dict]] = {}
    for path in sorted(p for p in student_dir.rglob("*") if p.is_file()):
        if path.suffix == ".py" and (cases := _test_cases(path.read_text(errors="replace"))) is not None:
            found[str(path.relative_to(student_dir))] = cases
        if path.suffix != ".ipynb":
            continue
        notebook = nbformat.read(path, as_version=4)
        for name, test in notebook.metadata.get("otter", {}).get("tests", {}).items():
            suites = test.get("suites", []) if isinstance(test, dict) else []
            found[f"{path.name} metadata test {name}"] = [case for suite in suites for case in suite.get("cases", [])]
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type == "code":
                for where, cases in _embedded_test_files(cell.source).items():
                    found[f"{path.name} cell {index} {where}"] = cases
    return found


def _student_texts(student_dir: Path) -> dict[str, list[str]]:
    """Every line a student receives, by where it appears (cell, test case, file)."""
    texts: dict[str, list[str]] = {}
    for path in sorted(p for p in student_dir.rglob("*") if p.is_file()):
        if path.suffix != ".ipynb":
            texts[str(path.relative_to(student_dir))] = path.read_text(errors="replace").splitlines()
            continue
        notebook = nbformat.read(path, as_version=4)
        for index, cell in enumerate(notebook.cells):
            texts[f"{path.name} cell {index}"] = _lines(cell.source)
        texts[f"{path.name} metadata"] = json.dumps(notebook.metadata, indent=1).splitlines()
    for where, cases in _test_files(student_dir).items():
        for number, case in enumerate(cases):
            texts[f"{where} case {number}"] = [DOCTEST_PROMPT.sub("", line) for line in _lines(case.get("code", ""))]
    return texts


def _hidden_cases(student_dir: Path) -> list[str]:
    return [
        f"{where}: holds a hidden test case"
        for where, cases in _test_files(student_dir).items()
        if any(case.get("hidden") for case in cases)
    ]


def find_leaks(master: nbformat.NotebookNode, student_dir: str | Path) -> list[str]:
    """Human-readable findings; an empty list means the student version is clean."""
    student_dir = Path(student_dir)
    if not any(student_dir.rglob("*.ipynb")):
        return [f"{student_dir}: no student notebook found"]
    solutions, hidden = master_secrets(master)
    findings = _hidden_cases(student_dir)
    for where, lines in _student_texts(student_dir).items():
        for number, line in enumerate(lines, start=1):
            text = _normal(line)
            if MARKERS.search(line):
                findings.append(f"{where}, line {number}: otter marker {text!r}")
            elif text in solutions:
                findings.append(f"{where}, line {number}: solution line {text!r}")
            elif text in hidden:
                findings.append(f"{where}, line {number}: hidden-test line {text!r}")
    return findings
