"""Grading in jails: the honest set scores exactly, and no hostile submission gains a point or touches anything.

One call of ``homework/grade.py`` grades a folder that mixes assignments: reference solutions (hw1's as a notebook
with a written answer, hw2's as the zip its export cell makes, hw1's under a kernel of another name), forty honest
hw1 submissions written as students write right answers (tests/honest_submissions.py), hw1's untouched student
notebook, the deliberately wrong submissions of ``tests/fixtures/homework/`` (each must lose
exactly the points listed there), malformed files, odd and colliding names, a symlink, and one hostile
submission per attack class of issue #24. Each hostile test says the score it must get; every one of them also
requires that nothing outside the grader's output folder changed (no marker file written anywhere, the
repository's ``git status`` as before, no process of a jail's user left). A later run (a late submission, an
endless loop under a short ``--timeout``) must keep every row of the first.

Each property is graded once: every assignment's reference solutions earn full marks with the zip's own grader
(tests/homework/test_grading_clean.py: the same key, checker and jail) and every untouched student notebook scores zero
(tests/homework/test_homework.py, its cells run by the grader's runner in the test process); here only the rows
that test what ``grade.py`` adds (sheets, roster, feedback, written answers, names, limits) get a jail.

Bombs are graded by ``grade.py`` in a process held by a safety cap above the jail's own limits (16 GiB of address
space, 15 minutes): a fork bomb, a memory bomb across processes, one in a single process, a disk bomb, a process
that tries to outlive its jail, an answer too large to send, a zip bomb. Each gets its row, and afterwards no
marker exists, the homework folder is as it was and no process of a jail's user is left.
"""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import honest_submissions
import nbformat
import pytest
from homework_support import (
    HOMEWORK,
    MARKERS,
    WRONG,
    InProcess,
    build,
    checker,
    full_marks,
    grade,
    jail,
    machine_memory,
    notebook,
    outside_state,
    points_of,
    questions,
    reference,
    scores,
    shared_dist,
    sheets,
    with_cell,
    write,
    wrong_submission,
)
from sheets import cell_text

pytestmark = pytest.mark.timeout(1800)
WRITTEN_ANSWER = "Every advantage shrinks by sqrt((G - 1) / G), whatever the rewards."
DDOF1 = next(fixture for fixture in WRONG if fixture["file"] == "hw1-ddof1.ipynb")
# Each marker tried on its own: the first one's PermissionError must not spare the others.
WRITE_MARKERS = "\n".join(
    f"try:\n    open({str(path)!r}, 'w').write('pwned')\nexcept OSError:\n    pass" for path in MARKERS
)
# Issue #24: otter's log server unpickled what reached it. Here: every listening socket of the machine, TCP or
# Unix, gets a pickle that would write the markers as whoever unpickles it.
SOCKETS = f"""\
import glob, os, pickle, socket

class Payload:
    def __reduce__(self):
        return (exec, ({WRITE_MARKERS!r},))

data = pickle.dumps(Payload())
reached = []
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    for line in open(table).read().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        if state == "0A":
            port = int(local.split(":")[1], 16)
            for host in ("127.0.0.1", "::1"):
                try:
                    with socket.create_connection((host, port), timeout=0.2) as connection:
                        connection.sendall(data)
                        reached.append(port)
                except OSError:
                    pass
unix = [line.split()[-1] for line in open("/proc/net/unix").read().splitlines()[1:]]
for path in unix + glob.glob("/run/**", recursive=True):
    try:
        with socket.socket(socket.AF_UNIX) as connection:
            connection.settimeout(0.2)
            connection.connect(path)
            connection.sendall(data)
            reached.append(path)
    except (OSError, ValueError):
        pass
{WRITE_MARKERS}
"""
# The six classes of issue #24 that raised a score with an empty `suspicious` column, each on an untouched
# notebook (so any point is a point gained), and a fake answer key on a wrong one.
ALIAS = "import otter\n_grader_alias = otter.Notebook\n_grader_alias.check = lambda *args, **kwargs: True"
RUN_CELL = 'get_ipython().run_cell("import numpy as np\\nnp.allclose = lambda *args, **kwargs: True")'
PRE_RUN_HOOK = """\
import numpy as np

def _again(*args):
    np.allclose = np.array_equal = lambda *a, **k: True

get_ipython().events.register("pre_run_cell", _again)
_again()
"""
PATCH_NUMPY = "np.allclose = lambda *args, **kwargs: True\nnp.array_equal = lambda *args, **kwargs: True"
FOOLING = """\
import numpy as np

class Everything(np.ndarray):
    def __eq__(self, other): return np.ones(np.shape(other), bool)
    def __array_function__(self, func, types, args, kwargs): return True

class Close(float):
    def __sub__(self, other): return Close(0.0)
    def __abs__(self): return 0.0
    def __lt__(self, other): return True

def group_advantages(rewards, eps=1e-8):
    return np.asarray(rewards, float).view(Everything)

zero_std_mask = safe_group_advantages = group_advantages
mean_R = std_R = Close(0.6)
A_hat = A_hat_sample_std = np.zeros(4).view(Everything)
"""
FAKE_KEY = """\
import os, sys
os.makedirs("grpo_core", exist_ok=True)
open("grpo_core/__init__.py", "w").write("")
open("grpo_core/advantages.py", "w").write(
    "import numpy as np\\n"
    "def group_advantages(rewards, eps=1e-8):\\n"
    "    rewards = np.asarray(rewards, dtype=float)\\n"
    "    centered = rewards - rewards.mean(axis=-1, keepdims=True)\\n"
    "    return centered / (rewards.std(axis=-1, keepdims=True, ddof=1) + eps)\\n"
)
sys.path.insert(0, os.getcwd())
import grpo_core.advantages
"""
# Exfiltration: a visible test's feedback carries the message of what the student's code raised; here, every
# file the jail can read that might hold a test or the key.
EXFILTRATE = """\
import os

def _everything():
    found = []
    for top in (os.getcwd(), "/proc/1", "/"):
        for folder, _, files in os.walk(top):
            if folder.startswith(("/proc", "/sys", "/usr/lib", "/dev")) and top != "/proc/1":
                continue
            for name in files:
                try:
                    text = open(os.path.join(folder, name), errors="replace").read(2000)
                    found.append(folder + "/" + name + ": " + text)
                    if len(found) == 500:
                        return " | ".join(found)
                except OSError:
                    pass
    return " | ".join(found)

def group_advantages(rewards, eps=1e-8):
    raise RuntimeError(_everything())

mean_R = _everything()
"""
# A student who answers with the companion's own function (installed where they work, not where grading runs).
IMPORTS_GRPO_CORE = "from grpo_core.advantages import group_advantages"
KEY_TEXT = ("0.973329", "_t_ref", "HIDDEN", "0.308221")  # in hw1's hidden tests and the key only
FORMULA_NAME = "=HYPERLINK(1)+2.ipynb"
LONG_NAME = "a" * 240 + ".ipynb"


def _submission_folder(dist: Path, folder: Path) -> None:
    """References, an untouched and the wrong submissions, strays, malformed, odd names and hostile files."""
    solved = reference(dist, "hw1-advantages")
    (answer,) = [c for c in solved.cells if "manual-answer" in c.metadata.get("tags", [])]
    answer.source = WRITTEN_ANSWER
    write(solved, folder / "solutions" / "hw1-advantages.ipynb")
    with zipfile.ZipFile(folder / "solutions" / "hw2-clip-kl.zip", "w") as archive:  # as the export cell makes it
        archive.writestr("hw2-clip-kl.ipynb", nbformat.writes(reference(dist, "hw2-clip-kl")))
    write(notebook(dist, "hw1-advantages", "student"), folder / "untouched" / "hw1-advantages" / "any-name.ipynb")
    for fixture in WRONG:
        write(wrong_submission(dist, fixture), folder / fixture["file"])
    write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import grpo_core")]), folder / "stray.ipynb")
    malformed = folder / "malformed"
    malformed.mkdir()
    for file, text in {
        "object.ipynb": "{}",
        "list.ipynb": "[]",
        "null.ipynb": "null",
        "text.ipynb": "not json",
    }.items():
        (malformed / file).write_text(text)
    (malformed / "notes.txt").write_text("not a submission")
    untouched = notebook(dist, "hw1-advantages", "student")
    untouched.metadata.otter = "hw1-advantages"
    write(untouched, malformed / "otter-not-a-dict.ipynb")
    untouched = notebook(dist, "hw1-advantages", "student")
    solved = reference(dist, "hw1-advantages")
    hostile = folder / "hostile"
    (numpy_cell,) = [i for i, cell in enumerate(untouched.cells) if cell.source.startswith("import numpy as np")]
    attacks = {"sockets": SOCKETS, "alias": ALIAS, "run-cell": RUN_CELL, "pre-run-hook": PRE_RUN_HOOK}
    attacks |= {"patches-numpy": PATCH_NUMPY, "fooling-objects": FOOLING, "exfiltrates": EXFILTRATE}
    for attack, source in attacks.items():
        write(with_cell(untouched, source), hostile / f"{attack}.ipynb")  # last: after the answer cells
    write(with_cell(untouched, IMPORTS_GRPO_CORE), folder / "imports-grpo-core.ipynb")
    write(with_cell(wrong_submission(dist, DDOF1), FAKE_KEY, at=numpy_cell + 1), hostile / "fake-key.ipynb")
    write(with_cell(solved, "import os, signal\nos.kill(os.getppid(), 9)\nos.kill(-1, 9)"), hostile / "kills.ipynb")
    with zipfile.ZipFile(hostile / "shadows-grpo-core.zip", "w") as archive:
        archive.writestr("hw1-ddof1.ipynb", nbformat.writes(wrong_submission(dist, DDOF1)))
        archive.writestr("grpo_core/__init__.py", "")
    for name, honest in honest_submissions.submissions(reference(dist, "hw1-advantages")):
        write(honest, folder / "honest" / name)
    write(solved, folder / "renamed" / "hw1-advantages (1).ipynb")
    custom_kernel = reference(dist, "hw1-advantages")  # grade.py reads no kernelspec (a torch jail: 2.4 CPU-s more)
    custom_kernel.metadata.kernelspec = {"name": "my-course-env", "display_name": "Course env", "language": "python"}
    write(custom_kernel, folder / "custom-kernel.ipynb")
    write(reference(dist, "hw2-clip-kl"), folder / FORMULA_NAME)
    write(solved, folder / "names" / LONG_NAME)
    write(solved, folder / "names" / "x" / "y.ipynb")
    write(solved, folder / "names" / os.fsdecode(b"caf\xe9 latin-1.ipynb"))
    write(wrong_submission(dist, DDOF1), folder / "names" / "x__y.ipynb")
    (folder / "names" / "link.ipynb").symlink_to(folder / "solutions" / "hw1-advantages.ipynb")
    (folder / "names" / "linked-folder").symlink_to(folder / "solutions")


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    return shared_dist(tmp_path_factory)


@pytest.fixture(scope="module")
def graded(dist, tmp_path_factory) -> tuple[Path, tuple, tuple]:
    """One run of the grading script over a folder that mixes every assignment and every hostile file."""
    folder = tmp_path_factory.mktemp("submissions")
    _submission_folder(dist, folder)
    roster = tmp_path_factory.mktemp("roster") / "roster.csv"
    roster.write_text("student_id,file\nS-001,solutions/hw1-advantages.ipynb\nS-002,untouched\n")
    out = tmp_path_factory.mktemp("grades") / "out"
    arguments = [str(folder), "--dist", str(dist), "--out", str(out), "--jobs", "2", "--roster", str(roster)]
    before = outside_state()
    assert grade.main([*arguments, "--timeout", "300"]) == 0
    return out, before, outside_state()


@pytest.fixture(scope="module")
def grades(graded) -> dict[str, dict[str, str]]:
    return sheets(graded[0])


def test_nothing_outside_the_output_folder_changed(graded):
    _, before, after = graded
    assert before == after == ([False] * len(MARKERS), before[1], [])


@pytest.mark.parametrize("file", ["solutions/hw1-advantages.ipynb", "solutions/hw2-clip-kl.zip"])
def test_reference_solutions_score_full_marks(grades, file):
    full_marks(grades[file], Path(file).stem)


def test_forty_honest_submissions_score_full_marks(dist, grades):
    """Forty right answers written as students write them (tests/honest_submissions.py: other NumPy calls, the
    formula spelt out, loops, lists and floats for arrays), each shown right by the oracle there, on inputs of its
    own: each earns full marks, no row an error."""
    assert honest_submissions.disagreements(reference(dist, "hw1-advantages")) == [], "a rewrite is not right"
    honest = {file: row for file, row in grades.items() if file.startswith("honest/")}
    assert len(honest) == honest_submissions.FORTY
    wrong = {
        file: (row["total"], row["error"])
        for file, row in honest.items()
        if row["error"] or float(row["total"]) != sum(questions("hw1-advantages").values())
    }
    assert wrong == {}, "honest submissions that did not earn full marks: (total, error)"


def test_untouched_student_notebook_scores_zero(grades):
    name = "hw1-advantages"
    row = grades[f"untouched/{name}/any-name.ipynb"]
    assert row["sheet"] == name and row["error"] == ""
    assert scores(row, name) == dict.fromkeys(questions(name), 0.0)
    assert float(row["total"]) == 0.0 and float(row["possible"]) == sum(questions(name).values())


@pytest.mark.parametrize("fixture", WRONG, ids=[fixture["file"] for fixture in WRONG])
def test_wrong_submission_loses_exactly_its_points(grades, fixture):
    row = grades[fixture["file"]]
    name = fixture["assignment"]
    assert row["sheet"] == name and row["error"] == ""
    assert scores(row, name) == {question: float(points) for question, points in points_of(fixture).items()}
    assert sum(points_of(fixture).values()) < sum(questions(name).values()), "the mistake must cost points"


@pytest.mark.parametrize(
    "attack", ["sockets", "alias", "run-cell", "pre-run-hook", "patches-numpy", "fooling-objects", "exfiltrates"]
)
def test_an_attack_on_an_untouched_notebook_scores_zero(grades, attack):
    row = grades[f"hostile/{attack}.ipynb"]
    assert row["sheet"] == "hw1-advantages" and row["error"] == ""
    assert scores(row, "hw1-advantages") == dict.fromkeys(questions("hw1-advantages"), 0.0)


@pytest.mark.parametrize("file", ["hostile/fake-key.ipynb", "hostile/shadows-grpo-core.zip"])
def test_a_fake_answer_key_changes_nothing(grades, file):
    """The wrong (ddof=1) answers with a grpo_core of the same mistake: the score of the wrong answers, 8 of 13."""
    assert scores(grades[file], "hw1-advantages") == {q: float(points) for q, points in points_of(DDOF1).items()}


def test_a_cell_that_kills_its_parent_kills_nothing(grades):
    """The reference solutions, then kill(getppid()) and kill(-1): full marks, and every other row is there."""
    full_marks(grades["hostile/kills.ipynb"], "hw1-advantages")


def test_feedback_shows_messages_and_own_values_and_leaks_nothing(graded, grades):
    out = graded[0]
    texts = {path.name: path.read_text() for path in (out / "feedback" / "hw1-advantages").iterdir()}
    assert not [(name, secret) for name, text in texts.items() for secret in KEY_TEXT if secret in text]
    records = [json.loads(text) for text in texts.values()]
    (exfiltrated,) = [record for record in records if record["file"] == "hostile/exfiltrates.ipynb"]
    public = [entry for entry in exfiltrated["tests"] if not entry["hidden"]]
    assert exfiltrated["error"] == "" and public
    assert all("your code raised RuntimeError" in entry["message"] for entry in public if entry["question"] == "q1")
    assert all("message" not in entry for entry in exfiltrated["tests"] if entry["hidden"])
    (wrong,) = [record for record in records if record["file"] == "hw1-ddof1.ipynb"]
    # the sample std fails a public check that teaches (unit population std): its message and the student's own
    # values are shown; the hidden tests it fails say only that they failed
    failed = [entry for entry in wrong["tests"] if not entry["passed"]]
    assert [entry for entry in failed if not entry["hidden"] and "(your values: " in entry["message"]]
    assert all("message" not in entry for entry in failed if entry["hidden"])
    (untouched,) = [record for record in records if record["file"] == "untouched/hw1-advantages/any-name.ipynb"]
    assert untouched["tests"][0]["message"] == (
        "one group of 4 rewards must give 4 advantages, yours has shape () (your values: group_advantages(...) = None; "
        "group_advantages(...) = None) [when the grader ran your notebook: cell 16 (`mean_R = ... …`): TypeError: "
        "unsupported format string passed to ellipsis.__format__]"
    )


def test_feedback_says_what_the_notebooks_cells_raised(graded, grades):
    """A cell that raised while the grader ran the notebook is named in the feedback of every failing case, with
    its error; an import of grpo_core gets the reason it fails (a check alone would say only that q1's function
    returned None)."""
    texts = [path.read_text() for path in (graded[0] / "feedback" / "hw1-advantages").iterdir()]
    (record,) = [json.loads(text) for text in texts if '"imports-grpo-core.ipynb"' in text]
    failed = [entry.get("message", entry.get("reason")) for entry in record["tests"] if not entry["passed"]]
    note = f" (`{IMPORTS_GRPO_CORE}`): ModuleNotFoundError: No module named 'grpo_core'"
    assert failed and all(note in text for text in failed)
    assert all(text.endswith(f"{checker.WITHOUT_GRPO_CORE}]") for text in failed)
    assert float(grades["imports-grpo-core.ipynb"]["total"]) == 0.0
    (untouched,) = [json.loads(text) for text in texts if '"untouched/hw1-advantages/any-name.ipynb"' in text]
    messages = [entry.get("message", entry.get("reason", "")) for entry in untouched["tests"]]
    assert not [text for text in messages if checker.WITHOUT_GRPO_CORE in text]


@pytest.mark.parametrize(
    ("file", "reason"),
    [
        ("malformed/object.ipynb", "without a cell list"),
        ("malformed/list.ipynb", "JSON list"),
        ("malformed/null.ipynb", "JSON NoneType"),
        ("malformed/text.ipynb", "not JSON"),
        ("malformed/notes.txt", "not a notebook (.ipynb) or exported zip"),
        ("malformed/otter-not-a-dict.ipynb", "metadata.otter is str"),
        ("stray.ipynb", "metadata.otter is NoneType"),
        ("names/link.ipynb", "a symlink or special file, refused"),
        ("names/linked-folder", "a symlink or special file, refused"),
    ],
)
def test_unreadable_files_are_reported_in_their_own_row(grades, file, reason):
    row = grades[file]
    assert row["sheet"] == "unmatched" and reason in row["error"]


@pytest.mark.parametrize(
    ("file", "name"),
    [
        ("renamed/hw1-advantages (1).ipynb", "hw1-advantages"),
        ("custom-kernel.ipynb", "hw1-advantages"),
        ("'" + FORMULA_NAME, "hw2-clip-kl"),
        (f"names/{LONG_NAME}", "hw1-advantages"),
        ("names/x/y.ipynb", "hw1-advantages"),
        ("names/caf\\xe9 latin-1.ipynb", "hw1-advantages"),
    ],
)
def test_odd_names_are_graded_normally(grades, file, name):
    full_marks(grades[file], name)


def test_colliding_names_get_rows_and_feedback_of_their_own(graded, grades):
    assert scores(grades["names/x__y.ipynb"], "hw1-advantages") == {q: float(p) for q, p in points_of(DDOF1).items()}
    files = [json.loads(path.read_text())["file"] for path in (graded[0] / "feedback" / "hw1-advantages").iterdir()]
    assert sorted(files) == sorted(set(files)) and {"names/x/y.ipynb", "names/x__y.ipynb"} <= set(files)


def test_outputs_are_private_to_the_grader(graded):
    out = graded[0]
    modes = {path: stat.S_IMODE(path.stat().st_mode) for path in [out, *out.rglob("*")]}
    assert {mode for path, mode in modes.items() if path.is_dir()} == {0o700}
    assert {mode for path, mode in modes.items() if path.is_file()} == {0o600}


def test_roster_feedback_and_written_answers(graded, grades):
    out = graded[0]
    assert grades["solutions/hw1-advantages.ipynb"]["student_id"] == "S-001"
    assert grades["untouched/hw1-advantages/any-name.ipynb"]["student_id"] == "S-002"
    assert grades["custom-kernel.ipynb"]["student_id"] == ""
    records = [json.loads(path.read_text()) for path in (out / "feedback" / "hw1-advantages").iterdir()]
    (feedback,) = [record for record in records if record["file"] == "solutions/hw1-advantages.ipynb"]
    assert feedback["student_id"] == "S-001" and feedback["written_answers"] == [WRITTEN_ANSWER]
    assert len(feedback["tests"]) == sum(questions("hw1-advantages").values())
    assert all(entry["passed"] for entry in feedback["tests"])
    manual = (out / "manual-hw1-advantages.md").read_text()
    assert f"### solutions\\/hw1\\-advantages\\.ipynb \\(S\\-001\\)\n\n```text\n{WRITTEN_ANSWER}\n```" in manual


def test_every_file_has_exactly_one_row(graded, grades):
    folder = next(Path(graded[0]).parent.parent.glob("submissions*"))
    files = [cell_text(grade.file_name(path, folder)) for path in grade.submissions(folder)]
    assert sorted(files) == sorted(file for file in grades if not file.startswith(grade.POINTS_ROW))


def test_later_runs_keep_the_earlier_ones_and_time_out_an_endless_loop(dist, graded, tmp_path):
    """A late file, then an endless loop under a short --timeout, into the same sheets: nothing is lost."""
    out = graded[0]
    before = sheets(out)
    arguments = ["--dist", str(dist), "--out", str(out), "--jobs", "2"]
    write(wrong_submission(dist, DDOF1), tmp_path / "late" / "late.ipynb")
    assert grade.main([str(tmp_path / "late"), *arguments]) == 0
    endless = with_cell(reference(dist, "hw1-advantages"), "while True:\n    pass", at=3)
    write(endless, tmp_path / "endless" / "endless.ipynb")
    assert grade.main([str(tmp_path / "endless"), *arguments, "--timeout", "2"]) == 0  # it spins until then
    after = sheets(out)
    assert {file: after[file] for file in before} == before
    assert set(after) - set(before) == {"endless.ipynb", "late.ipynb"}
    assert (
        after["endless.ipynb"]["error"] == "ran longer than its time limit" and after["endless.ipynb"]["total"] == "0"
    )
    assert scores(after["late.ipynb"], "hw1-advantages") == {q: float(p) for q, p in points_of(DDOF1).items()}


# ---------------------------------------------------------------- a slow machine

OLD_POLICY = next(fixture for fixture in WRONG if fixture["file"] == "hw3-old-policy-not-frozen.ipynb")
# Two submissions checked at once by grade.py's threads, in a fresh process that has not imported grpo_core, on a
# machine where importing grpo_core.bandit.grpo takes a second (a loaded machine, stretched): the students' cells
# run by the grader's runner in that process (InProcess), the hidden tests import grpo_core in both threads.
SLOW_IMPORTS = """\
import importlib.abc, importlib.util, json, sys, threading, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import nbformat
from homework_support import InProcess, WRONG, checker, grade, reference, wrong_submission

class SlowImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "grpo_core.advantages":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        sys.meta_path.insert(0, self)
        run = spec.loader.exec_module
        spec.loader.exec_module = lambda module: (time.sleep(2.0), run(module))
        return spec

sys.meta_path.insert(0, SlowImport())
dist = Path(sys.argv[1])
keys = grade.load_keys(dist)
fixture = next(fixture for fixture in WRONG if fixture["file"] == "hw3-old-policy-not-frozen.ipynb")
notebooks = {"hw1-advantages": reference(dist, "hw1-advantages"), "hw3-bandit-step": wrong_submission(dist, fixture)}
start, results = threading.Barrier(len(notebooks)), {}

def check(name):
    cells = grade.code_sources(grade.parse_notebook(nbformat.writes(notebooks[name]).encode()))
    start.wait()
    time.sleep(0.5 if name == "hw3-bandit-step" else 0.0)  # hw3 a moment later: hw1 imports grpo_core first
    scores, feedback, error = checker.grade(keys[name], cells, InProcess())
    results[name] = {"scores": scores, "error": error, "failed": [e for e in feedback if not e["passed"]]}

threads = [threading.Thread(target=check, args=(name,)) for name in notebooks]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(results))
"""


def test_the_trusted_process_parses_in_one_thread_at_a_time(monkeypatch):
    """CPython 3.11's ``ast.parse`` is not safe in threads (gh-106905): two grading threads parsing the key's cases
    at once (``--jobs 2``) once raised ``SystemError: AST constructor recursion depth mismatch`` out of
    ``checker.grade`` (seen in bench/bench_grading.py). With ``ast.parse`` slowed so that two calls would overlap,
    two threads reading what a key's cases use never parse at once, and each case is parsed once."""
    import ast
    import threading
    import time

    key = checker.make_key(build.master_notebook("hw1-advantages"))
    real, inside, overlaps, calls = ast.parse, [0], [], []

    def slow_parse(source, *args, **kwargs):
        inside[0] += 1
        overlaps.append(inside[0] > 1)
        calls.append(source)
        time.sleep(0.002)
        try:
            return real(source, *args, **kwargs)
        finally:
            inside[0] -= 1

    monkeypatch.setattr(ast, "parse", slow_parse)
    monkeypatch.setattr(checker, "_parsed", {}, raising=False)
    readers = [threading.Thread(target=f, args=(key,)) for f in (checker.used_names, checker.imported_modules)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    cases = {case["code"] for question in key["questions"] for case in question["cases"]}
    assert len(calls) == len(cases) > 10 and not any(overlaps), (len(calls), len(cases), sum(overlaps))


def test_a_slow_import_in_two_grading_threads_costs_no_point(dist):
    """The row seen once under load: hw3-old-policy-not-frozen scored 9 of 10, a hidden q2 case failing with no
    error in its row. Each thread's first hidden test imported grpo_core at once with the other's: one got an
    ImportError (or a half-initialised module) and lost the case silently. Now the checker imports every module
    the tests need before any case runs, under its lock: each row is exact, and a failed case says why."""
    command = [sys.executable, "-c", SLOW_IMPORTS, str(dist), str(HOMEWORK.parent / "tests")]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    results = json.loads(done.stdout.splitlines()[-1])  # the last line: the notebooks print above it
    hw1, hw3 = results["hw1-advantages"], results["hw3-bandit-step"]
    assert hw1 == {"scores": {q: float(p) for q, p in questions("hw1-advantages").items()}, "error": "", "failed": []}
    assert hw3["error"] == "" and hw3["scores"] == {q: float(p) for q, p in points_of(OLD_POLICY).items()}
    assert hw3["failed"] and all(entry["reason"] == "a check failed" for entry in hw3["failed"])


@pytest.mark.parametrize(
    "test", ["import grpo_core.no_such_module\nassert x == 1", "__import__('grpo_core.no_such_module')\nassert x == 1"]
)
def test_a_test_the_grader_cannot_import_is_a_row_error_not_a_lost_point(test):
    """Imported before the cases run (``import``) or by a case itself (``__import__``): no score, and the reason."""
    key = {"setup": [], "student_names": ["x"], "questions": [{"name": "q1", "points": 1, "cases": []}]}
    key["questions"][0]["cases"] = [{"code": "assert x == 1", "hidden": False}, {"code": test, "hidden": True}]
    scores, feedback, error = checker.grade(key, [(1, "x = 1")], InProcess())
    assert (scores, feedback) == ({}, [])
    missing = "ModuleNotFoundError: No module named 'grpo_core.no_such_module'"
    assert error == f"the grader could not import what a test needs ({missing})"


def test_the_warm_up_imports_a_module_only_while_its_bytecode_is_not_current(tmp_path):
    """grade.py's warm-up, run by the jails' Python before grading, compiles what the jails import (numpy, torch);
    once their bytecode is there and newer than the source it only checks (0.03 CPU-s, not 2.4). A package that
    logs its imports: imported the first time, not the second, and again once its source is newer."""
    package, log = tmp_path / "warmed", tmp_path / "imports.log"
    package.mkdir()
    (package / "__init__.py").write_text(f"open({str(log)!r}, 'a').write('imported\\n')\n")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    warm_up = [sys.executable, "-c", grade.WARM_UP, "warmed", "not_a_module_anywhere"]
    counts = []
    for newer_source in (False, False, True):
        if newer_source:
            later = (package / "__pycache__").stat().st_mtime + 60
            os.utime(package / "__init__.py", (later, later))
        subprocess.run(warm_up, env=env | {"PYTHONPATH": str(tmp_path)}, check=True)
        counts.append(log.read_text().count("imported"))
    assert counts == [1, 1, 2]


def test_a_jail_that_died_before_reading_a_request_closes_quietly():
    """The request stays in the pipe's buffer: closing the jail flushed it and raised BrokenPipeError, which
    grade.py turned into the row's 'grader error' instead of the jail's own reason."""
    dead = jail.Jail(sys.executable, jail.python_paths(sys.executable), 60)
    dead.kill("killed by the test")
    dead.process.wait()
    with pytest.raises(jail.JailError, match="killed by the test"):
        dead.ask({"names": []})
    dead.close()


def test_what_a_killed_jail_says_while_it_dies_does_not_count():
    """``--die-with-parent``: once bwrap is killed, the kernel ends the runner a moment later, and in that moment it
    can still read a request and answer it (a fresh-clone run: the test above got an answer after ``kill`` and
    ``wait``). A jail a limit killed must not have its answers counted, so once it is killed (:attr:`Jail.broken`
    set, as ``kill`` sets it first) every reply raises its reason. Here the kill is recorded and not yet done: the
    runner is alive and answers."""
    alive = jail.Jail(sys.executable, jail.python_paths(sys.executable), 60)
    try:
        assert alive.ask({"names": []}) == {"values": {}}
        alive.broken = "it held over the 2 GiB limit in processes and files"
        with pytest.raises(jail.JailError, match="over the 2 GiB limit"):
            alive.ask({"names": []})
    finally:
        alive.close()


# ---------------------------------------------------------------- bombs

FORK_BOMB = "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.05)"
MEMORY_ACROSS_PROCESSES = """\
import os, time
for _ in range(4):
    if os.fork() == 0:
        block = bytearray(2**30)
        for start in range(0, len(block), 4096):
            block[start] = 1
        time.sleep(600)
time.sleep(600)
"""
MEMORY_ONE_PROCESS = "try:\n    hog = bytearray(3 * 2**30)\nexcept MemoryError:\n    hog = None"
DISK = """\
import os
for folder in ("/tmp", "/dev/shm", os.getcwd(), os.path.expanduser("~")):
    for number in range(64):
        try:
            with open(os.path.join(folder, f"fill-{number}"), "wb") as out:
                out.write(b"x" * 2**26)
        except OSError:
            break
"""
SURVIVOR = """\
import os, time
if os.fork() == 0:  # a new session running sleep (fork and exec: the jail has no pipes for subprocess)
    os.setsid()
    os.execv("/usr/bin/sleep", ["sleep", "600"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
"""
HUGE_ANSWER = 'mean_R = "x" * (64 * 2**20)'


def _write_zip_bomb(path: Path, name: str, mebibytes: int) -> None:
    """A zip whose one file, ``name``, inflates to ``mebibytes`` MiB of spaces (1.5 GB: 1.5 MB compressed), its
    headers saying so. Its deflate stream is one MiB of spaces compressed once and repeated: flushed with
    ``Z_FULL_FLUSH``, a piece ends on a byte and refers to nothing before it. ``zipfile`` deflating the 1.5 GB took
    7.6 CPU-s; this takes 0.7 (the CRC of the 1.5 GB)."""
    block, crc = b" " * 2**20, 0
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate, as a zip holds it
    data = (compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)) * mebibytes + compressor.flush()
    for _ in range(mebibytes):
        crc = zlib.crc32(block, crc)
    sizes, file = (crc, len(data), mebibytes * 2**20), name.encode()
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, *sizes, len(file), 0) + file
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, *sizes, len(file), 0, 0, 0, 0, 0, 0)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central) + len(file), len(local) + len(data), 0)
    path.write_bytes(local + data + central + file + end)
    with zipfile.ZipFile(path) as archive:
        (member,) = archive.infolist()
        assert (member.filename, member.file_size, member.CRC) == (name, sizes[2], crc) and len(data) < 2 * 2**20


@pytest.fixture(scope="module")
def bombed(dist, tmp_path_factory) -> tuple[dict, tuple, tuple]:
    """The bombs graded two at a time, as ``make grade --jobs 2`` would: those a limit must stop under a short
    ``--timeout`` (20 s: the fork bomb may run out its time), those that must keep full marks under a long one (120 s:
    beside a bomb on the other slot, on a loaded machine, their honest cells must not run out of time)."""
    solved = reference(dist, "hw1-advantages")
    stopped, kept = tmp_path_factory.mktemp("bombs-stopped"), tmp_path_factory.mktemp("bombs-kept")
    for name, source in {"fork": FORK_BOMB, "memory-across-processes": MEMORY_ACROSS_PROCESSES}.items():
        write(with_cell(solved, source), stopped / f"{name}.ipynb")
    write(with_cell(solved, HUGE_ANSWER), stopped / "huge-answer.ipynb")
    _write_zip_bomb(stopped / "zip-bomb.zip", "bomb.ipynb", 1500)
    for name, source in {"memory-one-process": MEMORY_ONE_PROCESS, "disk": DISK, "survivor": SURVIVOR}.items():
        write(with_cell(solved, source), kept / f"{name}.ipynb")
    rows = {}
    with machine_memory(tmp_path_factory):
        before = outside_state()
        for folder, seconds in ((stopped, 20), (kept, 120)):
            out = tmp_path_factory.mktemp(f"{folder.name}-grades") / "out"
            command = ["prlimit", f"--as={16 * 2**30}", "--", "timeout", "900", sys.executable]
            command += [str(HOMEWORK / "grade.py"), str(folder), "--dist", str(dist), "--out", str(out)]
            subprocess.run([*command, "--timeout", str(seconds), "--jobs", "2"], check=True, capture_output=True)
            rows |= sheets(out)
        return rows, before, outside_state()


def test_bombs_leave_nothing_behind(bombed):
    _, before, after = bombed
    assert before == after and after[2] == [] and not any(after[0])


@pytest.mark.parametrize(
    ("file", "error"),
    [
        ("fork.ipynb", "limit"),  # its time, or the memory of 256 processes: whichever comes first
        ("memory-across-processes.ipynb", "over the 2 GiB limit"),
        ("huge-answer.ipynb", "an answer was longer than 16 MiB"),
    ],
)
def test_a_bomb_scores_zero_with_the_reason(bombed, file, error):
    row = bombed[0][file]
    assert row["sheet"] == "hw1-advantages" and error in row["error"] and row["total"] == "0"


@pytest.mark.parametrize("file", ["memory-one-process.ipynb", "disk.ipynb", "survivor.ipynb"])
def test_a_bomb_held_by_its_limits_keeps_full_marks(bombed, file):
    full_marks(bombed[0][file], "hw1-advantages")


def test_a_zip_bomb_is_refused_before_it_is_read(bombed):
    row = bombed[0]["zip-bomb.zip"]
    assert row["sheet"] == "unmatched" and "the notebook in the zip is larger than 16 MiB" in row["error"]
