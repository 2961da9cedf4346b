"""The autograder zip anywhere, and the jail without root.

* The zip's run script (``run_otter.py``, what Gradescope runs) of every assignment gives its reference solutions
  full marks, and one wrong submission exactly the points it loses with ``make grade``, in a virtual environment
  built from the zips' own ``requirements.txt`` (one for all: their requirements differ only by torch), without
  this project installed: the key's tests import ``grpo_core`` from the zip. (The other wrong submissions lose
  their points in tests/homework/test_grading.py, with the same key, checker and jail.) On Gradescope, the entries shown
  at once carry no hidden point and the total waits for publication (the red team's, issue #24).
* ``jail.py`` run by an ordinary user (uid 65534) with the system's Python: bubblewrap needs no privilege.
* The zip's run script as Gradescope runs it, as root, where bubblewrap starts and in a container where it cannot
  (no ``CAP_SYS_ADMIN``, Docker's default): full marks both ways, the key unread and the results untouched by the
  student's code; where no jail can start, no results at all (never a 0) and the reason on stderr.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from homework_support import (
    HOMEWORK,
    NAMES,
    WRONG,
    jail,
    points_of,
    questions,
    reference,
    shared_dist,
    with_cell,
    write,
    wrong_submission,
)

pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def clean_python(tmp_path_factory) -> Path:
    """A virtual environment holding only what the autograder zips require (no grpo_core, no project), built
    from the masters' requirements as ``build.py`` writes them into the zips (so it needs no build first).

    They go into a venv made without a pip of its own as ``make venv`` installs the project: the project's pip
    installs torch alone, from the index the file names or where pip's configuration finds a machine's CPU wheel
    of it; then the project's uv resolves and installs every package of the file, torch's own requirements
    included, from the cache that ``make venv`` filled (pip, which shares no cache with uv, downloaded them all
    again: 46 s of the fixture's 48). Each module's bytecode is left to its first import; then what the grader and
    the jails import is imported once, as ``grade.py`` does: a jail sees the environment read-only and could not
    keep the bytecode it compiles."""
    from homework_support import build

    home = tmp_path_factory.mktemp("clean-env")
    lines = [build.OTTER_PIN.replace("==", "[grading]==")]
    for name in NAMES:
        lines += [line for line in build.requirements(name, build.master_notebook(name)) if line not in lines]
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(home / "venv")], check=True)
    python = home / "venv" / "bin" / "python"
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    env["PIP_RETRIES"] = "0"  # where the PyTorch CPU index is unreachable, fail over to the other indexes at once
    index = [word for line in lines if line.startswith("--") for word in line.split()]  # where torch's CPU wheel is
    packages = [line for line in lines if not line.startswith("--")]
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-compile", "--no-deps"]
    subprocess.run([*pip, *index, *[line for line in packages if line.startswith("torch==")]], check=True, env=env)
    uv = [Path(sys.executable).with_name("uv"), "pip", "install", "--quiet", "--python", str(python)]
    subprocess.run([*uv, *packages], check=True, env=env)
    subprocess.run([str(python), "-c", "import nbformat, numpy, torch"], check=True, env=env, cwd=home)
    return python


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    return shared_dist(tmp_path_factory)


def run_zip(clean_python: Path, dist: Path, name: str, submission: nbformat.NotebookNode, where: Path) -> dict:
    """``results.json`` of the zip's run script for one submission, as Gradescope lays the folders out."""
    with zipfile.ZipFile(dist / name / "autograder" / f"{name}-autograder.zip") as archive:
        archive.extractall(where / "source")
    write(submission, where / "submission" / "any-name.ipynb")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"} | {"AUTOGRADER": str(where)}
    done = subprocess.run([str(clean_python), str(where / "source" / "run_otter.py")], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return json.loads((where / "results" / "results.json").read_text())


HW1 = "hw1-advantages"


@pytest.fixture(scope="module")
def zip_runs(clean_python, dist, tmp_path_factory) -> list[tuple[str, dict, dict, Path]]:
    """``(assignment, points expected per question, results.json, folder)`` of the zip's run script on every
    assignment's reference solutions, then on hw1-ddof1.ipynb, in the clean environment (two at once)."""
    cases = [(name, reference(dist, name), questions(name)) for name in NAMES]
    (wrong,) = [fixture for fixture in WRONG if fixture["file"] == "hw1-ddof1.ipynb"]
    cases.append((wrong["assignment"], wrong_submission(dist, wrong), points_of(wrong)))
    base = tmp_path_factory.mktemp("zip-runs")

    def graded(number: int) -> tuple[str, dict, dict, Path]:
        name, submission, expected = cases[number]
        return name, expected, run_zip(clean_python, dist, name, submission, base / str(number)), base / str(number)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(graded, range(len(cases))))


def test_the_zip_grades_the_same_in_a_clean_environment(clean_python, zip_runs, tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    probe = subprocess.run([str(clean_python), "-c", "import grpo_core"], capture_output=True, env=env, cwd=tmp_path)
    assert probe.returncode != 0, "the clean environment must not hold the project"
    assert len(zip_runs) == len(NAMES) + 1
    for name, expected, result, _ in zip_runs:
        got = Counter()  # a question's public entry and its hidden one together
        for test in result["tests"]:
            got[test["name"].removesuffix(" (hidden)")] += test["score"]
        assert got == {question: float(points) for question, points in expected.items()}, name
        assert result["score"] == sum(expected.values())
        hidden = [test["name"] for test in result["tests"] if test["visibility"] == "after_published"]
        assert hidden == [f"{question} (hidden)" for question in got]


def test_the_zips_visible_entries_carry_no_hidden_points(zip_runs):
    """On Gradescope only the ``after_published`` entries may tell how hidden tests went; the run script put each
    question's whole score (hidden points included) in an entry visible at once. The reference solutions showed q1
    5 of 5 where its public tests are worth 2. The total score stays hidden until the grades are published.
    (Red team, issue #24: hw1's reference solutions, graded above by its zip.)"""
    (folder, result), *_ = [(folder, result) for name, _, result, folder in zip_runs if name == HW1]
    key = json.loads((folder / "source" / "key.json").read_text())
    public = {q["name"]: sum(not case["hidden"] for case in q["cases"]) for q in key["questions"]}
    visible = {t["name"]: t.get("score", 0) for t in result["tests"] if t.get("visibility") != "after_published"}
    assert set(public) == set(questions(HW1)) and all(visible.get(name, 0) <= public[name] for name in public)
    # The total: Gradescope's results format has no visibility of its own for it, but hides it from students while
    # a test that scores points is not yet shown ("If test cases are hidden, students will not be able to see their
    # total score. Test cases with visibility set to hidden don't affect this", docs/specs.md of
    # gradescope/autograder_samples). So every entry with hidden points must be after_published (not hidden, which
    # otter 7.0.0 gives every entry by default and which leaves the total, hidden points included, visible at once),
    # and nothing at the top level may set the tests' visibility otherwise.
    hidden = [t for t in result["tests"] if t["name"].endswith(" (hidden)")]
    assert len(hidden) == len(public) and all(t["max_score"] > 0 for t in hidden)
    assert {t["visibility"] for t in hidden} == {"after_published"} and "visibility" not in result
    assert result["score"] == sum(t["score"] for t in result["tests"]) == sum(questions(HW1).values())


def test_the_jail_needs_no_root(tmp_path):
    """``jail.py`` as uid 65534 with Debian's Python: a user namespace of its own, no network (the seccomp filter
    refuses even a socket), no capabilities."""
    probe = (
        "import json, os, socket\n"
        "status = dict(line.split(':\\t') for line in open('/proc/self/status').read().splitlines())\n"
        "try:\n    socket.create_connection(('127.0.0.1', 22), timeout=1); net = 'reached'\n"
        "except OSError as error:\n    net = type(error).__name__\n"
        "print(json.dumps([os.getuid(), os.getpid(), status['CapEff'], net, sorted(os.listdir('/'))]))"
    )
    python = shutil.which("python3", path="/usr/bin")
    command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, str(HOMEWORK / "jail.py")]
    done = subprocess.run([*command, python, probe], capture_output=True, text=True, cwd="/", check=True)
    uid, pid, capabilities, net, top = json.loads(done.stdout)
    assert (uid, pid, capabilities, net) == (65534, 2, "0000000000000000", "PermissionError")  # no socket at all
    assert top == ["bin", "dev", "grader", "lib", "lib64", "proc", "submission", "tmp", "usr"]


# A student's last cell, run as whatever the jail makes it: it tries to overwrite the results and the key, and to copy
# the key to a folder anyone may write, and says who it ran as.
TAMPER = """\
import os
for target in ({results!r}, {key!r}):
    try:
        open(target, "w").write("{{}}")
    except OSError:
        pass
try:
    text = open({key!r}).read()
    open({drop!r} + "/key", "w").write(text)
except OSError:
    pass
try:
    open({drop!r} + "/uid", "w").write(str(os.getuid()))
except OSError:
    pass
"""
# The container: a mount namespace of its own where /root is 0711 (as the zip's setup.sh makes it, so the jail's
# uid reaches the Python environment under it without listing /root), then the run script without CAP_SYS_ADMIN,
# so bubblewrap cannot make a namespace ("Creating new namespace failed: Operation not permitted"), as in Docker.
CONTAINER = """\
set -e
mkdir -p "$SCRATCH/root/.pyenv"
chmod 711 "$SCRATCH/root"
mount --bind /root/.pyenv "$SCRATCH/root/.pyenv"
mount --rbind "$SCRATCH/root" /root
exec setpriv --bounding-set=-sys_admin -- "$@"
"""


def gradescope_run(dist: Path, base: Path, files: dict[str, nbformat.NotebookNode | bytes], how: str):
    """``(completed process, drop folder, key bytes)`` of hw1's zip run as Gradescope runs it (as root), ``how``:
    ``bwrap``, ``container`` or ``container without /root`` (the jail's uid cannot reach the Python: no jail)."""
    autograder = base / "autograder"
    with zipfile.ZipFile(dist / HW1 / "autograder" / f"{HW1}-autograder.zip") as archive:
        archive.extractall(autograder / "source")
        key = archive.read("key.json")
    drop = base / "drop"
    drop.mkdir()
    drop.chmod(0o777)
    for name, content in files.items():
        path = autograder / "submission" / name
        if isinstance(content, bytes):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        else:
            write(content, path)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env |= {"AUTOGRADER": str(autograder), "SCRATCH": str(base)}
    command = [sys.executable, str(autograder / "source" / "run_otter.py")]
    if how == "container":
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", CONTAINER, "sh", *command]
    elif how == "container without /root":
        command = ["setpriv", "--bounding-set=-sys_admin", "--", *command]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900), drop, key


def test_the_zips_setup_installs_bubblewrap_and_opens_root_to_the_jail(dist):
    """Gradescope builds its image with the zip's setup.sh: without bubblewrap every submission scored 0."""
    with zipfile.ZipFile(dist / HW1 / "autograder" / f"{HW1}-autograder.zip") as archive:
        setup = archive.read("setup.sh").decode().splitlines()
    assert setup[-2:] == ["apt-get install -y bubblewrap", "chmod 711 /root"]


@pytest.fixture
def open_folder():
    """A folder every user may enter (pytest's are root's alone, which would hide the key by themselves)."""
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="gradescope-") as folder:
        os.chmod(folder, 0o755)
        yield Path(folder)


@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs the autograder as root")
@pytest.mark.parametrize("how", ["bwrap", "container"])
def test_gradescope_grades_with_or_without_bubblewrap(dist, open_folder, how):
    """The reference solutions with a last cell that tampers: full marks, the key neither changed nor copied, the
    results the grader's. Both the notebook and its exported zip are uploaded: graded once (before: 0, "found 2").
    Before: in the container every submission scored 0, "the notebook's process ended before it answered"."""
    solved = reference(dist, HW1)
    results, key = open_folder / "autograder" / "results" / "results.json", open_folder / "autograder/source/key.json"
    tamper = TAMPER.format(results=str(results), key=str(key), drop=str(open_folder / "drop"))
    exported = io.BytesIO()
    with zipfile.ZipFile(exported, "w") as archive:
        archive.writestr(f"{HW1}.ipynb", nbformat.writes(solved))
    files = {f"{HW1}.ipynb": with_cell(solved, tamper), f"{HW1}.zip": exported.getvalue()}
    done, drop, key_bytes = gradescope_run(dist, open_folder, files, how)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == {"bwrap": "jail: Jail", "container": "jail: ContainerJail"}[how]
    result = json.loads(results.read_text())
    assert result["score"] == sum(questions(HW1).values()), result
    assert key.read_bytes() == key_bytes and not (drop / "key").exists()
    # in bubblewrap's jail the drop folder is not even there; in the container the cell ran, as the jail's own uid
    assert sorted(p.name for p in drop.iterdir()) == ([] if how == "bwrap" else ["uid"])
    if how == "container":  # a uid of the jails' range, leased (jail.lease_uid): not root's, not a classmate's
        assert int((drop / "uid").read_text()) in range(jail.UID_BASE, jail.UID_BASE + jail.UIDS)


@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs the autograder as root")
def test_where_no_jail_can_start_no_student_gets_a_zero(dist, open_folder):
    """No bubblewrap and a Python the jail's uid cannot reach (/root 0700): no results.json (Gradescope tells the
    instructor the autograder failed; the student gets no score), exit status 1, each jail's reason on stderr."""
    done, _, _ = gradescope_run(dist, open_folder, {f"{HW1}.ipynb": reference(dist, HW1)}, "container without /root")
    assert done.returncode == 1 and not (open_folder / "autograder" / "results" / "results.json").exists()
    assert done.stderr.startswith("grading cannot run: no jail could start here (Jail: ")
    assert "ContainerJail: " in done.stderr
