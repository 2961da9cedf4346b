"""Build the homework: MyST master → notebook → ``otter assign`` → leak check.

    python homework/build.py [--dist homework/dist] [--jobs N] [NAME ...]

Each assignment lives in ``homework/NAME/``: ``NAME.md``, a MyST master with
otter's raw delimiter cells, and ``requirements.txt``, the packages its
notebooks may import (names only). The master is converted to ``.ipynb`` in a
scratch directory (only the MyST file is kept in the repository), next to

* ``requirements.txt`` — those packages at the versions this repository pins,
  plus the PyTorch CPU index where torch is needed (never the multi-GB CUDA build);
* ``grpo_core/`` — the answer-key package the hidden tests import, taken whole
  from the wheel ``pip wheel --no-deps`` builds from ``src/``;

and ``otter assign`` (the master's config names both) writes into ``DIST/NAME/``:

* ``student/NAME.ipynb`` and ``student/requirements.txt`` — what students get:
  prompts, ``...`` stubs, public tests, whatever the notebook is called and wherever
  it runs (see :func:`portable_student_notebook`);
* ``autograder/NAME.ipynb`` — the reference solutions;
* ``autograder/rubric.md`` — beside them, outside the zip: each written question's model answer and rubric, from
  the master's ``# BEGIN RUBRIC`` raw cells (YAML), which are taken out of the master before otter sees it
  (see :func:`rubrics`); ``make grade`` shows it above the answers in ``manual-NAME.md``;
* ``autograder/NAME-autograder.zip`` — self-contained: tests, ``otter_config.json``,
  ``environment.yml`` (what Gradescope and ``otter grade`` install: Python 3.11,
  otter-grader and the pins above), the same list as ``requirements.txt`` for pip, and
  ``files/grpo_core/``, which otter copies next to each submission. It
  grades the same on Gradescope, in ``otter grade``'s container and with
  ``grade.py``.

``otter assign`` (run in this process: importing otter costs more than assigning)
grades the solutions notebook itself and fails unless it earns full marks;
afterwards :func:`leaks.find_leaks` must find nothing in ``student/``, and no line of a
rubric may appear in ``student/`` or in the autograder zip (:func:`rubric_leaks`). Every
assignment is attempted (``--jobs`` processes at once); if any fails, the build
lists why and exits non-zero.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import copy
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from pathlib import Path

import jupytext
import nbformat
from packaging.requirements import Requirement

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checker import make_key
from leaks import find_leaks

HOMEWORK = Path(__file__).resolve().parent
ROOT = HOMEWORK.parent
OTTER_PIN = "otter-grader==7.0.0"
TORCH_CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"
LOCKED = {"deletable": False, "editable": False}
# Appended to otter's setup.sh (Gradescope's image): bubblewrap for the jail where the container allows namespaces;
# /root traversable, not listable, so that where it does not, the jail's own uid reaches the Python environment
# otter installs in /root/miniforge3 (homework/gradescope.py, ContainerJail).
GRADESCOPE_SETUP = b"\n# the grader's jail (homework/gradescope.py)\napt-get install -y bubblewrap\nchmod 711 /root\n"
GRADER_SCRIPTS = ("checker.py", "jail.py", "runner.py", "grade.py", "records.py", "class_report.py", "sheets.py")
# np.allclose / torch.allclose / isclose broadcast: an answer of shape (0, 4) is "close" to any 4 numbers.
BARE_CLOSE = re.compile(r"\b(?:all|is)close\(")
# A question's public tests as the student's notebook runs them: one case of otter's exception-based format.
PUBLIC_TEST_FILE = """\
OK_FORMAT = False

import sys
import types

from otter.test_files import test_case

name = {question!r}
student_names = {student_names!r}  # what the student writes, of what the checks read
unfinished = []  # stubs the checks met: a value left as ... or None, a function that returned None


def notebook_values(env, *names):
    \"\"\"The notebook's values of ``names``, each function watched for returning None; a NameError says which are not
    defined yet, and that a cell raised if one did (IPython keeps the last error in ``sys.last_value``).\"\"\"
    missing = [each for each in names if each not in env]
    if missing:
        raised = getattr(sys, "last_value", None)
        why = f"a cell above raised {{type(raised).__name__}}: fix it, then " if raised else ""
        raise NameError(f"{{', '.join(missing)}} not defined: {{why}}run the cells above this check first")
    mine = [each for each in names if each in student_names]
    stubs = [each for each in mine if env[each] is ... or env[each] is None]
    unfinished.extend(f"{{each}} is still {{'...' if env[each] is ... else None}}: replace it with your answer"
                      for each in stubs)  # fmt: skip
    return [watched(each, env[each]) if each in mine and isinstance(env[each], types.FunctionType) else env[each]
            for each in names]  # fmt: skip


def watched(name, function):
    def call(*args, **kwargs):
        result = function(*args, **kwargs)
        if result is None:
            unfinished.append(f"{{name}} returned None: finish the function (it must return its answer)")
        return result

    return call


@test_case(hidden=False)
def public_checks(env):
    unfinished.clear()
    try:
{body}
    except Exception as error:  # otter prints the failing line and this message: one line, whatever it shows
        error.args = (unfinished[0] if unfinished else " ".join(str(error).split()),)
        raise
"""


def assignment_names() -> list[str]:
    """Every ``homework/NAME/NAME.md``."""
    return sorted(path.parent.name for path in HOMEWORK.glob("*/*.md") if path.stem == path.parent.name)


_masters: dict[tuple[Path, int, int], nbformat.NotebookNode] = {}


def master_notebook(name: str) -> nbformat.NotebookNode:
    """The master of ``name`` as a notebook (raw cells kept, no jupytext metadata), a copy of its own for the
    caller. Parsed once per process while its file stays the same: jupytext's MyST parse and nbformat's
    validation take 19 ms a master, the tests ask for one hundreds of times (a copy: 0.5 ms)."""
    path = HOMEWORK / name / f"{name}.md"
    info = path.stat()
    version = (path, info.st_mtime_ns, info.st_size)
    if version not in _masters:
        notebook = jupytext.read(path)
        notebook.metadata.pop("jupytext", None)
        _masters[version] = notebook
    return copy.deepcopy(_masters[version])


RUBRIC_BEGIN, RUBRIC_END = "# BEGIN RUBRIC", "# END RUBRIC"


def is_rubric(cell) -> bool:
    return cell.cell_type == "raw" and cell.source.strip().startswith(RUBRIC_BEGIN)


def rubrics(master: nbformat.NotebookNode) -> list[dict]:
    """Each written question's rubric, in order: a raw cell right after its ``manual-answer`` cell, YAML between
    ``# BEGIN RUBRIC`` and ``# END RUBRIC``: ``points``, ``answer`` (the model answer), ``criteria`` (a list of
    ``{points, for}`` summing to ``points``) and ``wrong`` (the typical wrong answers to look for)."""
    import yaml

    found, cells = [], master.cells
    for index, cell in enumerate(cells):
        if not is_rubric(cell):
            continue
        lines = cell.source.strip().splitlines()
        if lines[-1].strip() != RUBRIC_END:
            raise RuntimeError(f"rubric cell {index}: its last line must be {RUBRIC_END!r}")
        if index == 0 or "manual-answer" not in cells[index - 1].metadata.get("tags", []):
            raise RuntimeError(f"rubric cell {index} does not follow a manual-answer cell")
        rubric = yaml.safe_load("\n".join(lines[1:-1]))
        if set(rubric) != {"points", "answer", "criteria", "wrong"} or not rubric["wrong"]:
            raise RuntimeError(f"rubric cell {index}: needs exactly points, answer, criteria, wrong (non-empty)")
        if sum(criterion["points"] for criterion in rubric["criteria"]) != rubric["points"]:
            raise RuntimeError(f"rubric cell {index}: its criteria's points do not sum to {rubric['points']}")
        found.append(rubric)
    answers = sum("manual-answer" in cell.metadata.get("tags", []) for cell in cells)
    if len(found) != answers:
        raise RuntimeError(f"{answers} written questions but {len(found)} rubrics")
    return found


def rubric_markdown(rubrics: list[dict]) -> str:
    """``rubric.md``: per written question, its points, the model answer, the criteria and the wrong answers."""
    lines = ["# Written answers: model answers and rubrics (instructors only)", ""]
    for number, rubric in enumerate(rubrics, 1):
        lines += [
            f"## Written question {number} ({rubric['points']} points): model answer and rubric",
            "",
            "**Model answer.**",
            "",
        ]
        lines += [rubric["answer"].strip(), "", "**Rubric.**", ""]
        lines += [f"- {c['points']} point{'s' * (c['points'] != 1)}: {c['for']}" for c in rubric["criteria"]]
        lines += ["", "**Typical wrong answers.**", "", *(f"- {wrong}" for wrong in rubric["wrong"]), ""]
    return "\n".join(lines)


def rubric_leaks(rubrics: list[dict], out: Path) -> list[str]:
    """Where a line of a model answer, criterion or wrong answer appears in ``out/student`` or the zip."""
    phrases = [line.strip() for rubric in rubrics for line in rubric["answer"].splitlines() if len(line.strip()) > 20]
    phrases += [item for rubric in rubrics for item in [c["for"] for c in rubric["criteria"]] + rubric["wrong"]
                if len(item) > 20]  # fmt: skip
    texts = {str(path): path.read_text(errors="replace") for path in (out / "student").rglob("*") if path.is_file()}
    with zipfile.ZipFile(out / "autograder" / f"{out.name}-autograder.zip") as archive:
        texts |= {f"zip:{member}": archive.read(member).decode(errors="replace") for member in archive.namelist()}
    return [f"rubric text in {where}: {phrase[:60]!r}" for where, text in texts.items() for phrase in phrases
            if phrase in text]  # fmt: skip


def package_grpo_core(into: Path) -> Path:
    """``into/grpo_core``: the package exactly as its wheel (built from ``src/``) installs it."""
    with tempfile.TemporaryDirectory(prefix="grpo-core-wheel-") as scratch:
        tree, wheels = Path(scratch) / "project", Path(scratch) / "wheels"
        tree.mkdir()
        for item in ("pyproject.toml", "README.md"):
            shutil.copy(ROOT / item, tree / item)
        shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
        done = subprocess.run([*command, "-w", str(wheels), str(tree)], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"pip wheel failed:\n{done.stdout}\n{done.stderr}")
        (wheel,) = wheels.glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(into, [n for n in archive.namelist() if n.startswith("grpo_core/")])
    return into / "grpo_core"


def _pins() -> dict[str, str]:
    """``{normalised name: requirement line}`` of the repository's pinned requirements.txt."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            pins[_normal_name(Requirement(line).name)] = line
    return pins


def _normal_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imported(master: nbformat.NotebookNode) -> set[str]:
    """Top-level modules imported anywhere in the master's code (prompts, solutions, tests)."""
    found = set()
    for cell in master.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"grpo_core", "otter"}


def requirements(name: str, master: nbformat.NotebookNode) -> list[str]:
    """The pinned requirement lines of ``homework/NAME/requirements.txt``; it must cover the master's imports."""
    wanted = [line.strip() for line in (HOMEWORK / name / "requirements.txt").read_text().splitlines() if line.strip()]
    missing = sorted(module for module in _imported(master) if _normal_name(module) not in map(_normal_name, wanted))
    if missing:
        raise RuntimeError(f"{name}: homework/{name}/requirements.txt does not list {', '.join(missing)}")
    pins = _pins()
    unknown = sorted(package for package in wanted if _normal_name(package) not in pins)
    if unknown:
        raise RuntimeError(f"{name}: {', '.join(unknown)} not pinned in requirements.txt")
    lines = [pins[_normal_name(package)] for package in wanted]
    return ([TORCH_CPU_INDEX] if "torch" in map(_normal_name, wanted) else []) + lines


def assign(master: nbformat.NotebookNode, name: str, dist: Path, package: Path, *, run_tests: bool = True) -> Path:
    """Run ``otter assign`` on ``master`` into ``dist/name`` (replaced); return that directory.

    ``package`` is the ``grpo_core`` directory shipped in the autograder zip. Otter runs in this process (its
    import costs 3 to 8 CPU-s, an assignment 0.1 s); it changes the working directory while it runs, so one
    process assigns one master at a time. ``run_tests``: otter also grades the solutions notebook, with its own
    tests in a kernel of its own, and fails unless it earns full marks.
    """
    from otter.assign import main as otter_assign

    out = dist / name
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=f"{name}-master-") as scratch:
        master_path = Path(scratch) / f"{name}.ipynb"
        nbformat.write(master, master_path)
        pinned = requirements(name, master)
        (Path(scratch) / "requirements.txt").write_text("\n".join(pinned) + "\n")
        shutil.copytree(package, Path(scratch) / "grpo_core")
        try:
            otter_assign(str(master_path), str(out), no_pdfs=True, no_run_tests=not run_tests)
        except Exception as error:  # otter's own (a test that fails on the solutions: RuntimeError)
            raise RuntimeError(f"otter assign failed for {name}: {type(error).__name__}: {error}") from error
    zips = list((out / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise RuntimeError(f"otter assign wrote {len(zips)} autograder zips for {name}, expected 1")
    key = json.dumps(make_key(master), indent=1)
    (out / "autograder" / "key.json").write_text(key)
    zip_path, otters_zip = out / "autograder" / f"{name}-autograder.zip", zips[0].rename(out / "otter.zip")
    with zipfile.ZipFile(otters_zip) as otters, zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member in otters.infolist():  # otter's own run script and hidden tests stay out
            if member.filename != "run_otter.py" and not member.filename.startswith("tests/"):
                extra = GRADESCOPE_SETUP if member.filename == "setup.sh" else b""
                archive.writestr(member, otters.read(member) + extra)
        archive.writestr("requirements.txt", "\n".join([f"{OTTER_PIN.replace('==', '[grading]==')}", *pinned]) + "\n")
        archive.writestr("key.json", key)
        archive.write(HOMEWORK / "gradescope.py", "run_otter.py")  # what otter's run_autograder runs
        for script in GRADER_SCRIPTS:
            archive.write(HOMEWORK / script, f"grader/{script}")
    otters_zip.unlink()
    portable_student_notebook(name, out / "student", make_key(master))
    (out / "student" / "requirements.txt").write_text("\n".join([*pinned, OTTER_PIN]) + "\n")
    return out


def tests_folder(name: str) -> str:
    """Where the student notebook keeps its public tests (one folder per assignment: no clashes)."""
    return f"{name}-tests"


def public_test_files(key: dict) -> dict[str, str]:
    """``{"q1.py": source, ...}``: each question's public test cells as ONE test case of otter's exception-based format.

    The cells run in order and the first assertion that fails ends the check, so ``grader.check`` prints that
    assertion and its message (which shows the student's values: :func:`silent_assertions`) in six lines; the
    doctest format prints every statement tried and a traceback. Each statement is one line (``ast.unparse``), the
    line otter prints, and the message is made one line (a NumPy array's repr spans several). The notebook's names
    come from the student's namespace (``env``), the rest stay local.
    """
    notebook = set().union(*(_top_level(cell) for cell in key["setup"]))
    files = {}
    for question in key["questions"]:
        tree = ast.parse("\n".join(case["code"] for case in question["cases"] if not case["hidden"]))
        if shadowed := sorted(_bound(tree) & notebook):
            raise RuntimeError(f"{question['name']}: a public test assigns {shadowed}, which the notebook defines")
        free = sorted(_loaded(tree) - _bound(tree) - set(dir(builtins)))
        lines = [f"{', '.join(free)}{',' * (len(free) == 1)} = notebook_values(env, {', '.join(map(repr, free))})"]
        lines = (lines if free else []) + ast.unparse(tree).splitlines()
        body = "\n".join(f"        {line}" for line in lines)
        files[f"{question['name']}.py"] = PUBLIC_TEST_FILE.format(
            question=question["name"], student_names=sorted(set(free) & set(key["student_names"])), body=body
        )
    return files


def _top_level(source: str) -> set[str]:
    """The names a notebook cell defines for the cells after it (not its functions' locals)."""
    body = ast.parse(source).body
    definitions = [node for node in body if isinstance(node, ast.FunctionDef | ast.ClassDef)]
    rest = ast.Module([node for node in body if node not in definitions], [])
    return {node.name for node in definitions} | _bound(rest)


def _loaded(tree: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def _bound(tree: ast.AST) -> set[str]:
    """Names a piece of code binds itself: assignments, arguments, imports, definitions."""
    bound = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
    return bound


def silent_assertions(key: dict) -> list[str]:
    """The public assertions whose message is not an f-string showing a value: a student who fails one would
    not see what their code gave."""
    found = []
    for question in key["questions"]:
        for case in question["cases"]:
            asserts = [node for node in ast.walk(ast.parse(case["code"])) if isinstance(node, ast.Assert)]
            for node in [] if case["hidden"] else asserts:
                parts = node.msg.values if isinstance(node.msg, ast.JoinedStr) else []
                if not any(isinstance(part, ast.FormattedValue) for part in parts):
                    found.append(f"{question['name']}: {ast.unparse(node)}")
    return found


def quote_stripped_assertions(key: dict) -> list[str]:
    """The assertions a student may see (public tests, the notebook's own checks) whose message could begin or end
    with a quote: otter strips ``'`` from both ends of the message it prints (``'1/2' and '2/4' are the same
    number`` lost its first quote), so a message never begins or ends with a ``!r`` value or a quote."""
    found = []
    sources = [case["code"] for question in key["questions"] for case in question["cases"] if not case["hidden"]]
    for source in [*key["setup"], *sources]:
        for node in ast.walk(ast.parse(source)):
            parts = node.msg.values if isinstance(node, ast.Assert) and isinstance(node.msg, ast.JoinedStr) else []
            ends = [(parts[0], 0), (parts[-1], -1)] if parts else []
            if any(_quoted(part, end) for part, end in ends):
                found.append(ast.unparse(node))
    return found


def _quoted(part: ast.AST, end: int) -> bool:
    if isinstance(part, ast.FormattedValue):
        return part.conversion == ord("r")
    return isinstance(part, ast.Constant) and part.value[end:][:1] == "'"


def portable_student_notebook(name: str, student: Path, key: dict) -> None:
    """Make ``student/NAME.ipynb`` work under any file name, in JupyterLab or on Colab.

    ``otter assign`` writes the public tests to ``student/tests/`` (as doctests: replaced here by
    :func:`public_test_files`) and an init cell that names the notebook file. Here the tests move *into* the
    notebook: a first cell (tagged ``otter_ignore``, so grading never runs it) writes them to
    ``NAME-tests/`` next to the notebook and, on Colab, installs otter; the init
    cell reads them from there and no longer names the file, and the export cell
    exports the newest notebook of this assignment in the folder.
    """
    path = student / f"{name}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    tests = public_test_files(key)
    folder = tests_folder(name)
    marker = f'"assignment_name": "{name}"'
    lines = [
        f"# Run this cell first. It saves the public tests into {folder}/ next to this notebook,",
        "# where grader.check finds them whatever the notebook is called (JupyterLab or Colab).",
        "import pathlib",
        "import sys",
        "",
        'if "google.colab" in sys.modules:',
        f"    %pip install --quiet {OTTER_PIN}",
        "",
        "PUBLIC_TESTS = {",
        *(f"    {file!r}: {text!r}," for file, text in tests.items()),
        "}",
        f'pathlib.Path("{folder}").mkdir(exist_ok=True)',
        "for _file, _text in PUBLIC_TESTS.items():",
        f'    pathlib.Path("{folder}", _file).write_text(_text)',
        "",
        "",
        "def this_notebook():",
        f'    """The newest notebook in this folder that belongs to {name} (whatever its name)."""',
        f"    mine = [p for p in pathlib.Path().glob('*.ipynb') if {marker!r} in p.read_text(errors='ignore')]",
        "    return str(max(mine, key=lambda p: p.stat().st_mtime)) if mine else None",
    ]
    setup = nbformat.v4.new_code_cell("\n".join(lines), metadata={**LOCKED, "tags": ["otter_ignore"]})
    init = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code" and "otter.Notebook(" in cell.source]
    if len(init) != 1:
        raise RuntimeError(f"{name}: expected one otter init cell in the student notebook, found {len(init)}")
    notebook.cells[
        init[0]
    ].source = f'# Initialize Otter\nimport otter\n\ngrader = otter.Notebook(tests_dir="{folder}")'
    exports = [cell for cell in notebook.cells if cell.cell_type == "code" and "grader.export(" in cell.source]
    for cell in exports:  # grading skips it, as it skips the setup cell that defines this_notebook
        cell.source = cell.source.replace("grader.export(", "grader.export(this_notebook(), ")
        cell.metadata.setdefault("tags", []).append("otter_ignore")
    notebook.cells.insert(init[0], setup)
    nbformat.write(notebook, path)
    shutil.rmtree(student / "tests")


def build(name: str, dist: Path, package: Path, *, run_tests: bool = True) -> list[str]:
    """Assign one homework and check its student version; return the leak findings."""
    master = master_notebook(name)
    cases = [case["code"] for question in make_key(master)["questions"] for case in question["cases"]]
    broadcasting = [code for code in cases if BARE_CLOSE.search(code)]
    if broadcasting:
        raise RuntimeError(f"{name}: a test compares with a bare allclose/isclose (it broadcasts):\n{broadcasting[0]}")
    silent = silent_assertions(make_key(master))
    if silent:
        raise RuntimeError(f"{name}: a public assertion's message must show the student's value:\n{silent[0]}")
    quoted = quote_stripped_assertions(make_key(master))
    if quoted:
        raise RuntimeError(f"{name}: a message that otter would print without its outer quote:\n{quoted[0]}")
    written = rubrics(master)
    master.cells = [cell for cell in master.cells if not is_rubric(cell)]
    out = assign(master, name, dist, package, run_tests=run_tests)
    (out / "autograder" / "rubric.md").write_text(rubric_markdown(written))
    return find_leaks(master, out / "student") + rubric_leaks(written, out)


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
    with tempfile.TemporaryDirectory(prefix="grpo-core-") as scratch:
        package = package_grpo_core(Path(scratch))
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            built = pool.map(_try_build, names, repeat(args.dist), repeat(package))
            results = dict(zip(names, built, strict=True))
    failed = False
    for name, problems in results.items():
        print(f"{name}: {'ok' if not problems else 'FAILED'} -> {args.dist / name}")
        for problem in problems:
            print(f"    {problem}")
        failed |= bool(problems)
    return 1 if failed else 0


def _try_build(name: str, dist: Path, package: Path) -> list[str]:
    try:
        return [f"leak: {finding}" for finding in build(name, dist, package)]
    except RuntimeError as error:
        return [str(error)]


if __name__ == "__main__":
    sys.exit(main())
