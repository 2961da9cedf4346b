"""The trusted side of grading: the key, and the comparison that never runs in the student's process.

An assignment's **key** (``key.json``, written by ``build.py`` from the master) holds

* ``setup``: the master's code cells outside its tests, reference solutions included;
* ``student_names``: the names the master's solution cells define (what a student writes);
* ``questions``: per question, its test cases (the master's test cells, each worth ``points``,
  ``hidden`` or not), in order; a hidden case also names the ``mistake`` it is designed to catch
  (its ``# mistake: NAME`` line), which feedback entry ``(question, case)`` indexes (``case`` from 1).

To grade a notebook, :func:`grade` asks the jailed ``runner.py`` to run the notebook's cells and
return, as data, the value of every student name the tests use. Each test case then runs *here*,
in a namespace made from :func:`reference` (the master's setup run once, in this process) in which
every student name is replaced by the student's value: a number, array, tensor, string or
container rebuilt from data (:func:`runner.decode`), or, for a function, a :class:`StudentFunction`
that sends the arguments the test computed to the jail and returns the student's result as
data. Nothing the student's code built ever runs in this process, and the student's process sees
the tests' inputs only, never a test, an expected value or the key.

Public test cases run before hidden ones. The feedback of a public case that fails is the
test's own assertion message and the student's values it used; of a hidden case, only the kind
of failure (a check failed, the student's code raised, the answer could not be checked). A case
the trusted side cannot run (its import fails) is no failure of the student's: the row gets an
error saying so, never a silently lost point.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import io
import json
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy
from jail import Hung, Jail, JailError
from runner import decode, encode

if TYPE_CHECKING:  # the grader never imports nbformat (1.5 CPU-s: grade.parse_notebook)
    import nbformat

FEEDBACK_CHARS = 300
CALL_SECONDS = 60.0  # one call of a student's function (the whole submission has its own limit, grade.py's)
CELL_SECONDS = 60.0  # one cell of the notebook
MISTAKE = re.compile(r"^# mistake: ([a-z0-9-]+)$", re.MULTILINE)
RAW_BOUNDARY = re.compile(r"^\s*#\s*(BEGIN|END)\s+(QUESTION|SOLUTION|TESTS)\b")


class StudentError(Exception):
    """The student's own code raised (its message is the student's, so it may be shown)."""


class DidNotReturn(StudentError):
    """A call of the student's function did not return within its limit. Its message names the function and the
    limit, never the arguments (a hidden test's inputs) or anything measured."""


#: A student's function that raises one of these is seen by the tests as raising it (a test may require
#: ``ValueError`` for bad input); the error is still a :class:`StudentError`, so nothing else catches it for real.
RAISABLE = {kind.__name__: type(kind.__name__, (StudentError, kind), {}) for kind in (ValueError, TypeError)}


def make_key(master: nbformat.NotebookNode) -> dict:
    """The key of a master notebook (see the module docstring)."""
    setup, student_names, questions, blocks, question = [], set(), [], [], None
    for cell in master.cells:
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "raw" and (boundary := RAW_BOUNDARY.match(first)):
            kind, block = boundary.groups()
            if kind == "BEGIN" and block == "QUESTION":
                config = yaml_config(cell.source)
                question = {"name": config["name"], "points": config["points"]["each"], "cases": []}
                questions.append(question)
            blocks.append(block) if kind == "BEGIN" else blocks.pop()
        elif cell.cell_type == "code" and blocks[-1:] == ["TESTS"]:
            case = {"code": cell.source, "hidden": first.strip() == "# HIDDEN"}
            question["cases"].append(case | ({"mistake": mistake_of(cell.source)} if case["hidden"] else {}))
        elif cell.cell_type == "code":
            setup.append(cell.source)
            if blocks[-1:] == ["SOLUTION"]:
                student_names |= defined_names(cell.source)
    return {"setup": setup, "student_names": sorted(student_names), "questions": questions}


def mistake_of(source: str) -> str | None:
    """The mistake a hidden case is designed to catch: its ``# mistake: NAME`` line (the class report counts them)."""
    found = MISTAKE.search(source)
    return found[1] if found else None


def yaml_config(source: str) -> dict:
    import yaml

    return yaml.safe_load(source.split("\n", 1)[1])


_parse_lock = threading.Lock()
_parsed: dict[str, ast.Module] = {}


def parsed(source: str) -> ast.Module:
    """``ast.parse(source)``, one call at a time in this process, each source once. CPython 3.11's ``ast.parse`` is
    not safe in threads: building the tree's Python objects counts its depth in the interpreter's state, and two
    grading threads parsing at once (``--jobs 2``) raised ``SystemError: AST constructor recursion depth mismatch``
    out of ``checker.grade`` (CPython issue gh-106905). The trees are only read."""
    with _parse_lock:
        if source not in _parsed:
            _parsed[source] = ast.parse(source)
        return _parsed[source]


def defined_names(source: str) -> set[str]:
    """Names bound at the top level of a cell (functions, classes, assignments)."""
    names = set()
    for node in parsed(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        for target in getattr(node, "targets", [getattr(node, "target", None)]):
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} if target else set()
    return names


def used_names(key: dict) -> list[str]:
    """The student names that some test case reads."""
    read = set()
    for question in key["questions"]:
        for case in question["cases"]:
            read |= {node.id for node in ast.walk(parsed(case["code"])) if isinstance(node, ast.Name)}
    return sorted(read & set(key["student_names"]))


class GraderError(Exception):
    """The trusted side could not check a case (an import failed): the row says so instead of scoring it."""


def _unimportable(error: ImportError) -> str:
    return f"the grader could not import what a test needs ({type(error).__name__}: {error})"


def imported_modules(key: dict) -> list[str]:
    """The modules the key's test cases import (``import X``, ``from X import Y``)."""
    modules = set()
    for question in key["questions"]:
        for case in question["cases"]:
            for node in ast.walk(parsed(case["code"])):
                if isinstance(node, ast.Import):
                    modules |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    modules.add(node.module)
    return sorted(modules)


_references: dict[tuple[str, ...], dict] = {}  # by the setup cells' sources, which make the namespace
_reference_lock = threading.Lock()


def reference(key: dict) -> dict:
    """The namespace of the master's setup cells, run once per set of setup cells in this (the trusted) process;
    and every module the key's test cases import, imported here first.

    Cached by the cells' sources, not by ``id(key)``: a key that is freed leaves its id to the next object, and
    the next key would have been checked against another master's namespace. The imports happen under the lock,
    before any case runs: two grading threads that import a package for the first time at once can each get an
    ``ImportError`` or a half-initialised module (``import grpo_core.bandit`` in one thread while another runs
    ``grpo_core/__init__.py``, which imports ``grpo_core.bandit``): a hidden case then failed with no reason shown."""
    setup = tuple(key["setup"])
    with _reference_lock:
        if setup not in _references:
            namespace = {"__name__": "__reference__", "__builtins__": builtins}
            with contextlib.redirect_stdout(io.StringIO()):
                for source in setup:
                    exec(compile(source, "<master>", "exec"), namespace)
            _references[setup] = namespace
        for module in imported_modules(key):
            try:
                importlib.import_module(module)
            except ImportError as error:
                raise GraderError(_unimportable(error)) from None
        return _references[setup]


class Session:
    """The conversation with one submission's jail. The notebook's code ``cells`` (``(number in the notebook,
    source)``) are sent one at a time: a cell that does not finish within ``cell_seconds`` is stopped (the jail is
    killed, however the cell handles signals), named in the feedback by its number and first line, and left out
    from then on: the jail is started again and runs the cells before it again, so what it would have defined stays
    undefined and the later cells and the tests run. A call that does not return within ``call_seconds`` fails the
    test that made it (:class:`DidNotReturn`); the jail is then started again, the same way, before the next call.
    The jail's own wall time, restarts included, stays the limit of the whole submission. What reading its replies
    costs this process (:meth:`charged`) comes off that time."""

    def __init__(
        self, jail: Jail, cells: list[tuple[int, str]], names: list[str], call_seconds: float, cell_seconds: float
    ):
        self.jail, self.cells, self.names = jail, cells, names
        self.call_seconds, self.cell_seconds = call_seconds, cell_seconds
        self.stuck: dict[int, str] = {}  # cells that did not finish: number -> what the feedback says
        self.hung = False

    def charged(self, work, *args):
        """``work(*args)``, the CPU seconds this thread spends on it taken from the jail's wall time: a submission
        whose replies are costly to read (each is bounded: ``runner.loads``) runs out of its own time."""
        started = time.thread_time()
        try:
            return work(*args)
        finally:
            self.jail.deadline -= time.thread_time() - started

    def start(self) -> dict:
        """Run the cells (all but those that did not finish before), then ask for the values of the names the
        tests read: ``{"values": ..., "cells_raised": [...]}``, what each cell that raised or did not finish did,
        in the notebook's order."""
        raised = self._run_cells()
        try:
            reply = self.charged(self.jail.ask, {"names": self.names}, self.cell_seconds)
        except Hung:  # encoding a value ran the student's code (a set's items' __repr__) and it did not end
            raise JailError(f"reading the notebook's values did not finish within {self.cell_seconds:g} s") from None
        return {"values": reply.get("values"), "cells_raised": raised}

    def _run_cells(self) -> list[str]:
        """What the cells raised or did not finish; every cell that hangs is recorded and the jail restarted."""
        while True:
            raised = {}
            for number, source in self.cells:
                if number in self.stuck:
                    continue
                request = {"cell": source, "number": number}
                try:
                    reply = self.charged(self.jail.ask, request, self.cell_seconds)
                except Hung:
                    self.stuck[number] = f"{cell_name(number, source)} did not finish within {self.cell_seconds:g} s"
                    self.jail.restart()
                    break
                if reply.get("cell") != number:
                    raise JailError("the notebook's process sent something that is not an answer")
                if reply.get("raised") is not None:
                    raised[number] = f"{cell_name(number, source)}: {str(reply['raised'])[:FEEDBACK_CHARS]}"
            else:
                return [text for _, text in sorted({**raised, **self.stuck}.items())]

    def call(self, name: str, request: dict) -> dict:
        if self.hung:
            self.jail.restart()
            self.start()
            self.hung = False
        try:
            return self.charged(self.jail.ask, request, self.call_seconds)
        except Hung:
            self.hung = True
            raise DidNotReturn(f"`{name}(…)` did not return within {self.call_seconds:g} s") from None


def cell_name(number: int, source: str) -> str:
    """A cell as its feedback names it: ``cell 7 (`while True: …`)``, its number in the notebook and first line."""
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    return f"cell {number} (`{first[:60]}{' …' if len(first) > 60 or len(lines) > 1 else ''}`)"


class StudentFunction:
    """Stands for a function of the student's: each call is answered by the jail, as data."""

    def __init__(self, name: str, session: Session, seen: list):
        self.name, self.session, self.seen = name, session, seen

    def __call__(self, *args, **kwargs):
        kwargs = {key: encode(value) for key, value in kwargs.items()}
        request = {"call": self.name, "args": [encode(arg) for arg in args], "kwargs": kwargs}
        reply = self.session.call(self.name, request)
        if "raised" in reply:
            message = str(reply["raised"])[:FEEDBACK_CHARS]
            raise RAISABLE.get(message.partition(":")[0], StudentError)(message)
        try:
            value = self.session.charged(decode, reply.get("value"))
        except (ValueError, TypeError, RecursionError) as error:
            raise StudentError(f"the function returned something that is not an answer ({error})") from None
        self.seen.append((f"{self.name}(...)", value))
        return value


class Unsupported:
    """A student value that is not data (a module, a generator, ...): every comparison with it fails."""

    def __init__(self, what: str):
        self.what = what

    def __repr__(self) -> str:
        return f"<{self.what}: not a value the grader can read>"


def student_values(answers: dict, names: list[str], session: Session, seen: list) -> dict:
    values = {}
    for name in names:
        if name not in answers:
            continue
        data = answers[name]
        if isinstance(data, dict) and "function" in data:
            values[name] = StudentFunction(name, session, seen)
            continue
        try:
            values[name] = decode(data)
        except (ValueError, TypeError, RecursionError):
            values[name] = Unsupported(str(data.get("unsupported", "value")) if isinstance(data, dict) else "value")
    return values


def _shown(value: object) -> str:
    with numpy.printoptions(threshold=20, precision=6):
        text = repr(value)
    return text if len(text) <= FEEDBACK_CHARS else text[: FEEDBACK_CHARS - 3] + "..."


#: Said, after what a failing case says, when a cell raised ModuleNotFoundError for grpo_core.
WITHOUT_GRPO_CORE = "grading runs without grpo_core, the companion's package: write the code the question asks for"


def cells_raised(reply: dict) -> str:
    """What a failing case's feedback adds when cells of the notebook raised while the grader ran them: the first
    three errors (the runner's ``cells_raised``, the student's own messages, from before any test ran). A name
    that such a cell should have defined is then missing, and the check says only that it is not there."""
    raised = reply.get("cells_raised")
    if not isinstance(raised, list) or not raised:
        return ""
    shown = [str(error)[:150] for error in raised[:3]] + (["..."] if len(raised) > 3 else [])
    hint = any("No module named 'grpo_core'" in error for error in shown)
    return f" [when the grader ran your notebook: {'; '.join(shown)}{'; ' + WITHOUT_GRPO_CORE if hint else ''}]"


def run_case(case: dict, base: dict, values: dict, seen: list) -> tuple[bool, str, str]:
    """``(passed, feedback, reason)`` of one test case run on the student's values: ``feedback`` is the test's
    message and the student's values (shown for public cases only), ``reason`` the kind of failure, which names
    nothing of the test (shown for hidden ones too). A case whose own import fails raises :class:`GraderError`:
    no student value can make a module of the trusted side fail to import."""
    namespace = {**base, **values}
    read = {n.id for n in ast.walk(parsed(case["code"])) if isinstance(n, ast.Name)}
    seen.clear()
    seen.extend((name, values[name]) for name in sorted(read & set(values)) if not callable(values[name]))
    try:
        exec(compile(case["code"], "<test>", "exec"), namespace)
        return True, "", ""
    except JailError:
        raise
    except ImportError as error:
        raise GraderError(_unimportable(error)) from None
    except AssertionError as error:
        message, reason = str(error) or "a check failed", "a check failed"
    except DidNotReturn as error:
        message = reason = str(error)
    except StudentError as error:
        message, reason = f"your code raised {error}", "your code raised an error"
    except Exception as error:
        message = reason = f"checking your answer raised {type(error).__name__}"
    values_text = "; ".join(f"{name} = {_shown(value)}" for name, value in seen)
    return False, message + (f" (your values: {values_text})" if values_text else ""), reason


def grade(
    key: dict,
    cells: list[tuple[int, str]],
    jail: Jail,
    call_seconds: float = CALL_SECONDS,
    cell_seconds: float = CELL_SECONDS,
) -> tuple[dict[str, float], list[dict], str]:
    """``(points per question, feedback per test case, error)`` of one notebook's code ``cells``; an error (the
    jail's limits, the grader's own failure) scores nothing and says why. A cell that does not finish within
    ``cell_seconds`` costs only the tests that need what it would have defined, and a call of the student's
    functions that does not return within ``call_seconds`` only the test cases that make it (:class:`Session`)."""
    names = used_names(key)
    scores = {question["name"]: 0.0 for question in key["questions"]}
    feedback: list[dict] = []
    try:
        base = {name: value for name, value in reference(key).items() if name not in key["student_names"]}
        session = Session(jail, cells, names, call_seconds, cell_seconds)
        reply = session.start()
        seen: list = []
        raised = cells_raised(reply)
        answers = reply.get("values") if isinstance(reply.get("values"), dict) else {}
        values = session.charged(student_values, answers, names, session, seen)
        cases = [(q, number, case) for q in key["questions"] for number, case in enumerate(q["cases"])]
        for question, number, case in sorted(cases, key=lambda item: item[2]["hidden"]):
            passed, message, reason = run_case(case, base, values, seen)
            scores[question["name"]] += question["points"] * passed
            entry = {"question": question["name"], "case": number + 1, "hidden": case["hidden"], "passed": passed}
            if not passed:
                entry |= {"reason": reason + raised} if case["hidden"] else {"message": message + raised}
            feedback.append(entry)
    except (JailError, GraderError) as error:
        return {}, [], str(error)
    feedback.sort(key=lambda entry: (entry["question"], entry["case"]))
    return scores, feedback, ""


def load_key(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf8"))
