"""What nbval's check of a notebook means: the same on every x86-64 CPU, and still failing on a real change.

``make test`` runs nbval on an emulated x86-64-v2 CPU (``--baseline-cpu``, :func:`conftest.baseline_cpu_env`)
against the outputs ``make notebooks`` stored on the machine's own CPU. These tests check that the emulation turns
the vector units off, that every stored figure carries the text nbval compares, and, on a small notebook, that a
figure whose data moves by 1 % and a printed number that changes in its last digit each fail nbval.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
from conftest import baseline_cpu_env

ROOT = Path(__file__).resolve().parents[2]
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"


def test_the_baseline_cpu_turns_off_every_vector_unit_above_x86_64_v2():
    probe = (
        "import json, torch\n"
        "from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_dispatch__, __cpu_features__\n"
        "above = [name for name in __cpu_dispatch__ if name not in __cpu_baseline__]\n"
        "print(json.dumps({'numpy': {name: __cpu_features__[name] for name in above},\n"
        "                  'torch': torch.backends.cpu.get_cpu_capability()}))\n"
    )
    env = {**os.environ, **baseline_cpu_env()}
    seen = json.loads(subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, check=True).stdout)
    assert seen["torch"] == "DEFAULT"
    assert seen["numpy"] and not any(seen["numpy"].values()), seen["numpy"]


def test_every_stored_figure_carries_the_text_nbval_compares():
    """An inline figure's plain text is its :func:`grpo_core.plotting.figure_summary` (nbval compares it, not the
    SVG), which ``use_style()`` sets up: a notebook that shows a figure without it would go unchecked. Its first line
    is the figure's alt text (:func:`grpo_core.plotting.describe`), so nbval holds the description to the data too."""
    figures = 0
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for number, cell in enumerate(nbformat.read(path, as_version=4).cells):
            for output in cell.get("outputs", []):
                if "image/svg+xml" in output.get("data", {}):
                    figures += 1
                    alt, summary = output["data"]["text/plain"].split("\n", 2)[:2]
                    assert alt.startswith("alt ") and summary.startswith("Figure "), f"{path.name}, cell {number}"
    assert figures >= 30


SETUP = """\
import matplotlib.pyplot as plt
import numpy as np

from grpo_core.plotting import use_style

use_style()
SCALE, SHIFT = {scale}, {shift}"""
FIGURE = """\
x = np.linspace(0, 3, 40)
fig, ax = plt.subplots()
ax.plot(x, SCALE * np.sin(x) ** 2, label="curve")
ax.set_ylim(0, 1.2)
plt.show()"""
NUMBER = 'print(f"sin(1) = {np.sin(1.0) + SHIFT:.4f}")'


def notebook(scale, shift):
    cells = [nbformat.v4.new_code_cell(SETUP.format(scale=scale, shift=shift)), nbformat.v4.new_code_cell(FIGURE)]
    return nbformat.v4.new_notebook(cells=[*cells, nbformat.v4.new_code_cell(NUMBER)])


def test_nbval_fails_on_a_one_percent_figure_move_and_on_a_last_digit_change(tmp_path):
    """Two copies of one notebook keep the outputs stored by running it as it is; then the code changes: in one the
    curve is scaled by 1.01 (its axis holds fixed limits), in the other the number printed to 4 decimals moves by
    1e-4. nbval (as ``make test`` calls it) fails exactly the changed cell of each and passes every other cell, so
    each cell is also seen to pass unchanged (cell 0 in both, the figure in one, the number in the other)."""
    from nbclient import NotebookClient

    stored = notebook(1.0, 0.0)
    NotebookClient(stored, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert "curve" in stored.cells[1].outputs[0]["data"]["text/plain"]
    for name, scale, shift in [("figure_moved", 1.01, 0.0), ("number_moved", 1.0, 1e-4)]:
        copy = nbformat.from_dict(json.loads(nbformat.writes(stored)))
        copy.cells[0].source = notebook(scale, shift).cells[0].source
        nbformat.write(copy, tmp_path / f"{name}.ipynb")
    nbval = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", str(SANITIZE), "-p", "no:cacheprovider"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *nbval, "-rA", "-q", "-p", "no:xdist", "."],
        cwd=tmp_path,
        env={name: value for name, value in os.environ.items() if name != "PYTEST_ADDOPTS"},  # options of make test
        capture_output=True,
        text=True,
    )
    outcomes = {}  # the summary of -rA: "PASSED same.ipynb::Cell 0", "FAILED figure_moved.ipynb::Cell 1 - ..."
    for line in run.stdout.splitlines():
        outcome, _, test = line.partition(" ")
        if outcome in ("PASSED", "FAILED"):
            outcomes[test.split(" - ")[0].rsplit("/", 1)[-1]] = outcome
    expected = {
        f"{name}.ipynb::Cell {cell}": "PASSED" for name in ("figure_moved", "number_moved") for cell in range(3)
    }
    expected |= {"figure_moved.ipynb::Cell 1": "FAILED", "number_moved.ipynb::Cell 2": "FAILED"}
    assert outcomes == expected, run.stdout[-3000:]
