"""The table "Where each equation shows" of book/equations.md stays true (issue 39).

Each row names an equation, the function of ``grpo_core`` that implements it, the lines of its module that show the
equation and the notebook that uses it with the section of its first call there. This test derives each of those
from the code and the notebooks' MyST sources: a renamed function, lines that moved or grew, or a first call that
moved to another section fails it, and the message gives the row as it now should read.
"""

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "book" / "equations.md"
SECTION = "## Where each equation shows"
# | eq. | {py:func}`~grpo_core.module.name` | `module.py`, lines a–b | [§N](../notebooks/NAME.md), “heading” |
ROW = re.compile(
    r"^\| (?P<equation>[^|]+?) \| \{py:func\}`~(?P<function>grpo_core[\w.]+)` \| `(?P<file>[\w/]+\.py)`, "
    r"lines? (?P<first>\d+)(?:–(?P<last>\d+))? \| \[§\d+\]\(\.\./notebooks/(?P<notebook>[\w-]+)\.md\), "
    r"“(?P<heading>[^”]+)” \|$"
)
#: What the table must cover: the chapter's numbered equations and the variants issue 39 names.
REQUIRED = {f"({k})" for k in range(1, 10)} | {"k1", "k2", "RLOO", "Dr. GRPO", "GSPO ratio", "token loss"}
VALIDATION_LINES = 6  # the equation starts within this many lines of the body's first line (after the docstring)


def table_rows() -> list[dict]:
    text = PAGE.read_text(encoding="utf-8")
    assert SECTION in text, f"{PAGE.name} has no section {SECTION!r}"
    lines = text.split(SECTION, 1)[1].split("\n## ", 1)[0].splitlines()
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| Equation")]
    matched = [ROW.match(line) for line in rows if not set(line) <= set("|- ")]
    assert all(matched), [line for line, match in zip(rows, matched, strict=False) if not match]
    return [match.groupdict() for match in matched]


ROWS = table_rows()


def function_of(dotted: str):
    module, name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def first_call(notebook: str, name: str) -> str | None:
    """The heading above the first code cell of ``notebooks/<notebook>.md`` that calls ``name(``, or None."""
    heading, in_code = None, False
    for line in (ROOT / "notebooks" / f"{notebook}.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```{code-cell}"):
            in_code = True
        elif in_code and line.startswith("```"):
            in_code = False
        elif not in_code and re.match(r"#{1,6} ", line):
            heading = line.lstrip("#").strip()
        elif in_code and re.search(rf"\b{re.escape(name)}\(", line):
            return heading
    return None


def test_the_table_covers_every_numbered_equation_and_variant():
    assert {row["equation"] for row in ROWS} >= REQUIRED


@pytest.mark.parametrize("row", ROWS, ids=[row["equation"] for row in ROWS])
def test_the_function_exists_and_the_lines_follow_its_validation(row):
    function = function_of(row["function"])
    source, start = inspect.getsourcelines(function)
    path = Path(inspect.getsourcefile(function)).relative_to(ROOT / "src" / "grpo_core")
    assert str(path) == row["file"], f"{row['function']} is defined in {path}"
    body = ast.parse(inspect.getsource(function)).body[0].body
    has_docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    body_start = start + body[1 if has_docstring else 0].lineno - 1
    first, last = int(row["first"]), int(row["last"] or row["first"])
    end = start + len(source) - 1
    assert body_start <= first <= last <= end, (
        f"lines {first}–{last} lie outside {row['function']} ({body_start}–{end})"
    )
    assert first - body_start <= VALIDATION_LINES, f"the equation starts {first - body_start} lines into the body"


@pytest.mark.parametrize("row", ROWS, ids=[row["equation"] for row in ROWS])
def test_the_notebook_calls_it_first_in_the_named_section(row):
    name = row["function"].rsplit(".", 1)[1]
    heading = first_call(row["notebook"], name)
    assert heading is not None, f"notebooks/{row['notebook']}.md never calls {name}"
    assert heading == row["heading"], f"the first call of {name} in {row['notebook']} now sits under “{heading}”"
