"""Red team on the jailed grader (issue #24): attacks the author's tests do not try, each asserting the secure outcome.

Every attack comes from a student's folder: a notebook built from the student version that ``make homework``
writes (or a file placed next to it), graded by ``homework/grade.py`` as ``make grade`` runs it.

* Plain data that fools the comparisons: an array with a leading dimension of length 0 broadcasts against any
  expected vector, so ``np.allclose`` (and ``torch.allclose``) says True without the answer.
* Memory the watchdog does not see: ``memfd_create`` files hold RAM outside RSS and outside ``RLIMIT_AS``; so do
  System V shared memory, message queues and semaphores, shared memory a child holds untouched, and the jail's
  file systems; run by an ordinary user, bwrap's own ``/`` and ``/dev`` were file systems the user could fill.
* A channel from the hidden tests back to the student: the jail's exit status, chosen by the student's function
  while a hidden test calls it, is written into the row's error (the feedback a student receives).
* One submission breaks the outputs for everyone: a lone UTF-16 surrogate (legal in a JSON string) in a written
  answer stops ``manual-NAME.md`` for every later submission; in an assignment name it stops ``unmatched.csv``.
* Rows that are not one per file: ``'=x`` and ``=x`` share one sheet row; a written answer can forge another
  submission's heading in ``manual-NAME.md``.
* Run by an ordinary user, the jail's PID 1 (bwrap) carries the grader's environment, readable in /proc/1/environ.
* The zip's run script shows each question's whole score (hidden points included) at once on Gradescope (tested
  in tests/homework/test_grading_clean.py, on hw1's reference solutions as its zip grades them there).

Each test asserts the secure outcome, so it fails until the hole is fixed. Cost: one build of the assignments
(shared with the other homework tests), seven hw1 jails (about 50 s under load), two grader runs that
start no jail, four bare jails, and a pure-Python run of the seccomp filter (0.1 s).
"""

from __future__ import annotations

import csv
import json
import os
import struct
from pathlib import Path

import nbformat
import numpy
import pytest
from homework_support import machine_memory, notebook, reference, shared_dist, sheets, with_cell, write
from markdown_it import MarkdownIt

pytestmark = pytest.mark.timeout(900)
HW1 = "hw1-advantages"
# Answers that know nothing: every array has a leading axis of length 0, which broadcasts against anything.
EMPTY_ARRAYS = """\
import numpy as np

def group_advantages(rewards, eps=1e-8):
    return np.zeros((0, *np.shape(rewards)))

A_hat = A_hat_sample_std = np.zeros((0, 4))
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
    write(with_cell(untouched, EMPTY_ARRAYS), folder / "empty-arrays.ipynb")
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


def test_the_exit_status_carries_nothing_back_from_a_hidden_test(graded):
    """The function exits with 100 x the first hidden input (90); the row's error must not say 90."""
    row = graded[0]["exit-status.ipynb"]
    feedback = json.loads((graded[1] / "feedback" / HW1).joinpath(_hash("exit-status.ipynb")).read_text())
    assert row["error"] and "90" not in row["error"] and "90" not in feedback["error"]


def _hash(file: str) -> str:
    import hashlib

    return hashlib.sha256(file.encode()).hexdigest() + ".json"


def _answers(manual: str) -> dict[str, str]:
    """The written answers of ``manual-NAME.md`` as a reader sees them: each level-3 heading of the answers' section
    (Markdown escapes undone) with the text of the code block under it (records.manual_text writes them so)."""
    tokens = MarkdownIt().parse(manual.split("\n## Written answer 1\n", 1)[1])
    answers, heading = {}, None
    for number, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h3":
            heading = "".join(child.content for child in tokens[number + 1].children if child.type == "text")
            answers[heading] = None
        elif token.type == "fence" and heading is not None:
            answers[heading] = token.content.rstrip("\n")
    return answers


def test_a_lone_surrogate_in_a_written_answer_loses_no_other_written_answer(graded):
    answers = _answers((graded[1] / f"manual-{HW1}.md").read_text())
    assert answers["manual/c-honest.ipynb"] == HONEST_ANSWER


def test_a_written_answer_cannot_forge_another_submissions_heading(graded):
    """Every heading below a written answer's title is a submission, once each, as a Markdown reader renders it."""
    answers = _answers((graded[1] / f"manual-{HW1}.md").read_text())
    files = sorted(file for file in graded[0] if not file.startswith("("))
    assert list(answers) == files


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


def _grade_folder(folder: Path, dist: Path, out: Path, timeout: int = 5) -> None:
    from homework_support import grade

    arguments = ["--dist", str(dist), "--out", str(out), "--jobs", "1", "--timeout", str(timeout)]
    assert grade.main([str(folder), *arguments]) == 0


def test_a_lone_surrogate_in_an_assignment_name_loses_no_other_row(tiny_dist, tmp_path):
    """metadata.otter.assignment_name = "\\ud800": its row, and every later one of unmatched.csv, must be written.
    grade.py runs as ``make grade`` runs it, its output a pipe that encodes UTF-8 strictly: the progress line that
    names the assignment ended the run (UnicodeEncodeError), which pytest's own capture hid."""
    import subprocess
    import sys

    from homework_support import HOMEWORK

    folder = tmp_path / "submissions"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nb.metadata["otter"] = {"assignment_name": SURROGATE}
    _write_with_surrogate(nb, folder / "a-lone.ipynb")
    (folder / "b-notes.txt").write_text("not a submission")
    arguments = [str(folder), "--dist", str(tiny_dist), "--out", str(tmp_path / "out"), "--jobs", "1"]
    done = subprocess.run([sys.executable, str(HOMEWORK / "grade.py"), *arguments], capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert sorted(row["file"] for row in _unmatched_rows(tmp_path / "out")) == ["a-lone.ipynb", "b-notes.txt"]


def test_a_name_that_looks_like_an_escaped_formula_gets_its_own_row(tiny_dist, tmp_path):
    """``=x.txt`` is stored as ``'=x.txt``; a file really named ``'=x.txt`` must not replace that row."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name in ("=x.txt", "'=x.txt"):
        (folder / name).write_text("not a submission")
    _grade_folder(folder, tiny_dist, tmp_path / "out")
    assert len(_unmatched_rows(tmp_path / "out")) == 2


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
    child running ``sleep`` (fork and exec: the jail has no pipes for ``subprocess``) and a double-forked setsid
    grandchild, then the grader closes the jail: no process of the jail is left running. The jail's processes are
    the ones below bwrap just before ``close()`` (no process leaves a PID namespace); which others run as 65534 is
    not asked, because the other pytest-xdist worker starts its own unprivileged jails."""
    import shutil
    import subprocess
    import time

    from homework_support import HOMEWORK, jail

    cell = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    os.execv('/usr/bin/sleep', ['sleep', '600'])\n"
    cell += "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(600)\n    os._exit(0)\n"
    python = shutil.which("python3", path="/usr/bin")
    script = f"import sys\nsys.path.insert(0, {str(HOMEWORK)!r})\n"
    script += "from jail import Jail, processes_below, python_paths\n"
    script += f"jail = Jail({python!r}, python_paths({python!r}), 30)\n"
    script += f"jail.ask({{'cell': {cell!r}, 'number': 1}})\nprint(jail.ask({{'names': []}}))\n"
    script += "print(sorted(processes_below(jail.process.pid)))\njail.close()\n"
    user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    done = subprocess.run([*user, python, "-c", script], capture_output=True, text=True, cwd="/", check=True)
    answer, pids = done.stdout.splitlines()
    held = [int(pid) for pid in pids.strip("[]").split(", ")]
    deadline = time.monotonic() + 30  # the kernel tears the PID namespace down just after close() returns
    while (left := [pid for pid in held if jail.running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert answer == "{'values': {}}" and len(held) >= 5 and left == []


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
            (value,) = checker.student_values({"x": data}, ["x"], None, seen=[]).values()
            assert isinstance(value, checker.Unsupported)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"])
def test_an_array_is_sent_as_each_of_its_numbers_would_be(dtype):
    """The runner sends an array of finite numbers as its ``tolist()`` and the checker takes a list of numbers as
    it is (no call per number): the data must be what encoding each number alone gives, a non-finite float
    included, and decoding must give the array back, dtype and all; a list with anything but numbers is refused.
    Every dtype the runner sends, both ends of its range, zero, and for floats -0.0, the smallest, nan and inf."""
    from homework_support import runner

    if dtype == "bool":
        numbers = [True, False]
    elif dtype[0] in "iu":
        numbers = [numpy.iinfo(dtype).min, 0, numpy.iinfo(dtype).max]
    else:
        info = numpy.finfo(dtype)
        numbers = [float(info.min), -0.0, float(info.smallest_subnormal), 1.5, float(info.max)]
    finite = numpy.array(numbers, dtype=dtype)
    arrays = [finite, finite.reshape(1, -1), finite[:0]]
    if dtype.startswith("float"):
        arrays.append(numpy.array([*numbers, numpy.nan, numpy.inf, -numpy.inf], dtype=dtype).reshape(2, -1))
    for array in arrays:
        sent = json.loads(json.dumps(runner.encode(array)))
        each = [runner.encode(number, 1) for number in array.ravel().tolist()]
        assert json.dumps(sent["ndarray"]["data"]) == json.dumps(each)
        if {"unsupported": "int"} in each:  # int64's minimum: encode takes ints within +-(2**63 - 1) only
            with pytest.raises(ValueError, match="not an encoded value"):
                runner.decode(sent)
            continue
        back = runner.decode(sent)
        assert back.dtype == array.dtype and back.shape == array.shape
        assert numpy.array_equal(back, array, equal_nan=dtype.startswith("float"))
    for stranger in ("1", None, {"list": []}):
        with pytest.raises(ValueError, match="numbers only"):
            runner.decode({"ndarray": {"dtype": dtype, "shape": [2], "data": [numbers[0], stranger]}})


# ---------------------------------------------------------------- memory that no process holds (issue #24)

# Memory held where no process's resident memory shows it, 4.5 GiB in all (the attacks' own safety cap), in cells
# of one notebook that keeps the reference's answers.
SYSV_SHM = """\
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_segment = _libc.shmget(0, 2**30, 0o1600)  # 1 GiB, filled, then detached: in no process's memory
if _segment < 0:
    raise OSError(ctypes.get_errno(), "shmget")
_address = _libc.shmat(_segment, None, 0)
ctypes.memset(_address, 1, 2**30)
_libc.shmdt(ctypes.c_void_p(_address))
"""
MEMFD = """\
import os
_held = []
for _number in range(16):  # 1 GiB in memfd files of 64 MiB (the file-size limit): not RSS, not address space
    _held.append(os.memfd_create(f"held-{_number}"))
    os.write(_held[-1], bytes(2**26))
"""
SYSV_MESSAGES = """\
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
_message = (ctypes.c_char * (8 + 8192))(b"\\x01")  # mtype 1, 8 KiB of text
for _ in range(32000):  # the namespace's queues (msgmni) of 16 KiB (msgmnb) each: 500 MiB, the most it allows
    _queue = _libc.msgget(0, 0o1600)
    if _queue < 0:
        raise OSError(ctypes.get_errno(), "msgget")
    while _libc.msgsnd(_queue, _message, 8192, 0o4000) == 0:  # IPC_NOWAIT: until the queue is full
        pass
"""
SEMAPHORES = """\
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)
for _ in range(500):  # sets of 32,000 semaphores (semmsl), about 2 MiB of kernel memory each: 1 GiB
    if _libc.semget(0, 32000, 0o1600) < 0:
        raise OSError(ctypes.get_errno(), "semget")
"""
SHARED_AFTER_FORK = """\
import mmap, os, time
_block = mmap.mmap(-1, 2**30, flags=mmap.MAP_SHARED)  # 1 GiB of shared memory, filled here
for _start in range(0, 2**30, 2**24):
    _block[_start : _start + 2**24] = bytes(2**24)
if os.fork() == 0:
    time.sleep(600)  # held only by a child that never touched it: resident in no process
_block.close()
"""
TMPFS_AND_RSS = """\
import contextlib, os, time
for _number in range(48):  # 3 GiB asked, in files of 64 MiB (the file-size limit), of file systems of 256 MiB
    _folder = ("/tmp", "/dev/shm", os.getcwd())[_number % 3]
    with contextlib.suppress(OSError), open(f"{_folder}/fill-{_number}", "wb") as _out:
        _out.write(bytes(2**26))
_held = bytearray(1400 * 2**20)
_held[:: 4096] = b"x" * len(range(0, len(_held), 4096))  # 1.4 GiB resident: with the files, over 2 GiB
time.sleep(1)
"""
# Kernel memory that a jail's IPC, memfd, shared mappings and tmpfs use (/proc/meminfo, kB).
KERNEL_FIELDS = ("Shmem", "SUnreclaim", "VmallocUsed")


def _kernel_held() -> int:
    fields = dict(line.split(":") for line in Path("/proc/meminfo").read_text().splitlines())
    return sum(int(fields[name].split()[0]) * 1024 for name in KERNEL_FIELDS)


def _host_ipc_and_shm() -> tuple:
    """The grader's System V objects (/proc/sysvipc, of the IPC namespace it runs in) and /dev/shm."""
    return tuple(Path(f"/proc/sysvipc/{kind}").read_text() for kind in ("shm", "msg", "sem")), sorted(
        os.listdir("/dev/shm")
    )


@pytest.mark.parametrize(
    ("attack", "cells", "error", "kernel_bound"),
    [
        ("refused", [MEMFD, SYSV_SHM, SYSV_MESSAGES, SEMAPHORES, SHARED_AFTER_FORK], "", 2**28),
        ("tmpfs-and-rss", [TMPFS_AND_RSS], "over the 2 GiB limit", 3 * 2**28 + 2**28),
    ],
)
def test_memory_outside_every_process_is_refused_or_counted(
    dist, tmp_path, tmp_path_factory, attack, cells, error, kernel_bound
):
    """Memory that no process's resident memory shows, 4.5 GiB in all, one cell each in one notebook: 1 GiB in memfd
    files, 1 GiB of System V shared memory left detached, 500 MiB of message queues (the most the namespace allows),
    1 GiB of semaphore sets and 1 GiB of shared memory held by a child that never touched it. Each is refused (EPERM
    from the seccomp filter), its cell ends, and the reference's answers keep full marks, 14. The jail's file
    systems fill to their 768 MiB, which count against the 2 GiB limit with the 1.4 GiB the cell then holds: killed,
    0. What is held stays held while the jail lives (the checker runs on), so the kernel's shared, unreclaimable and
    vmalloc memory, sampled every 20 ms while grading (other sessions' use included), may not rise by more than
    ``kernel_bound``: 256 MiB, plus the 768 MiB of the file systems where they are filled. Without the filter, each
    System V or shared-memory attack alone held 513 to 1031 MiB more, those four together 3560 MiB. Nothing of the
    grader's System V objects, /dev/shm or the marker files changes."""
    import threading

    from homework_support import outside_state, questions

    folder, out = tmp_path / "submissions", tmp_path / "out"
    submission = reference(dist, HW1)
    for source in cells:
        submission = with_cell(submission, source)
    write(submission, folder / f"{attack}.ipynb")
    with machine_memory(tmp_path_factory):
        before, baseline, peak, done = (outside_state(), _host_ipc_and_shm()), _kernel_held(), [0], threading.Event()

        def sample() -> None:
            while not done.wait(0.02):
                peak[0] = max(peak[0], _kernel_held() - baseline)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            _grade_folder(folder, dist, out, timeout=60)
        finally:
            done.set()
            sampler.join()
        after = (outside_state(), _host_ipc_and_shm())
    row = sheets(out)[f"{attack}.ipynb"]
    print(
        f"{attack}: {row['error'] or 'no error'}, {row['total']} points, the kernel held {peak[0] / 2**20:.0f} MiB more"
    )
    assert float(row["total"]) == (0.0 if error else sum(questions(HW1).values()))
    assert (error in row["error"] if error else row["error"] == "") and peak[0] <= kernel_bound
    assert after == before


# Every call the seccomp filter refuses, tried in a bare jail; then which folders take a file. Printed as JSON.
REFUSALS = """\
import ctypes, errno, json, mmap, os, select, socket
_libc = ctypes.CDLL(None, use_errno=True)
_calls = {
    "shmget": lambda: _libc.shmget(0, 2**20, 0o1600),
    "msgget": lambda: _libc.msgget(0, 0o1600),
    "semget": lambda: _libc.semget(0, 1, 0o1600),
    "mq_open": lambda: _libc.mq_open(b"/q", os.O_CREAT | os.O_RDWR, 0o600, None),
    "memfd_create": lambda: os.memfd_create("held"),
    "socket": lambda: socket.socket(socket.AF_UNIX),
    "socketpair": lambda: socket.socketpair(),
    "pipe": lambda: os.pipe(),
    "mkfifo": lambda: os.mkfifo("/tmp/fifo"),
    "epoll": lambda: select.epoll(),
    "inotify": lambda: _libc.inotify_init1(0),
    "shared anonymous mmap": lambda: mmap.mmap(-1, 4096, flags=mmap.MAP_SHARED),
    "shared /dev/zero mmap": lambda: mmap.mmap(os.open("/dev/zero", os.O_RDWR), 4096, flags=mmap.MAP_SHARED),
    "terminal": lambda: os.open("/dev/ptmx", os.O_RDWR),
}
_result = {}
for _name, _call in _calls.items():
    try:
        _result[_name] = "allowed" if _call() not in (-1,) else errno.errorcode[ctypes.get_errno()]
    except OSError as _error:
        _result[_name] = errno.errorcode[_error.errno]
_private = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE)  # what Python's allocators use: still allowed
_writable = []
for _folder in ("/", "/dev", "/grader", "/usr", "/proc/sys", "/tmp", "/dev/shm", "/submission"):
    try:
        open(os.path.join(_folder, "probe"), "w").close()
        _writable.append(_folder)
    except OSError:
        pass
print(json.dumps([_result, _writable]), flush=True)
_libc.syscall(0x40000000 | 39)  # an x32 call (getpid): the filter kills the process
print("survived an x32 call", flush=True)
"""


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_a_jail_refuses_memory_outside_its_processes(user, tmp_path):
    """As root (setpriv to the jail's uid) and as an ordinary user (user namespace, where bwrap's own / and /dev were
    tmpfs of half the machine's RAM that the user owned): every refused call fails with EPERM (a terminal: no
    such device), only the three 256 MiB file systems take a file, and an x32 system call kills the process."""
    import shutil
    import subprocess

    from homework_support import HOMEWORK

    python = shutil.which("python3", path="/usr/bin")
    user_of = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if user == "nobody" else []
    command = [*user_of, python, str(HOMEWORK / "jail.py"), python, REFUSALS]
    done = subprocess.run(command, capture_output=True, text=True, cwd="/", check=True)
    first, *rest = done.stdout.splitlines()
    refused, writable = json.loads(first)
    assert refused == {name: "EPERM" for name in refused} | {"terminal": "ENOENT"} and len(refused) == 14
    assert writable == ["/tmp", "/dev/shm", "/submission"] and rest == []


def test_the_seccomp_filter_decides_every_call_of_both_architectures():
    """The filter run by a classic-BPF interpreter over both architectures' call numbers 0-499 (and x32 ones, and
    an architecture it does not know), with every mapping type: each refused call gets EPERM, ``mmap`` only when not
    MAP_PRIVATE, every other call is allowed, x32 and unknown architectures are killed."""
    from homework_support import jail

    program = [struct.unpack("=HBBI", chunk) for chunk in _chunks(jail.seccomp_filter(), 8)]
    i386 = 0x40000003
    for arch_name, arch in [*jail.AUDIT_ARCH.items(), ("i386", i386)]:
        for number in [*range(500), 0x40000000 | 39]:
            for flags in (0x02, 0x22, 0x01, 0x21, 0x03, 0x0A) if number == jail.MMAP.get(arch_name) else (0x01,):
                data = struct.pack("=iIQ6Q", number, arch, 0, 0, 0, 0, flags, 0, 0)
                if arch == i386 or number >= 0x40000000:
                    expected = jail.KILL
                elif number in jail.DENIED[arch_name].values() or (
                    number == jail.MMAP[arch_name] and flags & 0x0F != 0x02
                ):
                    expected = jail.EPERM
                else:
                    expected = jail.ALLOW
                assert _run_bpf(program, data) == expected, (arch_name, number, hex(flags))


def _chunks(data: bytes, size: int) -> list[bytes]:
    return [data[start : start + size] for start in range(0, len(data), size)]


def _run_bpf(program: list[tuple], data: bytes) -> int:
    """A classic-BPF interpreter for the instructions the filter uses (load word, and, jeq, jge, ret)."""
    accumulator, pc = 0, 0
    while True:
        code, jump_true, jump_false, k = program[pc]
        pc += 1
        if code == 0x20:
            (accumulator,) = struct.unpack_from("=I", data, k)
        elif code == 0x54:
            accumulator &= k
        elif code in (0x15, 0x35):
            taken = accumulator == k if code == 0x15 else accumulator >= k
            pc += jump_true if taken else jump_false
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"an instruction the interpreter does not know: {code:#x}")
