"""A synthetic class, graded by ``make grade`` and by an independent judge, and the two compared (issue #38).

    python tests/class_judge.py [--dist homework/dist] [--seed N] [--students NAME ...] [--timeout SECONDS]

:func:`make_class` writes, deterministically from a seed, a class of 11 students like the one the issue graded by
hand: about 75 files over hw3 to hw10, each a notebook or the zip its export cell makes, each built from the
assignment's built notebooks and the fixture's mistakes (``tests/fixtures/homework/mistakes.toml``):

* right answers, as the reference writes them or written differently (re-formatted, each function delegating to a
  helper of its own);
* a plausible mistake of the fixture; a blank notebook; a cell that raises (at its top, so its names stay undefined,
  or at its end); a function that never returns on some inputs; a cell that never finishes at top level;
* a late second attempt saved by a browser as ``NAME (2).ipynb``; a roster (:func:`roster`) that leaves one student
  out and names one who handed in nothing. Hangs sleep in their loop: they cost wall time (30 s each), not CPU.

The judge (:func:`judge_file`) scores each test case of a file by another path than the grader: no jail, no
``runner.py`` or ``checker.py``, no data round trip. A fresh Python process per file runs the master's setup cells,
then the submission's cells (a cell is first tried in a forked child; one that does not finish within the cell limit
is left out), then each test case of the master in a child forked for it (four at once), with the call limit as its
time limit, in the master's namespace where every name the master's solutions define is the student's object
itself. A case passes when it raises nothing in time. :func:`compare` holds every row of ``make grade`` against the
judge's cases and the class's own facts (student, attempt that counts, late, the roster's gaps). Run as a script, it
grades the whole class (``make class-judge``) and prints the agreement; tests/homework/test_class_judge.py
grades a sample.
"""

from __future__ import annotations

import argparse
import ast
import csv
import datetime
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from homework_support import HOMEWORK, MISTAKES, filled, notebook, wrong_submission

ASSIGNMENTS = [f"hw{n}-{name}" for n, name in [(3, "bandit-step"), (4, "length-bias"), (5, "critic-cost"),
               (6, "verifier-groups"), (7, "group-mean"), (8, "rloo-dpo"), (9, "failure-modes"),
               (10, "lab-experiment")]]  # fmt: skip
STUDENTS = ["ada", "ben", "cai", "dev", "eli", "fay", "gus", "hal", "ivy", "jon", "kim"]
NOT_IN_ROSTER, ONLY_IN_ROSTER = "gus", "lea"  # a student the roster forgot; one on it who handed in nothing
DEADLINE = datetime.datetime(2026, 12, 1, 23, 59, tzinfo=datetime.UTC)
KINDS = ["right", "rewritten", "mistake", "mistake", "blank", "raises", "hangs-in-a-function", "hangs-at-top-level"]
# Always in the class, whatever the seed (the test grades these): (student, assignment) -> kind, form, late attempt.
FIXED = {
    ("ada", "hw6-verifier-groups"): ("hangs-in-a-function", "ipynb", None),
    ("ben", "hw5-critic-cost"): ("hangs-at-top-level", "zip", None),
    ("cai", "hw8-rloo-dpo"): ("mistake", "ipynb", "right"),
    ("gus", "hw9-failure-modes"): ("raises", "ipynb", None),
    ("dev", "hw7-group-mean"): ("rewritten", "zip", None),
}
SECONDS = 30.0  # the cell and call limits of the grader and the judge here: far above any honest cell or call
SLEEPER = "import time as _time\nwhile True:\n    _time.sleep(0.05)"


@dataclass
class Handed:
    """One file of the class and the facts about it the grader must find."""

    file: str  # relative to the class folder
    student: str
    assignment: str
    kind: str
    late: bool
    counts: bool


# ---------------------------------------------------------------- the class


def answer_cells(nb: nbformat.NotebookNode) -> list[int]:
    return [i for i, cell in enumerate(nb.cells) if "otter_answer_cell" in cell.metadata.get("tags", [])]


def defined_functions(source: str) -> list[str]:
    return [node.name for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)]


def rewritten(source: str) -> str:
    """The same answer written differently: re-formatted by ``ast.unparse`` (comments gone), each function renamed
    ``_NAME_impl`` behind a function ``NAME`` that calls it."""
    tree = ast.parse(source)
    wrappers = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            wrappers.append(f"def {node.name}(*args, **kwargs):\n    return _{node.name}_impl(*args, **kwargs)")
            node.name = f"_{node.name}_impl"
    return "\n\n".join([ast.unparse(tree), *wrappers])


def hanging(function: str) -> str:
    """Code that makes ``function`` sleep forever on about half of its inputs (those whose numbers add up, in
    thousandths, to an odd count), the same inputs in the grader's jail and in the judge's process."""
    return f"""

_{function}_before = {function}

def {function}(*args, **kwargs):
    import math
    import numpy as _np
    def _total(x):
        try:
            return float(_np.sum(_np.asarray(x.detach() if hasattr(x, "detach") else x, dtype=float)))
        except Exception:
            return 0.0
    total = sum(map(_total, [*args, *kwargs.values()]))
    if math.isfinite(total) and int(abs(total) * 1000) % 2 == 1:
        {SLEEPER.replace(chr(10), chr(10) + "        ")}
    return _{function}_before(*args, **kwargs)
"""


def kinds(dist: Path, name: str) -> list[str]:
    """The kinds of :data:`KINDS` assignment ``name`` can take: a function can hang only where an answer defines one
    (hw10's answers are values)."""
    nb = notebook(dist, name, "autograder")
    functions = any(defined_functions(nb.cells[i].source) for i in answer_cells(nb))
    return [kind for kind in KINDS if functions or kind != "hangs-in-a-function"]


def submission(dist: Path, name: str, kind: str, rng: random.Random) -> nbformat.NotebookNode:
    """A notebook of assignment ``name`` of the given kind (see the module docstring)."""
    if kind == "blank":
        return notebook(dist, name, "student")
    if kind == "mistake":
        return wrong_submission(dist, rng.choice([m for m in MISTAKES if m["assignment"] == name]))
    nb = filled(notebook(dist, name, "student"), notebook(dist, name, "autograder"))
    answers = answer_cells(nb)
    if kind == "rewritten":
        for i in answers:
            nb.cells[i].source = rewritten(nb.cells[i].source)
    elif kind == "raises":
        cell = nb.cells[rng.choice(answers)]
        cell.source = rng.choice(['raise NotImplementedError("not finished")\n' + cell.source,
                                  cell.source + "\nprint(resutl)"])  # fmt: skip
    elif kind == "hangs-in-a-function":
        i = rng.choice([i for i in answers if defined_functions(nb.cells[i].source)])
        nb.cells[i].source += hanging(rng.choice(defined_functions(nb.cells[i].source)))
    elif kind == "hangs-at-top-level":
        nb.cells[rng.choice(answers)].source += "\n\n" + SLEEPER
    return nb


def _write(nb: nbformat.NotebookNode, path: Path, form: str, when: datetime.datetime) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if form == "zip":  # as otter's export cell names and fills it
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(f"{path.name.split('_')[0]}.ipynb", nbformat.writes(nb))
    else:
        nbformat.write(nb, path)
    os.utime(path, (when.timestamp(), when.timestamp()))


def make_class(dist: Path, folder: Path, seed: int) -> list[Handed]:
    """Write the class into ``folder`` (one folder per student) and its :func:`roster`; what was handed in."""
    rng = random.Random(seed)
    handed = []
    for student in STUDENTS:
        for name in ASSIGNMENTS:
            fixed = FIXED.get((student, name))
            if fixed is None and rng.random() < 0.15:
                continue  # not handed in
            kind, form, late_kind = fixed or (rng.choice(kinds(dist, name)), rng.choice(["ipynb"] * 4 + ["zip"]), None)
            if fixed is None and rng.random() < 0.03:
                late_kind = rng.choice(["right", "rewritten"])
            when = DEADLINE - datetime.timedelta(hours=rng.randint(1, 96))
            stem = f"{name}_2026_11_30T12_00_00_000000.zip" if form == "zip" else f"{name}.ipynb"
            files = [(f"{student}/{stem}", kind, form, when, False)]
            if late_kind:
                late = DEADLINE + datetime.timedelta(hours=rng.randint(1, 48))
                files.append((f"{student}/{name} (2).ipynb", late_kind, "ipynb", late, True))
            for number, (file, what, shape, moment, late_file) in enumerate(files, 1):
                _write(submission(dist, name, what, rng), folder / file, shape, moment)
                handed.append(Handed(file, student, name, what, late_file, number == len(files)))
    lines = [["student_id", "file"]]
    lines += [[f"id-{s}", s] for s in [*STUDENTS, ONLY_IN_ROSTER] if s != NOT_IN_ROSTER]
    with roster(folder).open("w", newline="") as handle:
        csv.writer(handle).writerows(lines)
    return handed


def roster(folder: Path) -> Path:
    """The class's roster, beside its folder (a file in it would be graded as a submission)."""
    return folder.with_name(folder.name + "-roster.csv")


# ---------------------------------------------------------------- the judge

# Runs in a fresh Python per file; reads the job as JSON on stdin, writes one JSON line of booleans to stdout.
WORKER = r"""
import json, os, sys, time, types

job = json.load(sys.stdin)
out = os.fdopen(os.dup(1), "w")
quiet = os.open(os.devnull, os.O_WRONLY)
os.dup2(quiet, 1)
os.dup2(quiet, 2)
otter = types.ModuleType("otter")
otter.Notebook = lambda *args, **kwargs: types.SimpleNamespace(check=lambda *a, **k: None,
                                                               check_all=lambda *a, **k: None,
                                                               export=lambda *a, **k: None)
sys.modules["otter"] = otter

def started(work):
    pid = os.fork()
    if pid == 0:
        try:
            work()
            code = 0
        except BaseException:
            code = 1
        os._exit(code)
    return pid, time.monotonic()

def outcome(child, seconds):
    pid, start = child
    while True:  # a child that ended while another was waited for has ended in time
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) == 0, False
        if time.monotonic() > start + seconds:
            break
        time.sleep(0.005)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return False, True

master = {"__name__": "__master__"}
for source in job["setup"]:
    exec(source, master)
student = {"__name__": "__main__"}
for source in job["cells"]:
    lines = source.splitlines()
    if lines and lines[0].startswith("%%"):
        lines = lines[1:]
    code = "\n".join("pass" if line.strip().startswith(("%", "!")) else line for line in lines)
    _, hung = outcome(started(lambda: exec(code, student)), job["cell_seconds"])  # a copy of student: the child's
    if not hung:
        try:
            exec(code, student)
        except BaseException:
            pass
names = set(job["solution_names"])
tests = {key: value for key, value in master.items() if key not in names}
tests.update({key: value for key, value in student.items() if key in names})
results = []
for first in range(0, len(job["cases"]), 4):  # four cases at once, each in a child of its own with its own limit
    children = [started(lambda case=case: exec(case, dict(tests))) for case in job["cases"][first : first + 4]]
    results += [outcome(child, job["case_seconds"])[0] for child in children]
out.write(json.dumps(results) + "\n")
"""


def master_parts(name: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """``(setup cells, names the solutions define, [(question, case code)])`` read from the master itself."""
    master = jupytext.read(HOMEWORK / name / f"{name}.md")
    setup, names, cases, question, inside = [], set(), [], None, []
    for cell in master.cells:
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "raw" and first.startswith(("# BEGIN", "# END")):
            _, edge, block = first.split()[:3]
            if edge == "BEGIN" and block == "QUESTION":
                question = next(line.split()[1] for line in cell.source.splitlines() if line.startswith("name:"))
            inside = [*inside, block] if edge == "BEGIN" else inside[:-1]
        elif cell.cell_type == "code" and inside[-1:] == ["TESTS"]:
            cases.append((question, cell.source))
        elif cell.cell_type == "code":
            setup.append(cell.source)
            if inside[-1:] == ["SOLUTION"]:
                for node in ast.parse(cell.source).body:
                    targets = getattr(node, "targets", [getattr(node, "target", None)])
                    names |= {node.name} if isinstance(node, ast.FunctionDef | ast.ClassDef) else set()
                    names |= {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}
    return setup, sorted(names), cases


def notebook_cells(path: Path) -> list[str]:
    """The code cells of a handed-in notebook or exported zip, but those otter skips."""
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            (member,) = [m for m in archive.namelist() if m.endswith(".ipynb")]
            raw = json.loads(archive.read(member))
    else:
        raw = json.loads(path.read_text(encoding="utf8"))
    return [
        "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for cell in raw["cells"]
        if cell["cell_type"] == "code" and "otter_ignore" not in cell.get("metadata", {}).get("tags", [])
    ]


def judge_file(path: Path, name: str, seconds: float = SECONDS) -> dict[str, list[bool]]:
    """``{question: [passed, ...]}`` of the master's test cases, in order, on the file's code (see the docstring)."""
    setup, names, cases = master_parts(name)
    job = {"setup": setup, "solution_names": names, "cells": notebook_cells(path), "cases": [c for _, c in cases],
           "cell_seconds": seconds, "case_seconds": seconds}  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "agg"}
    done = subprocess.run([sys.executable, "-c", WORKER], input=json.dumps(job), capture_output=True, text=True,
                          env=env, check=True, cwd=tempfile.gettempdir())  # fmt: skip
    passed = json.loads(done.stdout.splitlines()[-1])
    results: dict[str, list[bool]] = {}
    for (question, _), ok in zip(cases, passed, strict=True):
        results.setdefault(question, []).append(ok)
    return results


# ---------------------------------------------------------------- grading and comparing


def grade_class(folder: Path, dist: Path, out: Path, files: list[Handed] | None = None) -> None:
    """``make grade`` on the class (or on a subset of its files, copied with their times into a folder of
    their own), with the roster, the deadline and the cell and call limits of the judge."""
    sys.path.insert(0, str(HOMEWORK))
    import grade

    if files is not None:
        subset = out.parent / "graded-class"
        roster(subset).write_bytes(roster(folder).read_bytes())
        for handed in files:
            (subset / handed.file).parent.mkdir(parents=True, exist_ok=True)
            os.link(folder / handed.file, subset / handed.file)  # a hard link keeps the time
        folder = subset
    options = ["--dist", str(dist), "--out", str(out), "--jobs", "2", "--timeout", "600", "--roster",
               str(roster(folder)), "--deadline", DEADLINE.isoformat(), "--cell-timeout", str(SECONDS),
               "--call-timeout", str(SECONDS)]  # fmt: skip
    grade.main([str(folder), *options])


def compare(out: Path, handed: list[Handed], judged: dict[str, dict[str, list[bool]]]) -> list[str]:
    """What differs between ``make grade``'s output in ``out`` and the judge's cases and the class's facts, one
    line per file that differs (an empty list: every row agrees)."""
    differences = []
    for item in handed:
        sheet = {row["file"]: row for row in csv.DictReader((out / f"{item.assignment}.csv").open(newline=""))}
        row = sheet.get(item.file)
        if row is None:
            differences.append(f"{item.file}: no row")
            continue
        record_path = out / "feedback" / item.assignment / (hashlib.sha256(item.file.encode()).hexdigest() + ".json")
        record = json.loads(record_path.read_text())
        grader: dict[str, list[bool]] = {}
        for entry in sorted(record["tests"], key=lambda entry: (entry["question"], entry["case"])):
            grader.setdefault(entry["question"], []).append(entry["passed"])
        judge = judged[item.file]
        expected_id = "" if item.student == NOT_IN_ROSTER else f"id-{item.student}"
        facts = {"error": "", "student_id": expected_id, "counts": "yes" if item.counts else "",
                 "late": "yes" if item.late else ""}  # fmt: skip
        found = {key: row[key] for key in facts}
        points = {question: float(sum(cases)) for question, cases in judge.items()}
        if grader != judge or found != facts or {q: float(row[q]) for q in points} != points:
            differences.append(f"{item.file} ({item.kind}): grader {grader} {found}, judge {judge} {facts}")
    return differences


def roster_gaps(out: Path) -> set[tuple[str, str, str]]:
    """``(student_id, file, problem)`` of the roster report (for the assignments graded)."""
    with (out / "reports" / "roster.csv").open(newline="") as handle:
        return {(row["student_id"], row["file"], row["problem"]) for row in csv.DictReader(handle)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, default=HOMEWORK / "dist", help="where `make homework` built the keys")
    parser.add_argument("--seed", type=int, default=2026, help="the class's seed")
    parser.add_argument("--keep", type=Path, help="a folder to keep the class and the grades in")
    args = parser.parse_args(argv)
    base = args.keep or Path(tempfile.mkdtemp(prefix="class-judge-"))
    folder, out = base / "class", base / "grades"
    handed = make_class(args.dist, folder, args.seed)
    print(f"seed {args.seed}: {len(handed)} files of {len(STUDENTS)} students in {folder}", flush=True)
    started = time.monotonic()
    grade_class(folder, args.dist, out)
    graded = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:  # a judge process per file, two at once
        scored = pool.map(lambda item: judge_file(folder / item.file, item.assignment), handed)
        judged = dict(zip([item.file for item in handed], scored, strict=True))
    differences = compare(out, handed, judged)
    print(f"grading {graded - started:.0f} s, judging {time.monotonic() - graded:.0f} s (wall)")
    for line in differences:
        print("differs:", line)
    missing = {(f"id-{ONLY_IN_ROSTER}", "", "no submission")} <= roster_gaps(out)
    print(f"rows agreeing with the judge: {len(handed) - len(differences)} / {len(handed)}; "
          f"the roster report lists the student with no submission: {missing}")  # fmt: skip
    return 0 if not differences and missing else 1


if __name__ == "__main__":
    sys.exit(main())
