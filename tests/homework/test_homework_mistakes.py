"""The plausible mistakes of all ten assignments, one fixture schema, scored here (issue #39).

``tests/fixtures/homework/mistakes.toml`` holds every mistake: its assignment, its ``patch`` to the master's reference
code cells, the ``scores`` of the questions it costs points in (every other question keeps full marks) and whether it
is ``subtle`` (every case it fails is hidden). Each is scored by the grader's own checker (``homework/checker.py``,
the jail's part played in this process; no otter, no kernel): it must earn exactly those points, fail at least one
hidden case, and fail a public one unless it is subtle. The reference code earns full marks and the master with its
solutions blanked as ``otter assign`` blanks them earns nothing, for every assignment. About 40 CPU-s in all
(hw3 trains its bandit a few times per mistake).
"""

from __future__ import annotations

import pytest
from homework_support import FIXTURES, MISTAKES, NAMES, build, checked, checker, patched, points_of, questions

FIELDS = {"assignment", "mistake", "patch", "scores", "subtle"}
OPTIONAL = {"file", "why"}


def _results(name: str, patch: list[list[str]] | None) -> dict[str, list[tuple[bool, bool]]]:
    """``{question: [(hidden, passed), ...]}`` of the master's code with ``patch`` (None: blanked)."""
    return checked(checker.make_key(build.master_notebook(name)), patched(name, patch))


def _points(results: dict[str, list[tuple[bool, bool]]]) -> dict[str, int]:
    return {question: sum(passed for _, passed in cases) for question, cases in results.items()}


def test_the_fixture_has_one_schema_and_mistakes_for_every_assignment():
    """Each entry has the same fields; ``scores`` lists only questions below full marks (so it means one thing: the
    questions the mistake costs points in); no two entries share a patch or a file name."""
    assert (FIXTURES / "mistakes.toml").is_file() and len(MISTAKES) >= len(NAMES)
    assert {mistake["assignment"] for mistake in MISTAKES} == set(NAMES)
    for mistake in MISTAKES:
        where = f"{mistake['assignment']}: {mistake['mistake']}"
        assert FIELDS <= set(mistake) <= FIELDS | OPTIONAL, where
        possible = questions(mistake["assignment"])
        assert mistake["scores"] and all(0 <= points < possible[q] for q, points in mistake["scores"].items()), where
    patches = [(mistake["assignment"], repr(mistake["patch"])) for mistake in MISTAKES]
    files = [mistake["file"] for mistake in MISTAKES if "file" in mistake]
    assert len(set(patches)) == len(patches) and len(set(files)) == len(files)


@pytest.mark.parametrize("name", NAMES)
def test_reference_earns_full_marks_and_the_blank_notebook_nothing(name):
    assert _points(_results(name, [])) == questions(name)
    assert _points(_results(name, None)) == dict.fromkeys(questions(name), 0)


@pytest.mark.parametrize("mistake", MISTAKES, ids=[f"{m['assignment']}-{m['mistake'][:60]}" for m in MISTAKES])
def test_a_mistake_loses_exactly_its_points(mistake):
    results = _results(mistake["assignment"], mistake["patch"])
    assert _points(results) == points_of(mistake)
    lost = [hidden for cases in results.values() for hidden, passed in cases if not passed]
    assert any(lost), "no hidden case catches this mistake"
    assert all(lost) == mistake["subtle"], "a subtle mistake fails hidden cases only, the others a public one too"
