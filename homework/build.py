"""Build the homework: MyST master → notebook → ``otter assign`` → leak check.

    python homework/build.py [--dist homework/dist] [--jobs N] [NAME ...]

Each assignment lives in ``homework/NAME/NAME.md``, a MyST master with otter's
raw delimiter cells. The master is converted to ``.ipynb`` in a scratch
directory (only the MyST file is kept in the repository), then ``otter assign``
writes into ``DIST/NAME/``:

* ``student/NAME.ipynb`` — what students get: prompts, ``...`` stubs, public tests;
* ``autograder/NAME.ipynb`` — the reference solutions (all tests in its metadata);
* ``autograder/NAME-autograder.zip`` — what ``otter run`` grades with.

``otter assign`` grades the solutions notebook itself and fails unless it earns
full marks; afterwards :func:`leaks.find_leaks` must find nothing in
``student/``. Every assignment is attempted; if any fails, the build lists why
and exits non-zero.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jupytext
import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from leaks import find_leaks

HOMEWORK = Path(__file__).resolve().parent
OTTER = Path(sys.executable).with_name("otter")


def assignment_names() -> list[str]:
    """Every ``homework/NAME/NAME.md``."""
    return sorted(path.parent.name for path in HOMEWORK.glob("*/*.md") if path.stem == path.parent.name)


def master_notebook(name: str) -> nbformat.NotebookNode:
    """The master of ``name`` as a notebook (raw cells kept, no jupytext metadata)."""
    notebook = jupytext.read(HOMEWORK / name / f"{name}.md")
    notebook.metadata.pop("jupytext", None)
    return notebook


def assign(master: nbformat.NotebookNode, name: str, dist: Path, *, run_tests: bool = True) -> Path:
    """Run ``otter assign`` on ``master`` into ``dist/name`` (replaced); return that directory."""
    out = dist / name
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=f"{name}-master-") as scratch:
        master_path = Path(scratch) / f"{name}.ipynb"
        nbformat.write(master, master_path)
        command = [str(OTTER), "assign", "--no-pdfs", *([] if run_tests else ["--no-run-tests"])]
        done = subprocess.run([*command, str(master_path), str(out)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"otter assign failed for {name}:\n{done.stdout}\n{done.stderr}")
    zips = list((out / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise RuntimeError(f"otter assign wrote {len(zips)} autograder zips for {name}, expected 1")
    zips[0].rename(out / "autograder" / f"{name}-autograder.zip")
    return out


def build(name: str, dist: Path) -> list[str]:
    """Assign one homework and check its student version; return the leak findings."""
    master = master_notebook(name)
    out = assign(master, name, dist)
    return find_leaks(master, out / "student")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="assignments to build (default: all)")
    parser.add_argument("--dist", type=Path, default=HOMEWORK / "dist", help="output directory")
    parser.add_argument("--jobs", type=int, default=2, help="assignments built in parallel")
    args = parser.parse_args(argv)
    names = args.names or assignment_names()
    unknown = sorted(set(names) - set(assignment_names()))
    if unknown:
        parser.error(f"no master homework/NAME/NAME.md for: {', '.join(unknown)}")
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = dict(zip(names, pool.map(lambda name: _try_build(name, args.dist), names), strict=True))
    failed = False
    for name, problems in results.items():
        print(f"{name}: {'ok' if not problems else 'FAILED'} -> {args.dist / name}")
        for problem in problems:
            print(f"    {problem}")
        failed |= bool(problems)
    return 1 if failed else 0


def _try_build(name: str, dist: Path) -> list[str]:
    try:
        return [f"leak: {finding}" for finding in build(name, dist)]
    except RuntimeError as error:
        return [str(error)]


if __name__ == "__main__":
    sys.exit(main())
