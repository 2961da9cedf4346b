"""A cell that never finishes costs the tests that need what it would have defined, not the submission (#38).

Each notebook's cells are sent to its jail one at a time, each with ``--cell-timeout`` seconds: a cell that does not
finish is stopped from outside (the jail is killed and started again, the cells before it run again), named in the
feedback by its number and first line, and left out; the later cells and the tests run. ``--timeout`` stays the
limit of the whole submission. Before, a ``while True:`` at top level ran the whole submission into ``--timeout``:
0 points ("ran longer than its time limit").

The hostile variants are cells that try to outlast the limit from inside: catching every interrupt and looping
again, ignoring or blocking every signal a runner could send itself, sleeping instead of spinning. Each must be
graded exactly as the same notebook without that cell, and a notebook made of hanging cells stays bounded by
``--timeout``.

Cost: one build of the assignments (shared), about 10 jails of hw6 (NumPy only), 8 of which wait out a 5 s cell limit.
"""

from __future__ import annotations

import copy
import csv
import hashlib
import json
import re
from pathlib import Path

import nbformat
import pytest
from homework_support import checked, checker, grade, jail_processes, reference, shared_dist, sheets, with_cell, write

pytestmark = pytest.mark.timeout(600)
HW6 = "hw6-verifier-groups"
STUCK_CELL = "def advantages_by_prompt("  # hw6's q2 answer: q1 and q3 do not need it
SECONDS = 5
# The cell's own code, then a loop at top level that tries not to be stopped.
HANGS = {
    "spins": "while True:\n    pass",
    "catches-every-interrupt": (
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    ),
    "ignores-and-blocks-signals": (
        "import signal, time\n"
        "for _s in signal.valid_signals():\n"
        "    try:\n        signal.signal(_s, signal.SIG_IGN)\n    except (OSError, ValueError):\n        pass\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())\n"
        "while True:\n    time.sleep(1)"
    ),
    "resets-its-handlers-and-sleeps": (
        "import signal, time\n"
        "def _again(*_args):\n    signal.signal(signal.SIGALRM, _again)\n    signal.signal(signal.SIGINT, _again)\n"
        "_again()\n"
        "while True:\n    try:\n        time.sleep(3600)\n    except BaseException:\n        _again()"
    ),
}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    return shared_dist(tmp_path_factory)


def _with_stuck_cell(notebook, tail: str):
    """``notebook`` with ``tail`` appended to the cell that defines ``advantages_by_prompt`` (after its def), and
    that cell's number in the notebook."""
    changed = copy.deepcopy(notebook)
    (number,) = [n for n, cell in enumerate(changed.cells, 1) if STUCK_CELL in cell.source]
    changed.cells[number - 1].source += "\n" + tail
    return changed, number


def _record(out: Path, file: str) -> dict:
    return json.loads((out / "feedback" / HW6 / (hashlib.sha256(file.encode()).hexdigest() + ".json")).read_text())


def _results(record: dict) -> dict[str, list[tuple[bool, bool]]]:
    results: dict[str, list[tuple[bool, bool]]] = {}
    for entry in record["tests"]:
        results.setdefault(entry["question"], []).append((entry["hidden"], entry["passed"]))
    return results


def test_a_cell_that_never_finishes_costs_only_the_tests_that_need_it(dist, tmp_path):
    """Every hostile variant is graded like the notebook without the stuck cell (its definitions undefined): q1 and
    q3 in full, q2's tests failed, each failed test naming the cell and the limit; the class report lists it."""
    solved = reference(dist, HW6)
    _blank, number = _with_stuck_cell(solved, "")
    blank = copy.deepcopy(solved)
    blank.cells[number - 1].source = ""
    key = checker.load_key(dist / HW6 / "autograder" / "key.json")
    sources = [source for _, source in grade.code_sources(grade.parse_notebook(json.dumps(blank).encode()))]
    expected = checked(key, sources)
    assert [question for question, cases in expected.items() if not all(passed for _, passed in cases)] == ["q2"]
    assert not any(passed for _, passed in expected["q2"])
    folder = tmp_path / "class"
    for name, tail in HANGS.items():
        write(_with_stuck_cell(solved, tail)[0], folder / f"{name}.ipynb")
    out = tmp_path / "out"
    options = ["--dist", str(dist), "--out", str(out), "--jobs", "2", "--timeout", "300"]
    assert grade.main([str(folder), *options, "--cell-timeout", str(SECONDS)]) == 0
    rows = sheets(out)
    said = f"cell {number} (`def advantages_by_prompt(prompt_ids, rewards, eps=1e-8): …`) did not finish within 5 s"
    for name in HANGS:
        row, record = rows[f"{name}.ipynb"], _record(out, f"{name}.ipynb")
        assert row["error"] == "" and _results(record) == expected, name
        assert float(row["total"]) == sum(passed for cases in expected.values() for _, passed in cases)
        failed = [entry.get("message", entry.get("reason")) for entry in record["tests"] if not entry["passed"]]
        assert failed and all(said in text for text in failed), (name, failed[:1])
    with (out / "reports" / f"{HW6}.csv").open(newline="") as handle:
        hangs = [row for row in csv.DictReader(handle) if row["section"] == "hang"]
    assert sorted(row["examples"] for row in hangs) == sorted(f"{name}.ipynb" for name in HANGS)
    assert {row["item"] for row in hangs} == {said}
    assert jail_processes() == []


def test_hanging_cells_stay_bounded_by_the_whole_submissions_limit(dist, tmp_path):
    """A notebook whose every cell hangs (each would take the cell limit, 40 cells) ends at ``--timeout``, with that
    limit as its error and no process left; a value whose reading never ends (a set of objects whose ``__repr__``
    loops: the runner sorts a set's items by it) ends at the cell limit, with its own error."""
    solved = reference(dist, HW6)
    every = copy.deepcopy(solved)
    for cell in every.cells:
        if cell.cell_type == "code":
            cell.source = HANGS["catches-every-interrupt"]
    every.cells += [nbformat.v4.new_code_cell(HANGS["catches-every-interrupt"]) for _ in range(40)]
    endless_repr = "class _Endless:\n    def __repr__(self):\n        while True:\n            pass\n"
    endless_repr += "zero_signal_prompts = {_Endless(), _Endless()}"
    folder = tmp_path / "class"
    write(every, folder / "every-cell-hangs.ipynb")
    write(with_cell(solved, endless_repr), folder / "unreadable-value.ipynb")
    out = tmp_path / "out"
    options = ["--dist", str(dist), "--out", str(out), "--jobs", "2", "--timeout", "30"]
    assert grade.main([str(folder), *options, "--cell-timeout", str(SECONDS)]) == 0
    rows = sheets(out)
    assert rows["every-cell-hangs.ipynb"]["error"] == "ran longer than its time limit"
    assert rows["unreadable-value.ipynb"]["error"] == "reading the notebook's values did not finish within 5 s"
    assert jail_processes() == []
    assert re.fullmatch(r"[0.]*", rows["every-cell-hangs.ipynb"]["total"])
