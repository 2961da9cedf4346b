"""The autograder zip's run script (``run_otter.py``, which otter's ``run_autograder`` starts on Gradescope).

It grades ``/autograder/submission`` as ``make grade`` grades one file: the notebook's code runs in
a jail, the key (``key.json``) and the comparison stay in this process, and
``/autograder/results/results.json`` gets two entries per question: its public test cases' points
and messages, visible at once, and its hidden cases' points and how many passed, ``after_published``.
The total has no visibility of its own in Gradescope's results format: Gradescope hides it from
students while a test is hidden, except one whose visibility is ``hidden`` (its autograder
specification), so no entry here is ``hidden`` and the total waits for the grades' publication.

**The jail** (:func:`jail_kind`): bubblewrap (``grader/jail.py``) where it starts; Gradescope grades each
submission in a fresh container, as root, where new namespaces may be refused (Docker's default: no
``CAP_SYS_ADMIN``). There the container is the boundary (:class:`ContainerJail`): the runner runs as its own uid,
without capabilities, under ``no_new_privs`` and the bubblewrap jail's resource limits, in a folder of its own, and
cannot read ``/autograder/source`` (the key; made 0700) nor write the results; what it gives up against bubblewrap
is the seccomp filter and a network and file system of its own. Each kind is tried on an empty notebook first;
if neither answers, nothing is graded: the script exits with status 1 and says why on stderr, so Gradescope shows
the instructor a failed autograder run, and no student a 0.

**The submission**: one notebook or exported zip; a student who uploads both the ``.ipynb`` and its zip gets the
``.ipynb`` graded, once.
"""

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

AUTOGRADER = Path(os.environ.get("AUTOGRADER", "/autograder"))  # another folder only in our tests
SOURCE = AUTOGRADER / "source"
sys.path[:0] = [str(SOURCE / "grader"), str(SOURCE / "files")]  # our scripts; grpo_core for the key's tests

import checker
import grade
from jail import Jail, JailError, python_paths

TIMEOUT = 600


class ContainerJail(Jail):
    """The runner as its leased uid (:func:`jail.lease_uid`) in the container itself, where bubblewrap cannot start
    (see above)."""

    def command(self, python: str, paths: list[str], uid: int, cpu_seconds: int, seccomp_fd: int) -> list[str]:
        limits = Jail.command(python, paths, uid, cpu_seconds, seccomp_fd)  # "prlimit LIMITS -- bwrap ..."
        if not hasattr(self, "folder"):  # the first start; a restart after a hung call reuses the folder
            self.folder = Path(tempfile.mkdtemp(prefix="grader-"))  # root's: the runner, readable, a working folder
            self.folder.chmod(0o755)
            shutil.copy(SOURCE / "grader" / "runner.py", self.folder / "runner.py")
            (self.folder / "submission").mkdir(mode=0o700)
            os.chown(self.folder / "submission", uid, uid)
        work = self.folder / "submission"
        drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]
        drop += ["--bounding-set=-all", "--no-new-privs"]
        env = ["env", "-i", "-C", str(work), f"HOME={work}", "PATH=/usr/bin:/bin", "OMP_NUM_THREADS=1"]
        env += ["OPENBLAS_NUM_THREADS=1", "MPLBACKEND=agg"]
        return [*limits[: limits.index("--") + 1], *drop, *env, python, "-I", str(self.folder / "runner.py")]

    def _stop(self) -> None:
        """Kill the runner's process group and every process left of its uid (one may leave the group): when the
        jail is closed, and when a cell or call that did not finish makes it start again."""
        super()._stop()
        for pid in (int(entry) for entry in os.listdir("/proc") if entry.isdigit()):
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{pid}").st_uid == self.uid:
                    os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        """Stop the runner (:meth:`_stop`), give the uid back, remove its folder."""
        super().close()
        if hasattr(self, "folder"):
            shutil.rmtree(self.folder, ignore_errors=True)


def jail_kind(python: str) -> type[Jail]:
    """The first jail that answers an empty notebook: bubblewrap's, or (as root) :class:`ContainerJail`; or
    :class:`JailError` saying that neither could start."""
    tried = []
    for kind in (Jail, ContainerJail) if os.geteuid() == 0 else (Jail,):
        jail = kind(python, python_paths(python), 60)
        try:
            jail.ask({"names": []})
            return kind
        except JailError as error:
            tried.append(f"{kind.__name__}: {error}")
        finally:
            jail.close()
    raise JailError("no jail could start here (" + "; ".join(tried) + "); see book/instructors.md, Gradescope")


def chosen(submission: Path) -> tuple[Path | None, str]:
    """The file to grade: the one notebook or exported zip, or the notebook when both were uploaded."""
    found = [p for p in grade.submissions(submission) if p.suffix in (".ipynb", ".zip")]
    notebooks = [p for p in found if p.suffix == ".ipynb"]
    if len(found) == 1 or (len(notebooks) == 1 and len(found) == 2):
        return (found[0] if len(found) == 1 else notebooks[0]), ""
    return None, f"expected one notebook (and perhaps its exported zip), found {len(found)} files"


def results(submission: Path, kind: type[Jail] = Jail) -> dict:
    key = checker.load_key(SOURCE / "key.json")
    found, problem = chosen(submission)
    if found is None:
        return {"score": 0, "output": problem}
    try:
        notebook = grade.parse_notebook(grade.read_bytes(found))
    except (ValueError, OSError) as error:
        return {"score": 0, "output": f"unreadable submission: {error}"}
    jail = kind(sys.executable, python_paths(sys.executable), TIMEOUT)
    try:
        scores, feedback, error = checker.grade(key, grade.code_sources(notebook), jail)
    finally:
        jail.close()
    if error:
        return {"score": 0, "output": error}
    tests = []
    for question in key["questions"]:
        mine = [entry for entry in feedback if entry["question"] == question["name"]]
        public = [entry for entry in mine if not entry["hidden"]]
        hidden = [entry for entry in mine if entry["hidden"]]
        shown = [f"case {e['case']}: {'passed' if e['passed'] else e['message']}" for e in public]
        tests.append(_entry(question, public, "\n".join(shown)) | {"visibility": "visible"})
        passed = sum(e["passed"] for e in hidden)
        output = f"{passed} of {len(hidden)} hidden tests passed"
        tests.append(_entry(question, hidden, output, " (hidden)") | {"visibility": "after_published"})
    return {"score": sum(scores.values()), "tests": tests}


def _entry(question: dict, cases: list[dict], output: str, suffix: str = "") -> dict:
    """One results.json test: the points of ``cases`` (one question's public or hidden ones) and their output."""
    score = question["points"] * sum(case["passed"] for case in cases)
    return {"name": question["name"] + suffix, "score": score, "max_score": question["points"] * len(cases),
            "output": output}  # fmt: skip


def main() -> int:
    SOURCE.chmod(0o700)  # the key and the zip's files: root's alone, whichever jail runs
    try:
        kind = jail_kind(sys.executable)
    except JailError as error:
        print(f"grading cannot run: {error}", file=sys.stderr)
        return 1
    print(f"jail: {kind.__name__}", flush=True)  # the autograder's output, shown to instructors
    (AUTOGRADER / "results").mkdir(exist_ok=True)
    (AUTOGRADER / "results" / "results.json").write_text(json.dumps(results(AUTOGRADER / "submission", kind), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
