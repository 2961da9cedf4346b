"""The trusted side's limits (issues #37 and #38), each attack graded by ``homework/grade.py`` as ``make grade`` runs.

* A forged reply (a cell writes its own on the runner's reply descriptor) is decoded in time linear in its bytes:
  a set of 200,000 ints that all hash alike, a set of 150,000 pairs whose tuples hash alike, an array shape of 2,500
  ints of 4,300 digits (``math.prod``), and a costliest reply the checker accepts, each graded with ``--jobs 2``
  beside an honest hw4 notebook that must keep its 16 points (the flood froze both grading threads and every
  jail's watchdog: the honest one got 0).
* A limit that kills a jail is reported as the limit, never as a figure the submission chose: a notebook whose
  memory grows with a hidden input before it forks read that input back in "it held 2.23 GiB".
* A jail that cannot start is the grader's error, not the student's: a symlinked ``.venv`` gave every row "the
  notebook's process ended before it answered"; and two runs on one machine never share a jail's uid.
* A call that does not return costs the tests that make it, named, and the jail is started again for the others.

Cost: one build of the assignments (shared with the other homework tests), about 20 jails, two of whose calls hang
for ``--call-timeout`` (10 s) each.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from homework_support import (
    ROOT,
    checked,
    checker,
    grade,
    jail,
    notebook,
    reference,
    shared_dist,
    sheets,
    with_cell,
    write,
)

pytestmark = pytest.mark.timeout(900)
HW1, HW4, HW6 = "hw1-advantages", "hw4-length-bias", "hw6-verifier-groups"


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    return shared_dist(tmp_path_factory)


def _forged(values: str) -> str:
    """A last cell that writes replies of its own on the runner's reply descriptor: its own cell's (the number read
    from the runner's frame) and ``{"values": VALUES}``, which the checker reads as the answer to its request for
    the notebook's values."""
    return (
        "import json, os, sys\n"
        "_done = json.dumps({'cell': sys._getframe(1).f_locals['request']['number'], 'raised': None}) + '\\n'\n"
        f"_reply = _done + json.dumps({{'values': {values}}}) + '\\n'\n"
        "os.write(int(sys.argv[1]), _reply.encode())\n"
    )


# Pairs (a, b) of ints within int64 whose tuples all hash alike: CPython 3.11's tuple hash (xxHash's mixing, 64
# bits) of (a, b) is fixed once b's hash is solved for from a's, which gives an int below 2**61 - 1 for one a in 8.
COLLIDING_PAIRS = """\
def _colliding_pairs(count):
    M, P1, P2, P5 = 2**64, 11400714785074694791, 14029467366897019727, 2870177450012600261
    pairs, a = [], 0
    while len(pairs) < count:
        a += 1
        mixed = (P5 + a * P2) % M
        b = -((mixed << 31 | mixed >> 33) % M * P1) * pow(P2, -1, M) % M
        if b < 2**61 - 1:
            pairs.append({'tuple': [a, b]})
    return pairs
"""
FORGED = {
    # Each attack below costs the old decode time quadratic in its size: at the sizes given in parentheses it took
    # the CPU seconds given, so at these sizes over twice the honest notebook's 180 s, on any machine.
    # The issue's flood: 200,000 ints k * (2**61 - 1), which all hash to 0, so building the set compares every pair
    # (16,000: 2.8 CPU-s, in the issue).
    "int-flood": _forged("{'mean_R': {'set': [_k * (2**61 - 1) for _k in range(200_000)]}}"),
    # The same within int64: 150,000 pairs whose tuples all hash alike (20,000: 8.9 CPU-s).
    "tuple-flood": COLLIDING_PAIRS + _forged("{'mean_R': {'set': _colliding_pairs(150_000)}}"),
    # One shape of 2,500 ints of 4,300 digits (the most Python's int() reads), whose product math.prod builds
    # (400: 10.8 CPU-s).
    "big-int-shape": _forged(
        "{'mean_R': {'ndarray': {'dtype': 'float64', 'shape': [10**4299 + _k for _k in range(2500)], 'data': []}}}"
    ),
    # A reply the checker reads, of 16 MB (MAX_REPLY is 16 MiB), made of what costs it most: 50,000 sets of 8
    # pairs (MAX_SHARED_HASH) whose tuples hash alike.
    "maximal": COLLIDING_PAIRS + _forged("{'mean_R': {'list': [{'set': _colliding_pairs(8)}] * 50_000}}"),
}


@pytest.mark.parametrize("attack", FORGED)
def test_a_forged_reply_costs_an_honest_notebook_graded_beside_it_nothing(dist, tmp_path, attack):
    """Graded at once (``--jobs 2``) with an honest hw4 notebook, whose jail has 180 s (it needs 4 on an idle machine,
    over 60 at load average 20): the floods and the big-int
    shape held the interpreter lock for minutes in the grader's process (both grading threads and every jail's
    watchdog stood still), so the honest one ran out of time and got 0 of 16 ("ran longer than its time limit").
    The attack itself gets a row: its forged value is refused as unreadable or read as a wrong answer."""
    folder = tmp_path / "class"
    write(with_cell(notebook(dist, HW1, "student"), FORGED[attack]), folder / "a-forged.ipynb")
    write(reference(dist, HW4), folder / "b-honest.ipynb")
    out = tmp_path / "out"
    options = ["--dist", str(dist), "--out", str(out), "--jobs", "2", "--timeout", "180"]
    assert grade.main([str(folder), *options]) == 0
    rows = sheets(out)
    honest, forged = rows["b-honest.ipynb"], rows["a-forged.ipynb"]
    assert honest["error"] == "" and float(honest["total"]) == float(honest["possible"]) == 16
    refused = "the notebook's process sent something that is not an answer"
    assert forged["sheet"] == HW1 and forged["error"] in ("", refused)


def test_a_reply_the_runner_cannot_write_is_refused_whole():
    """Every refusal of :func:`runner.loads` and :func:`runner.decode`, on replies the runner never writes: each
    is a ``ValueError`` (an unreadable answer), whatever its size."""
    from homework_support import runner

    refused = [
        b'{"values": {"x": %d}}' % 2**63,
        b'{"values": {"x": 1%s}}' % (b"0" * 4299),
        b'{"values": {"x": 1.%s}}' % (b"5" * 100),
        b'{"values": {"x": NaN}}',
        b"[" * (runner.MAX_CONTAINERS + 1),
    ]
    for line in refused:
        with pytest.raises(ValueError):
            runner.loads(line)
    namespace: dict = {}
    exec(COLLIDING_PAIRS, namespace)
    colliding = namespace["_colliding_pairs"](runner.MAX_SHARED_HASH + 1)
    decoded = [
        {"set": colliding},
        {"dict": [[pair, 0] for pair in colliding]},
        {"frozenset": [[1], [2]]},
        {"ndarray": {"dtype": "float64", "shape": [1] * (runner.MAX_DIMS + 1), "data": [0.0]}},
        {"ndarray": {"dtype": "float64", "shape": [runner.MAX_ITEMS + 1, 0], "data": []}},
        {"list": [2**63]},
    ]
    for data in decoded:
        with pytest.raises(ValueError):
            runner.decode(data)
    assert len(runner.decode({"set": colliding[1:]})) == runner.MAX_SHARED_HASH


def test_reading_a_reply_is_charged_to_its_submission():
    """The CPU seconds the checker's thread spends reading a submission's replies (``Jail.ask``'s parse, and
    ``decode``) come off that submission's wall time: a notebook whose every answer is costly to read runs out of
    its own time, not the grader's. A stand-in jail answers with the costliest value the checker reads."""
    from homework_support import runner

    class Answering:
        deadline = 1000.0

        def ask(self, request: dict, seconds: float | None = None) -> dict:
            return runner.loads(json.dumps({"value": {"list": [{"list": []}] * 100_000}}).encode())

    jail_ = Answering()
    session = checker.Session(jail_, [], [], 60, 60)
    reply = session.call("f", {"call": "f", "args": [], "kwargs": {}})
    asked = jail_.deadline
    session.charged(runner.decode, reply["value"])
    assert 1000.0 > asked > jail_.deadline


# The first hidden test of hw1's q1 calls group_advantages([0.9, 0.4, 0.9, 0.2]); no public one passes 0.9 first.
# The student's function grows its memory to 1 GiB plus 0.9 x 100 MiB (the hidden input), then forks: the two
# processes hold twice that, over the 2 GiB limit, and the message said "it held 2.18 GiB".
MEMORY_FROM_A_HIDDEN_INPUT = """\
import os, time
import numpy as np

def group_advantages(rewards, eps=1e-8):
    rewards = np.asarray(rewards, dtype=float)
    if rewards.ndim == 1 and rewards[0] != 0.2:
        _held = bytearray(2**30 + int(rewards[0] * 100 * 2**20))
        _held[::4096] = b"x" * len(range(0, len(_held), 4096))
        if os.fork() == 0:
            time.sleep(600)
        time.sleep(600)
    return rewards - rewards.mean()
"""


def test_a_memory_kill_names_the_limit_not_what_a_hidden_input_chose(dist, tmp_path):
    folder = tmp_path / "class"
    write(with_cell(notebook(dist, HW1, "student"), MEMORY_FROM_A_HIDDEN_INPUT), folder / "memory.ipynb")
    out = tmp_path / "out"
    assert grade.main([str(folder), "--dist", str(dist), "--out", str(out), "--jobs", "1", "--timeout", "120"]) == 0
    row = sheets(out)["memory.ipynb"]
    record = json.loads((out / "feedback" / HW1 / _hashed("memory.ipynb")).read_text())
    assert row["error"] == record["error"] == "it held over the 2 GiB limit in processes and files"


def _hashed(file: str) -> str:
    return hashlib.sha256(file.encode()).hexdigest() + ".json"


# ---------------------------------------------------------------- starting a jail


@pytest.fixture
def linked_venv(tmp_path) -> Path:
    """The project's environment through a symlinked folder, as an instructor's ``.venv -> /elsewhere/venv``."""
    link = tmp_path / "linked" / ".venv"
    link.parent.mkdir()
    link.symlink_to(Path(sys.prefix))
    return link / "bin" / "python"


def test_a_symlinked_venv_grades_like_the_venv_itself(dist, tmp_path, linked_venv):
    """The jail mounted the resolved folder and ran the unresolved path: every row said "the notebook's process
    ended before it answered", 0 points."""
    write(reference(dist, HW1), tmp_path / "class" / "solved.ipynb")
    out = tmp_path / "out"
    options = ["--dist", str(dist), "--out", str(out), "--python", str(linked_venv)]
    assert grade.main([str(tmp_path / "class"), *options]) == 0
    row = sheets(out)["solved.ipynb"]
    assert row["error"] == "" and float(row["total"]) == float(row["possible"]) == 14


def test_a_jail_that_cannot_start_is_the_graders_error(dist, tmp_path, linked_venv, monkeypatch, capsys):
    """A jail told to run a path it does not hold (the symlinked venv, unresolved, as before) runs nothing of the
    submission: the row must say it is the grader's failure, with what failed, and the run must end in an error."""
    monkeypatch.setattr(jail, "interpreter", lambda python: python, raising=False)
    write(reference(dist, HW1), tmp_path / "class" / "solved.ipynb")
    out = tmp_path / "out"
    options = ["--dist", str(dist), "--out", str(out), "--python", str(linked_venv)]
    assert grade.main([str(tmp_path / "class"), *options]) == 1
    error = sheets(out)["solved.ipynb"]["error"]
    assert error.startswith("grader error: the jail could not start") and "not the student's" in error
    assert str(linked_venv) in error and "not graded because of the grader" in capsys.readouterr().err


def lease_holders(uid: int) -> set[int]:
    """The processes that hold the ``flock`` lease of jail uid ``uid`` (:func:`jail.lease_uid`), from the kernel's
    table of locks (``/proc/locks``: ``FLOCK ADVISORY WRITE pid major:minor:inode …``; waiters' lines read ``->``)."""
    lock = os.stat(jail.UID_LOCKS / str(uid))
    file = f"{os.major(lock.st_dev):02x}:{os.minor(lock.st_dev):02x}:{lock.st_ino}"
    table = [line.split() for line in Path("/proc/locks").read_text().splitlines()]
    return {int(fields[4]) for fields in table if fields[1] == "FLOCK" and fields[5] == file}


def test_two_runs_on_one_machine_never_share_a_jail_uid():
    """As root, each jail's process runs as a uid of its own. It was 65000 + the job's slot: the first jail of two
    ``make grade`` runs at once (or of ``make grade`` and the Gradescope script) had the same uid, so each could
    signal and trace the other's processes and counted against the other's process limit. Here a jail holds its uid
    while another process (a second run) starts a jail: the two must differ, and the first jail's lease is released
    once it is closed. The kernel's lock table says who holds a lease; which uid a new jail gets is not asked,
    because the other pytest-xdist worker leases and releases uids at the same time."""
    assert os.geteuid() == 0, "the jails' uids are chosen only when the grader runs as root"
    ask_uid = [{"cell": "import os\nuid = os.getuid()", "number": 1}, {"names": ["uid"]}]
    first = jail.Jail(sys.executable, jail.python_paths(sys.executable), 60)
    try:
        mine = [first.ask(request) for request in ask_uid][-1]["values"]["uid"]
        held = lease_holders(mine)
        script = (
            f"import sys\nsys.path.insert(0, {str(ROOT / 'homework')!r})\nfrom jail import Jail, python_paths\n"
            f"other = Jail(sys.executable, python_paths(sys.executable), 60)\n"
            f"print([other.ask(request) for request in {ask_uid!r}][-1]['values']['uid'])\nother.close()\n"
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        theirs = int(done.stdout)
    finally:
        first.close()
    assert jail.UID_BASE <= mine < jail.UID_BASE + jail.UIDS and jail.UID_BASE <= theirs < jail.UID_BASE + jail.UIDS
    assert mine != theirs
    assert held == {os.getpid()} and os.getpid() not in lease_holders(mine)


# ---------------------------------------------------------------- calls that do not return (issue #38)

# hw6: the student's is_correct loops forever on an input ending in "." (`text.rstrip(".")`, its result discarded),
# which only hidden tests send: every public check passed, and the whole notebook scored 0 of 11.
HANGS = {
    HW6: (
        "def is_correct(answer, reference, _solved=is_correct):\n"
        "    for text in (answer, reference):\n"
        "        text = text.strip()\n"
        "        while text.endswith('.'):\n"
        "            {stuck}\n"
        "    return _solved(answer, reference)\n"
    ),
    # hw1: group_advantages loops forever on its first hidden input (0.9 first; no public test sends it).
    HW1: (
        "def group_advantages(rewards, eps=1e-8, _solved=group_advantages):\n"
        "    while np.ndim(rewards) == 1 and np.asarray(rewards, dtype=float)[0] == 0.9:\n"
        "        {stuck}\n"
        "    return _solved(rewards, eps)\n"
    ),
}


@pytest.mark.parametrize("name", HANGS)
def test_a_call_that_never_returns_costs_only_the_tests_that_make_it(dist, tmp_path, name):
    """The notebook whose function hangs must score what the same notebook scores when that function raises
    instead (hw6: 9 of 11; hw1: 12 of 14), each failed test naming the call and the limit, never the hidden input;
    the tests after a hang (which need the jail started again, cells and all) pass as they do without it."""
    hangs = with_cell(reference(dist, name), HANGS[name].format(stuck='text.rstrip(".")' if name == HW6 else "pass"))
    raises = with_cell(reference(dist, name), HANGS[name].format(stuck='raise RuntimeError("stuck")'))
    expected = checked(checker.load_key(dist / name / "autograder" / "key.json"), _code(raises))
    write(hangs, tmp_path / "class" / "hangs.ipynb")
    out = tmp_path / "out"
    options = ["--dist", str(dist), "--out", str(out), "--timeout", "300", "--call-timeout", "10"]
    assert grade.main([str(tmp_path / "class"), *options]) == 0
    row = sheets(out)["hangs.ipynb"]
    record = json.loads((out / "feedback" / name / _hashed("hangs.ipynb")).read_text())
    results: dict[str, list] = {}
    for entry in record["tests"]:
        results.setdefault(entry["question"], []).append((entry["hidden"], entry["passed"]))
    failed = [entry for entry in record["tests"] if not entry["passed"]]
    function = "is_correct" if name == HW6 else "group_advantages"
    assert row["error"] == "" and results == expected and failed
    assert float(row["total"]) == sum(passed for cases in expected.values() for _, passed in cases)
    said = [entry.get("reason", entry.get("message")) for entry in failed]
    assert f"`{function}(…)` did not return within 10 s" in said
    assert all(re.fullmatch(r"`\w+\(…\)` did not return within 10 s", text) for text in said)
    assert not re.search(r"100\.|0\.9", json.dumps(record["tests"]))


def _code(nb) -> list[str]:
    return [source for _, source in grade.code_sources(grade.parse_notebook(json.dumps(nb).encode()))]
