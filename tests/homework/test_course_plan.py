"""The course plan: every section graded, each assignment after its prerequisites, keys computed (issues #29, #38).

The homework tests parametrized over every assignment build each master with ``otter assign``,
check its student version for leaks and grade the reference solutions (full marks) and the
untouched student notebook (0) with the grader, as a course would. Here, cheaply (no otter, no kernel: importing
otter alone costs 8 CPU-s), each master's reference cells run in this process and every test case is
scored by the grader's own checker (``homework/checker.py``, the jail's part played in this process), one
point each (the reference, the blank notebook and the plausible mistakes of every assignment:
tests/homework/test_homework_mistakes.py). The hidden tests use only
what a student's notebook can hand back as data (numbers, arrays, strings, dicts) and calls of the
student's functions on inputs the test chooses (what the jailed grader of issue #24 needs), and every
number they compare with comes from ``grpo_core``, never typed. book/course-map.md must list every
assignment and cover every section from §2 to §12.
"""

from __future__ import annotations

import ast
import re

import nbformat
import pytest
from homework_support import ROOT, build, checker

NEW = [name for name in build.assignment_names() if int(re.match(r"hw(\d+)-", name)[1]) >= 5]
SECTIONS = {f"§{number}" for number in range(2, 13)}


def course_map() -> tuple[dict[str, dict], list[dict]]:
    """The two tables of book/course-map.md: ``{assignment: row}`` and the schedule's weeks, in order."""
    assignments, weeks = {}, []
    for line in (ROOT / "book" / "course-map.md").read_text(encoding="utf8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or not re.search(r"hw\d+-", line):
            continue
        if len(cells) == 5 and (name := re.fullmatch(r"`(hw\d+-[\w-]+)`", cells[0])):
            points, hours = re.fullmatch(r"(\d+) \(\d+\)", cells[2])[1], re.fullmatch(r"([\d.]+) h", cells[3])[1]
            assignments[name[1]] = {
                "sections": set(re.findall(r"§\d+", cells[1])),
                "points": int(points),
                "hours": float(hours),
                "after": re.findall(r"`(hw\d+-[\w-]+)`", cells[4]),
            }
        else:
            weeks.append({"hand in": re.findall(r"`(hw\d+-[\w-]+)`", cells[3]), "hours": float(cells[4].split()[0])})
    return assignments, weeks


def test_course_map_covers_every_section_with_the_points_the_tests_give():
    assignments, _ = course_map()
    assert sorted(assignments) == build.assignment_names(), "one row per assignment of homework/"
    covered = set().union(*(row["sections"] for row in assignments.values()))
    assert covered >= SECTIONS, f"no graded work for {sorted(SECTIONS - covered)}"
    for name, row in assignments.items():
        assert row["points"] == sum(possible(build.master_notebook(name)).values()), f"{name}: points"


def test_schedule_hands_in_each_assignment_once_after_its_prerequisites():
    assignments, weeks = course_map()
    order = [name for week in weeks for name in week["hand in"]]
    assert sorted(order) == sorted(assignments) and len(weeks) == 3
    for name in order:
        assert all(order.index(before) < order.index(name) for before in assignments[name]["after"]), name
    for week in weeks:
        assert week["hours"] == sum(assignments[name]["hours"] for name in week["hand in"])


# ---------------------------------------------------------------- the cases


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


def possible(master: nbformat.NotebookNode) -> dict[str, int]:
    total: dict[str, int] = {}
    for question, _, _ in cases(master):
        total[question] = total.get(question, 0) + 1
    return total


@pytest.mark.parametrize("name", NEW)
def test_keys_are_computed_never_typed(name):
    """A hidden test compares with grpo_core: no float literal with more than 3 significant digits in it."""
    for question, hidden, code in cases(build.master_notebook(name)):
        floats = [n.value for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Constant) and type(n.value) is float]
        typed = [value for value in floats if len(f"{abs(value):.15e}".split("e")[0].replace(".", "").rstrip("0")) > 3]
        assert not (hidden and typed), f"{name} {question}: typed values {typed} in a hidden test"


def test_hw10_accepts_every_share_rounded_either_way_and_nothing_further():
    """hw10 asks for shares rounded to 3 decimals. A share is k/S (zero-variance steps out of S <= 40 steps) or the
    mean of S clip fractions j/G (G <= 32): m/(G*S). At every such value the roundings are accepted (both at a tie:
    5/16 = 0.3125 as 0.312 or 0.313, whose float difference from 0.3125 is 5.0000000000000004e-4), and the next
    thousandth on either side is not."""
    rounds_to = checker.reference(checker.make_key(build.master_notebook("hw10-lab-experiment")))["rounds_to"]
    denominators = {steps * size for steps in range(1, 41) for size in (1, *range(2, 33))}
    refused, ties = [], 0
    for n in sorted(denominators):
        for m in range(n + 1):
            low, twice_rest = divmod(1000 * m, n)
            twice_rest *= 2
            right = [low, low + 1] if twice_rest == n else [low + (twice_rest > n)]
            ties += twice_rest == n
            wrong = [t for t in (right[0] - 1, right[-1] + 1) if 0 <= t <= 1000]
            if not all(rounds_to(t / 1000, m / n) for t in right) or any(rounds_to(t / 1000, m / n) for t in wrong):
                refused.append(f"{m}/{n}")
    assert ties > 0 and refused == [], f"{len(refused)} shares judged wrongly, the first {refused[:5]}"


@pytest.mark.parametrize("name", build.assignment_names())
def test_every_hidden_case_names_the_mistake_it_catches(name):
    """The class report counts mistakes by name: every hidden case of every assignment carries one in the key
    (``# mistake: NAME`` under ``# HIDDEN``), and no public case does (a student sees those)."""
    for question in checker.make_key(build.master_notebook(name))["questions"]:
        for number, case in enumerate(question["cases"], 1):
            where = f"{name} {question['name']} case {number}"
            if case["hidden"]:
                assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", case["mistake"] or ""), f"{where} names no mistake"
            else:
                assert "mistake" not in case and "# mistake:" not in case["code"], f"{where} is public"
