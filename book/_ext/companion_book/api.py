"""The API reference of ``grpo_core``: top-level names and property docstrings.

``grpo_core`` re-exports functions from its submodules. Each is documented
once, in the submodule that defines it; a reference to ``grpo_core.NAME``
resolves there, and the ``grpo-top-level-names`` directive lists
``grpo_core.__all__`` with a link and the summary line of each name.

napoleon reads the first line of a property's or attribute's docstring as
``type: description``, which turns prose such as "Size of the vocabulary: the
digits and EOS" into a bogus type; those docstrings are kept as written.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

PACKAGE = "grpo_core"
ATTRIBUTE_KINDS = ("attribute", "property", "data")
CROSS_REFERENCE = re.compile(r":(?:py:)?(?:func|meth|class|attr|data|mod|obj):`([^`]+)`")


def defined_in(name: str, package: str = PACKAGE) -> str | None:
    """The submodule of ``grpo_core`` that defines the name ``name`` that ``package`` re-exports."""
    obj = getattr(importlib.import_module(package), name, None)
    home = getattr(obj, "__module__", None)
    if home is None:  # a constant: find the submodule that assigns it
        assignment = re.compile(rf"^{name}\b[^=\n]*=", re.MULTILINE)
        home = next(
            (
                modname
                for modname, module in sorted(sys.modules.items())
                if modname.startswith(f"{PACKAGE}.") and assignment.search(inspect.getsource(module))
            ),
            None,
        )
    return home if home and home != package else None


def resolve_top_level_name(app, env, node, contnode):
    """Resolve ``grpo_core[.SUBPACKAGE].NAME`` to the module where ``NAME`` is defined and documented."""
    package, _, name = node.get("reftarget", "").rpartition(".")
    if node.get("refdomain") != "py" or not (package == PACKAGE or package.startswith(f"{PACKAGE}.")):
        return None
    try:
        module = importlib.import_module(package)
    except ImportError:
        return None
    if name not in getattr(module, "__all__", ()):
        return None
    home = defined_in(name, package)
    if home is None:
        return None
    return env.get_domain("py").resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], f"{home}.{name}", node, contnode
    )


class TopLevelNames(SphinxDirective):
    """A table of ``grpo_core.__all__``: each name, linked, with the module that defines it and its summary.

    Use inside ``{eval-rst}`` (the summaries are reStructuredText).
    """

    def run(self):
        lines = [
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: auto",
            "   :class: grpo-top-level-names",
            "",
            "   * - name",
            "     - defined in",
            "     - summary",
        ]
        for name in importlib.import_module(PACKAGE).__all__:
            home = defined_in(name)
            obj = getattr(sys.modules[home], name)
            role = "class" if inspect.isclass(obj) else "func" if callable(obj) else "data"
            if role == "data":
                summary = f"``{obj!r}``"
            else:  # the first paragraph; its cross-references become literals (they are relative to their module)
                summary = " ".join(inspect.getdoc(obj).split("\n\n")[0].split())
                summary = CROSS_REFERENCE.sub(lambda match: f"``{match.group(1).lstrip('~')}``", summary)
            lines += [f"   * - :py:{role}:`~{home}.{name}`", f"     - :py:mod:`~{home}`", f"     - {summary}"]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="grpo-top-level-names"), self.content_offset, container)
        return container.children


def remember_attribute_docstring(app, what, name, obj, options, lines) -> None:
    """Before napoleon (priority 500): keep a copy of an attribute's docstring."""
    if what in ATTRIBUTE_KINDS:
        app.companion_attribute_docs[name] = list(lines)


def restore_attribute_docstring(app, what, name, obj, options, lines) -> None:
    """After napoleon: put the attribute's docstring back as it was written."""
    if what in ATTRIBUTE_KINDS and name in app.companion_attribute_docs:
        lines[:] = app.companion_attribute_docs.pop(name)


def setup(app) -> None:
    app.companion_attribute_docs = {}
    app.connect("autodoc-process-docstring", remember_attribute_docstring, priority=400)
    app.connect("autodoc-process-docstring", restore_attribute_docstring, priority=600)
    app.connect("missing-reference", resolve_top_level_name)
    app.add_directive("grpo-top-level-names", TopLevelNames)
