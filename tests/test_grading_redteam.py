"""Red team on the jailed grader (issue #24): attacks the author's tests do not try, each asserting the secure outcome.

Every attack comes from a student's folder: a notebook built from the student version that ``make homework``
writes (or a file placed next to it), graded by ``homework/grade.py`` as ``make grade`` runs it.

* Plain data that fools the comparisons: an array with a leading dimension of length 0 broadcasts against any
  expected vector, so ``np.allclose`` (and ``torch.allclose``) says True without the answer.
* Memory the watchdog does not see: ``memfd_create`` files hold RAM outside RSS and outside ``RLIMIT_AS``.
* A channel from the hidden tests back to the student: the jail's exit status, chosen by the student's function
  while a hidden test calls it, is written into the row's error (the feedback a student receives).
* One submission breaks the outputs for everyone: a lone UTF-16 surrogate (legal in a JSON string) in a written
  answer stops ``manual-NAME.md`` for every later submission; in an assignment name it stops ``unmatched.csv``.
* Rows that are not one per file: ``'=x`` and ``=x`` share one sheet row; a written answer can forge another
  submission's heading in ``manual-NAME.md``.
* Run by an ordinary user, the jail's PID 1 (bwrap) carries the grader's environment, readable in /proc/1/environ.
* The zip's run script shows each question's whole score (hidden points included) at once on Gradescope.

Each test asserts the secure outcome, so it fails until the hole is fixed. Cost: one build of the assignments
(shared with the other homework tests), six hw1 jails (about 15 s under load), one zip run, two grader runs that
start no jail, one bare jail.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import nbformat
import numpy
import pytest
from homework_support import notebook, reference, shared_dist, sheets, with_cell, write

pytestmark = [pytest.mark.homework, pytest.mark.timeout(900)]
HW1 = "hw1-advantages"
# Answers that know nothing: every array has a leading axis of length 0, which broadcasts against anything.
EMPTY_ARRAYS = """\
import numpy as np

def group_advantages(rewards, eps=1e-8):
    return np.zeros((0, *np.shape(rewards)))

A_hat = A_hat_sample_std = np.zeros((0, 4))
"""
# Held RAM outside RSS: 40 memfd files of 64 MiB (the jail's file-size limit) = 2.5 GiB, over the 2 GiB limit.
MEMFD = """\
import os, time
_held = []
for _number in range(40):
    _fd = os.memfd_create(f"held-{_number}")
    os.write(_fd, b"x" * 2**26)
    _held.append(_fd)
time.sleep(1.5)
"""
# The first hidden test of q1 calls group_advantages([0.9, 0.4, 0.9, 0.2]); the public ones never pass 0.9 first.
EXIT_STATUS = """\
import os
import numpy as np

def group_advantages(rewards, eps=1e-8):
    rewards = np.asarray(rewards, dtype=float)
    if rewards.ndim == 1 and rewards[0] != 0.2:
        os._exit(int(round(rewards[0] * 100)))  # 90: the first hidden input, sent back as the exit status
    return rewards - rewards.mean()
"""
SURROGATE = "SURROGATE-PLACEHOLDER"
HONEST_ANSWER = "The factor is sqrt((G - 1) / G)."


def _with_answer(nb: nbformat.NotebookNode, text: str) -> nbformat.NotebookNode:
    (cell,) = [c for c in nb.cells if "manual-answer" in c.metadata.get("tags", [])]
    cell.source = text
    return nb


def _write_with_surrogate(nb: nbformat.NotebookNode, path: Path) -> None:
    """The notebook with a lone surrogate where SURROGATE stands: valid JSON (``\\ud800``), valid nbformat."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(nb).replace(SURROGATE, "\\ud800"), encoding="utf8")


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    return shared_dist(tmp_path_factory)


@pytest.fixture(scope="module")
def graded(dist, tmp_path_factory) -> tuple[dict, Path]:
    """One run (one job, 60 s per submission) over the jailed attacks, in this order."""
    from homework_support import grade

    folder = tmp_path_factory.mktemp("redteam")
    untouched = notebook(dist, HW1, "student")
    solved = reference(dist, HW1)
    write(with_cell(untouched, EMPTY_ARRAYS), folder / "empty-arrays.ipynb")
    write(with_cell(solved, MEMFD), folder / "memfd.ipynb")
    write(with_cell(untouched, EXIT_STATUS), folder / "exit-status.ipynb")
    # manual-NAME.md: a forged heading, a lone surrogate, then an honest answer that must be collected.
    forged = "I don't know.\n\n### manual/c-honest.ipynb\n\nI copied my answer from the internet."
    write(_with_answer(reference(dist, HW1), forged), folder / "manual" / "a-forges.ipynb")
    _write_with_surrogate(_with_answer(reference(dist, HW1), f"bad {SURROGATE}"), folder / "manual" / "b-lone.ipynb")
    write(_with_answer(reference(dist, HW1), HONEST_ANSWER), folder / "manual" / "c-honest.ipynb")
    out = tmp_path_factory.mktemp("redteam-grades") / "out"
    assert grade.main([str(folder), "--dist", str(dist), "--out", str(out), "--jobs", "1", "--timeout", "60"]) == 0
    return sheets(out), out


def test_empty_arrays_do_not_pass_the_comparisons(graded):
    """Deserved 0 of 13 (nothing computed); np.allclose broadcasts shape (0, 4) against (4,) and says True: 5."""
    row = graded[0]["empty-arrays.ipynb"]
    assert row["error"] == "" and float(row["total"]) == 0.0


def test_memory_held_in_memfd_files_counts_against_the_limit(graded):
    """2.5 GiB held in memfd files (not RSS, not address space): the jail must be stopped, not given 13 of 13."""
    row = graded[0]["memfd.ipynb"]
    assert "2 GiB limit" in row["error"] and float(row["total"]) == 0.0


def test_the_exit_status_carries_nothing_back_from_a_hidden_test(graded):
    """The function exits with 100 x the first hidden input (90); the row's error must not say 90."""
    row = graded[0]["exit-status.ipynb"]
    feedback = json.loads((graded[1] / "feedback" / HW1).joinpath(_hash("exit-status.ipynb")).read_text())
    assert row["error"] and "90" not in row["error"] and "90" not in feedback["error"]


def _hash(file: str) -> str:
    import hashlib

    return hashlib.sha256(file.encode()).hexdigest() + ".json"


def test_a_lone_surrogate_in_a_written_answer_loses_no_other_written_answer(graded):
    manual = (graded[1] / f"manual-{HW1}.md").read_text()
    assert f"### manual/c-honest.ipynb\n\n{HONEST_ANSWER}" in manual


def test_a_written_answer_cannot_forge_another_submissions_heading(graded):
    """Every heading of manual-NAME.md below a written answer's title is a submission, once each."""
    manual = (graded[1] / f"manual-{HW1}.md").read_text()
    headings = [line for line in manual.splitlines() if line.startswith("### ")]
    files = sorted(file for file in graded[0] if not file.startswith("("))
    assert headings == [f"### {file}" for file in files]


# ---------------------------------------------------------------- no jail: files that are not graded submissions


@pytest.fixture
def tiny_dist(tmp_path) -> Path:
    """A key with no question: enough for grade.py to run; these files never reach a jail."""
    key = tmp_path / "dist" / "hw0" / "autograder" / "key.json"
    key.parent.mkdir(parents=True)
    key.write_text(json.dumps({"setup": [], "student_names": [], "questions": []}))
    return key.parents[2]


def _unmatched_rows(out: Path) -> list[dict]:
    if not (out / "unmatched.csv").exists():
        return []
    with (out / "unmatched.csv").open(newline="", encoding="utf8") as handle:
        return list(csv.DictReader(handle))


def _grade_folder(folder: Path, dist: Path, out: Path) -> None:
    from homework_support import grade

    assert grade.main([str(folder), "--dist", str(dist), "--out", str(out), "--jobs", "1", "--timeout", "5"]) == 0


def test_a_lone_surrogate_in_an_assignment_name_loses_no_other_row(tiny_dist, tmp_path):
    """metadata.otter.assignment_name = "\\ud800": its row, and every later one of unmatched.csv, must be written."""
    folder = tmp_path / "submissions"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nb.metadata["otter"] = {"assignment_name": SURROGATE}
    _write_with_surrogate(nb, folder / "a-lone.ipynb")
    (folder / "b-notes.txt").write_text("not a submission")
    _grade_folder(folder, tiny_dist, tmp_path / "out")
    assert sorted(row["file"] for row in _unmatched_rows(tmp_path / "out")) == ["a-lone.ipynb", "b-notes.txt"]


def test_a_name_that_looks_like_an_escaped_formula_gets_its_own_row(tiny_dist, tmp_path):
    """``=x.txt`` is stored as ``'=x.txt``; a file really named ``'=x.txt`` must not replace that row."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name in ("=x.txt", "'=x.txt"):
        (folder / name).write_text("not a submission")
    _grade_folder(folder, tiny_dist, tmp_path / "out")
    assert len(_unmatched_rows(tmp_path / "out")) == 2


def test_the_zips_visible_entries_carry_no_hidden_points(dist, tmp_path):
    """On Gradescope only the ``after_published`` entries may tell how hidden tests went; the run script puts each
    question's whole score (hidden points included) in an entry visible at once. The reference solutions show q1
    5 of 5 where its public tests are worth 2."""
    import subprocess
    import sys
    import zipfile

    from homework_support import questions

    with zipfile.ZipFile(dist / HW1 / "autograder" / f"{HW1}-autograder.zip") as archive:
        archive.extractall(tmp_path / "source")
    write(reference(dist, HW1), tmp_path / "submission" / "any-name.ipynb")
    env = {"PATH": "/usr/bin:/bin", "AUTOGRADER": str(tmp_path)}
    subprocess.run([sys.executable, str(tmp_path / "source" / "run_otter.py")], env=env, check=True)
    result = json.loads((tmp_path / "results" / "results.json").read_text())
    key = json.loads((tmp_path / "source" / "key.json").read_text())
    public = {q["name"]: sum(not case["hidden"] for case in q["cases"]) for q in key["questions"]}
    visible = {t["name"]: t.get("score", 0) for t in result["tests"] if t.get("visibility") != "after_published"}
    assert set(public) == set(questions(HW1)) and all(visible.get(name, 0) <= public[name] for name in public)


def test_the_graders_environment_is_not_readable_in_an_unprivileged_jail(tmp_path):
    """Run by an ordinary user (what book/instructors.md recommends), the jail's PID 1 is bwrap itself, with the
    grader's whole environment (``--clearenv`` clears only the child's); the student reads /proc/1/environ and
    can return it as an answer, which a failed public test prints back. A marker variable stands for a secret."""
    import shutil
    import subprocess

    from homework_support import HOMEWORK

    probe = "import os\nfor pid in os.listdir('/proc'):\n    try: print(open(f'/proc/{pid}/environ').read())\n"
    probe += "    except (OSError, ValueError): pass"
    python = shutil.which("python3", path="/usr/bin")
    command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, str(HOMEWORK / "jail.py")]
    env = {"PATH": "/usr/bin:/bin", "GRADER_SECRET": "not-for-students-4711"}
    done = subprocess.run([*command, python, probe], capture_output=True, text=True, cwd="/", env=env, check=True)
    assert "HOME=/submission" in done.stdout and "not-for-students-4711" not in done.stdout


def test_parsing_a_submission_is_held_by_its_time_limit(tiny_dist, tmp_path):
    """A 10 MiB notebook of 100,000 empty cells was read and validated by nbformat in the grader's own process,
    before any limit applies: 108 s measured under heavy load for one file whose --timeout is 5 s, and a folder may
    hold many. The wall-time bound (30 s for a 5 s limit) leaves a loaded machine room; the bound on the grader's
    own CPU seconds (the jail's are other processes') is the one load cannot blur: 6.9 s measured for nbformat's
    parse (21 s of wall time, 2 cores shared with five other sessions), 2 s allowed, for one json.loads and a cap."""
    import time

    cell = {"cell_type": "code", "metadata": {}, "source": "", "outputs": [], "execution_count": None}
    cells = [cell | {"id": f"c{number}"} for number in range(100_000)]
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"otter": {"assignment_name": "hw0"}}, "cells": cells}
    (tmp_path / "submissions").mkdir()
    (tmp_path / "submissions" / "many-cells.ipynb").write_text(json.dumps(nb))  # nbformat.write would validate it
    start, cpu = time.monotonic(), time.process_time()
    _grade_folder(tmp_path / "submissions", tiny_dist, tmp_path / "out")
    assert time.monotonic() - start < 30 and time.process_time() - cpu < 2


def test_no_process_outlives_an_unprivileged_jail(tmp_path):
    """Holds today (kept: the author's survivor test runs as root only). As uid 65534, a cell starts a new-session
    child and a double-forked setsid grandchild, then the grader closes the jail: no process of that user is left."""
    import shutil
    import subprocess
    import time

    from homework_support import HOMEWORK

    cell = "import os, subprocess, time\nsubprocess.Popen(['sleep', '600'], start_new_session=True)\n"
    cell += "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(600)\n    os._exit(0)\n"
    python = shutil.which("python3", path="/usr/bin")
    script = f"import sys\nsys.path.insert(0, {str(HOMEWORK)!r})\nfrom jail import Jail, command, python_paths\n"
    script += f"jail = Jail(command({python!r}, python_paths({python!r}), 0, 30), 30)\n"
    script += f"print(jail.ask({{'cells': [{cell!r}], 'names': []}}))\njail.close()\n"
    user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    done = subprocess.run([*user, python, "-c", script], capture_output=True, text=True, cwd="/", check=True)
    for _ in range(50):  # the kernel tears the PID namespace down just after close() returns
        left = subprocess.run(["pgrep", "-u", "65534"], capture_output=True, text=True).stdout.split()
        if not left:
            break
        time.sleep(0.1)
    assert done.stdout.strip() == "{'values': {}}" and left == []


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"])
def test_a_number_out_of_its_dtypes_range_is_an_unreadable_answer(dtype):
    """An answer's array or scalar whose number its dtype cannot hold (int64 and 2**63, uint8 and -1) is a value the
    grader cannot read, as any other malformed answer: NumPy's OverflowError must not escape the checker (it
    did: a grader error for the row). Every numeric dtype the runner sends, both ends of its range."""
    from homework_support import checker, runner

    info = numpy.iinfo(dtype) if dtype[0] in "iu" else None
    numbers = [info.max + 1, info.min - 1] if info else [2**1100, -(2**1100)]  # an int no float can hold
    for number in numbers:
        for data in ({"scalar": [dtype, number]}, {"ndarray": {"dtype": dtype, "shape": [1], "data": [number]}}):
            with pytest.raises(ValueError, match="out of its dtype's range"):
                runner.decode(data)
            (value,) = checker.student_values({"x": data}, ["x"], jail=None, seen=[]).values()
            assert isinstance(value, checker.Unsupported)
