"""What in a submission's code deserves a human look: a static (AST) reading, never run.

:func:`findings` parses every code cell (IPython magics and shell lines blanked)
and names each construct that a homework answer has no use for but an attack on
the grader or the grade needs:

* ``imports grpo_core`` — the answer key;
* ``importlib``, ``__import__``, ``sys.modules``, ``gc``, ``ctypes``, ``subprocess``,
  ``signal``, ``pickle``/``dill``, ``builtins``, otter's internals (anything below
  ``otter``; the notebook's own ``import otter`` is fine);
* ``os.kill`` and friends (``killpg``, ``fork``, ``system``, ``exec*``, ``spawn*``,
  ``setsid``, ``chmod``, ``remove``, ``rename``, ``replace``, ``unlink``);
* a string naming the tests (``tests/``, ``.OTTER``) — reading or rewriting them;
* assigning to an attribute of an imported module or of anything inside one
  (``np.allclose = ...``, ``otter.execute.Checker.check = ...``, ``setattr(np, ...)``,
  ``del np.x``), and ``globals()``, ``vars()``, ``eval``, ``exec``, ``compile``;
* a cell that does not parse (hides nothing, but cannot be read either).

It reads text, so it cannot see code built at run time from strings it does not
recognise (``getattr(__builtins__, "ev" + "al")``); every such trick needs one
of the names above, which is why they are flagged even when innocent.
"""

from __future__ import annotations

import ast
import re

MODULES = {
    "importlib": "importlib",
    "gc": "gc",
    "ctypes": "ctypes",
    "subprocess": "subprocess",
    "signal": "signal",
    "pickle": "pickle",
    "dill": "dill",
    "builtins": "builtins",
    "grpo_core": "imports grpo_core",
    "multiprocessing": "multiprocessing",
    "socket": "socket",
}
OS_CALLS = {
    "kill",
    "killpg",
    "fork",
    "forkpty",
    "system",
    "popen",
    "setsid",
    "chmod",
    "remove",
    "rename",
    "replace",
    "unlink",
    "rmdir",
    "_exit",
    "abort",
}
OS_CALL_PREFIXES = ("exec", "spawn", "posix_spawn")
TEST_PATH = re.compile(r"(^|[\\/])tests([\\/]|$)|\.OTTER|otter_config|results\.(pkl|json)", re.IGNORECASE)
MAGIC = re.compile(r"^\s*[%!]")


def _source(cell_source: str) -> str:
    """The cell as Python: each IPython magic or shell line becomes ``pass`` at its indentation."""
    lines = cell_source.splitlines()
    return "\n".join(line[: len(line) - len(line.lstrip())] + "pass" if MAGIC.match(line) else line for line in lines)


class _Reader(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: set[str] = set()
        self.modules: dict[str, str] = {}  # local name -> module

    def _module(self, name: str, alias: str | None) -> None:
        root = name.split(".")[0]
        self.modules[alias or root] = name if alias else root
        if root in MODULES:
            self.found.add(MODULES[root])
        if root == "otter" and name != "otter":
            self.found.add(f"imports {name}")
        if name == "sys":
            self.modules[alias or "sys"] = "sys"

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(alias.name, alias.asname)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._module(module, None)
        if module.split(".")[0] == "otter" and any(alias.name != "Notebook" for alias in node.names):
            self.found.add(f"imports from {module}")
        if module == "os":
            for alias in node.names:
                self._os_call(alias.name)
        if module == "sys" and any(alias.name == "modules" for alias in node.names):
            self.found.add("sys.modules")

    def _os_call(self, name: str) -> None:
        if name in OS_CALLS or name.startswith(OS_CALL_PREFIXES):
            self.found.add(f"os.{name}")

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in ("__import__", "__builtins__"):
            self.found.add(node.id)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Store | ast.Del) and isinstance(node.value, ast.Attribute):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.modules:
                self.found.add(f"reassigns {ast.unparse(node)}")
        if isinstance(node.value, ast.Name):
            module = self.modules.get(node.value.id, node.value.id if node.value.id in ("os", "sys") else None)
            if module == "os":
                self._os_call(node.attr)
            elif module == "sys" and node.attr == "modules":
                self.found.add("sys.modules")
            if isinstance(node.ctx, ast.Store | ast.Del) and node.value.id in self.modules:
                self.found.add(f"reassigns {node.value.id}.{node.attr}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") and node.args:
            target = node.args[0]
            if isinstance(target, ast.Name) and target.id in self.modules:
                self.found.add(f"{node.func.id} on {target.id}")
        if isinstance(node.func, ast.Name) and node.func.id in ("globals", "vars", "eval", "exec", "compile"):
            self.found.add(f"{node.func.id}()")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and TEST_PATH.search(node.value):
            self.found.add("names the tests or results")


def findings(sources: list[str]) -> list[str]:
    """Sorted, de-duplicated reasons for a human look at these code cells (empty: nothing found)."""
    reader, trees = _Reader(), []
    for number, source in enumerate(sources):
        try:
            trees.append(ast.parse(_source(source)))
        except SyntaxError:
            reader.found.add(f"cell {number} does not parse")
    for tree in trees:  # every import first: a cell may use a module imported further down
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                reader.visit(node)
    for tree in trees:
        reader.visit(tree)
    return sorted(reader.found)
