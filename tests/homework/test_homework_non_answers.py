"""Every hidden case fails a non-answer, in all ten assignments (issue #37).

A non-answer computes nothing the question asks for: a constant, zeros, its own input handed back, always True or
always False, a seeded random answer, or an answer with a huge spread. For each question of each master, every
name its solution defines (the functions and values a student writes) is replaced by one kind of non-answer, the
other questions keep the reference solution, and the grader's own checker scores the notebook in this process
(``homework_support.checked``): the question must earn nothing on its hidden cases.

The non-answers that know the shape of the right answer are the hardest to catch: they call the reference
solution (the notebook's own, restored for the call) and keep only its structure (the same dict keys, tuple
length, array shape and dtype), or its mean with a huge spread around it; a reference that raises makes them
raise too, so a case that only checks that bad input is refused cannot be passed by a non-answer.
"""

from __future__ import annotations

import ast
import re

import pytest
from homework_support import build, checked, checker
from sweeps import sample

NAMES = build.assignment_names()
# hw1 and one more assignment drawn afresh each run (tests/sweeps.py); `make test-sweeps` runs all ten.
SWEPT = sample(NAMES, ("hw1-advantages",), 1)

# What a non-answer returns, by kind: ``ref()`` is the right answer's structure (the reference solution's value
# for the same call), ``args`` the call's positional arguments, ``seed`` a number drawn from the call's inputs.
CONSTANTS = {"none": "None", "zero": "0", "one": "1.0", "minus-one": "-1.0", "half": "0.5", "true": "True"}
CONSTANTS |= {"false": "False"}
SHAPED = ("zeros", "ones", "random", "random-by-input", "probabilities", "huge", "spread")
INPUTS = {"first-input": 0, "second-input": 1}

# The generated cell's helpers (prefixed ``_na_`` so that no master's name is shadowed).
NON_ANSWER_HELPERS = '''
import zlib as _na_zlib

import numpy as _na_np


def _na_numbers(value, kind, seed):
    """A non-answer of ``value``'s shape and dtype."""
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    array = _na_np.asarray(value)
    rng = _na_np.random.default_rng(seed)
    if array.dtype.kind == "b":
        made = {"zeros": _na_np.zeros(array.shape, bool), "ones": _na_np.ones(array.shape, bool)}
        fake = made.get(kind, rng.random(array.shape) < 0.5)
    elif array.dtype.kind in "iu":
        made = {"zeros": _na_np.zeros_like(array), "ones": _na_np.ones_like(array)}
        alternating = _na_np.where(_na_np.arange(array.size).reshape(array.shape) % 2 == 0, 10**6, -(10**6))
        made |= {"huge": alternating, "spread": array + alternating}
        fake = made.get(kind, rng.integers(0, 10, size=array.shape))
    else:
        alternating = _na_np.where(_na_np.arange(array.size).reshape(array.shape) % 2 == 0, 1e6, -1e6)
        weights = rng.random(array.shape) + 0.01
        probabilities = weights / weights.sum(axis=-1, keepdims=True) if array.ndim else _na_np.float64(0.5)
        made = {"zeros": _na_np.zeros_like(array, float), "ones": _na_np.ones_like(array, float)}
        made |= {"huge": alternating, "spread": array + alternating, "probabilities": probabilities}
        fake = made.get(kind, rng.normal(size=array.shape))
    fake = _na_np.asarray(fake)
    return fake.item() if array.ndim == 0 and not isinstance(value, _na_np.ndarray) else fake


def _na_fake(value, kind, seed=0):
    """``value``'s structure with a non-answer of kind ``kind`` in place of every number in it."""
    if isinstance(value, dict):
        return {key: _na_fake(item, kind, seed + number) for number, (key, item) in enumerate(value.items())}
    if isinstance(value, (tuple, list)):
        return type(value)(_na_fake(item, kind, seed + number) for number, item in enumerate(value))
    if isinstance(value, (str, set, frozenset)) or value is None:
        return type(value)() if value is not None else None
    return _na_numbers(value, kind, seed)


def _na_seed(kind, args, kwargs):
    """0, or a seed drawn from the call's inputs for the kinds that vary with them."""
    if kind not in ("random-by-input", "probabilities"):
        return 0
    return _na_zlib.crc32(repr((args, sorted(kwargs.items()))).encode())
'''


def solution_names(master) -> dict[str, list[str]]:
    """``{question: [names its solution cells define]}`` (what a student of that question writes)."""
    found, question, blocks = {}, None, []
    for cell in master.cells:
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "raw" and (boundary := checker.RAW_BOUNDARY.match(first)):
            kind, block = boundary.groups()
            if kind == "BEGIN" and block == "QUESTION":
                question = checker.yaml_config(cell.source)["name"]
                found[question] = []
            blocks.append(block) if kind == "BEGIN" else blocks.pop()
        elif cell.cell_type == "code" and blocks[-1:] == ["SOLUTION"]:
            found[question] += sorted(checker.defined_names(cell.source))
    return found


def functions(master) -> dict[str, int]:
    """``{name: number of positional parameters}`` of every function the master's solution cells define."""
    found = {}
    for cell in master.cells:
        if cell.cell_type == "code":
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.FunctionDef):
                    found[node.name] = len(node.args.args)
    return found


def kinds(names: list[str], parameters: dict[str, int]) -> list[str]:
    """The kinds of non-answer for a question whose solution defines ``names``: inputs only where every function
    takes that many arguments, and none for a question of values only."""
    called = [parameters[name] for name in names if name in parameters]
    inputs = [kind for kind, index in INPUTS.items() if called and min(called) > index]
    return [*CONSTANTS, *SHAPED, *inputs]


def non_answer_cell(names: list[str], parameters: dict[str, int], kind: str) -> str:
    """A cell that replaces each of ``names`` by a non-answer of ``kind``."""
    lines = [NON_ANSWER_HELPERS, f"_na_kind = {kind!r}", "_na_originals = {"]
    lines += [f"    {name!r}: {name}," for name in names] + ["}", "_na_fakes = {}", ""]
    lines += [
        "def _na_reference(name, args, kwargs):",
        "    globals().update(_na_originals)",
        "    try:",
        "        return _na_originals[name](*args, **kwargs)",
        "    finally:",
        "        globals().update(_na_fakes)",
        "",
        "def _na_function(name):",
        "    def fake(*args, **kwargs):",
    ]
    if kind in CONSTANTS:
        lines.append(f"        return {CONSTANTS[kind]}")
    elif kind in INPUTS:
        lines.append(f"        return args[{INPUTS[kind]}]")
    else:
        lines.append("        seed = _na_seed(_na_kind, args, kwargs)")
        lines.append("        return _na_fake(_na_reference(name, args, kwargs), _na_kind, seed)")
    lines += ["    return fake", ""]
    for number, name in enumerate(names):
        if name in parameters:
            lines.append(f"_na_fakes[{name!r}] = _na_function({name!r})")
        elif kind in CONSTANTS:
            lines.append(f"_na_fakes[{name!r}] = {CONSTANTS[kind]}")
        else:
            lines.append(f"_na_fakes[{name!r}] = _na_fake(_na_originals[{name!r}], _na_kind, {number})")
    lines.append("globals().update(_na_fakes)")
    return "\n".join(lines)


def reference_cells(master) -> list[str]:
    """The master's code cells outside its tests: the notebook a student who answered everything hands in."""
    found, inside = [], False
    for cell in master.cells:
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
        if cell.cell_type == "raw" and re.match(r"#\s*(BEGIN|END)\s+TESTS", first):
            inside = first.split()[1] == "BEGIN"
        elif cell.cell_type == "code" and not inside:
            found.append(cell.source)
    return found


def hidden_passes(name: str) -> dict[tuple[str, str], tuple[int, int]]:
    """``{(question, kind): (hidden cases passed, hidden cases)}`` of every non-answer of an assignment."""
    master = build.master_notebook(name)
    key, cells, parameters = checker.make_key(master), reference_cells(master), functions(master)
    used = set(checker.used_names(key))
    reference = checked(key, cells)
    assert all(passed for cases in reference.values() for _, passed in cases), f"{name}: reference {reference}"
    found = {}
    for question, names in solution_names(master).items():
        graded = [name for name in names if name in used]
        for kind in kinds(graded, parameters):
            results = checked(key, [*cells, non_answer_cell(graded, parameters, kind)])[question]
            hidden = [passed for is_hidden, passed in results if is_hidden]
            found[question, kind] = (sum(hidden), len(hidden))
    return found


@pytest.mark.parametrize("name", SWEPT)
def test_every_hidden_case_fails_every_non_answer(name):
    """Each question's hidden cases all fail when its answers are constants, zeros, ones, its input, always True or
    False, seeded random numbers (or probabilities), or numbers of the right mean with a spread of 1e6."""
    escapes = {f"{q} {kind}": f"{won}/{total}" for (q, kind), (won, total) in hidden_passes(name).items() if won}
    assert escapes == {}, f"{name}: non-answers that pass hidden cases: {escapes}"
