"""The API reference of ``grpo_core``: re-exported names, the top-level names and the equation table.

``grpo_core`` and its subpackages re-export names from their modules. Each is
documented once, in the module that defines it; a reference to
``grpo_core.NAME`` or ``grpo_core.SUBPACKAGE.NAME`` resolves there. The
``grpo-top-level-names`` directive lists ``grpo_core.__all__`` with a link and
the summary line of each name; ``grpo-equation-table`` renders the table of the
package docstring (chapter → idea → code) with links and the notebook of each
section: the book keeps no copy of either. Each ``[source]`` link (sphinx.ext.viewcode) says, to a screen reader,
whose source it opens.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

PACKAGE = "grpo_core"
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


def summary_of(obj) -> str:
    """The first paragraph of the docstring of ``obj``; cross-references become literals (relative to its module)."""
    summary = " ".join(inspect.getdoc(obj).split("\n\n")[0].split())
    return CROSS_REFERENCE.sub(lambda match: f"``{match.group(1).lstrip('~')}``", summary)


def equation_rows() -> list[tuple[str, str, str, list[str]]]:
    """The rows of the table in ``grpo_core``'s docstring: (section, chapter, idea, [``module.name``, ...])."""
    lines = importlib.import_module(PACKAGE).__doc__.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("=====")]
    starts = [match.start() for match in re.finditer(r"=+", lines[rules[0]])]
    rows: list[tuple[str, str, str, list[str]]] = []
    for line in lines[rules[1] + 1 : rules[2]]:
        section, chapter, idea, where = (line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True))
        names = re.findall(r"``([\w.]+)``", where)
        if section:
            rows.append((section, chapter, idea, names))
        else:  # a continuation line of the row above
            rows[-1][3].extend(names)
    return rows


class EquationTable(SphinxDirective):
    """The package docstring's table, linked: chapter, idea, code (whose docstrings give the formulas), notebook.

    Use inside ``{eval-rst}``. The notebook of section §N is ``notebooks/NN-*.md``.
    """

    def run(self):
        notebooks = Path(self.env.srcdir, "notebooks")
        lines = [
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: auto",
            "   :class: grpo-equation-table",
            "",
            "   * - chapter",
            "     - idea",
            "     - code",
            "     - notebook",
        ]
        for section, chapter, idea, names in equation_rows():
            pages = [
                f":doc:`§{number} </notebooks/{path.stem}>`"
                for number in re.findall(r"§(\d+)", section)
                for path in sorted(notebooks.glob(f"{int(number):02d}-*.md"))
            ]
            lines += [
                f"   * - {section} {chapter}".rstrip(),
                f"     - {idea}",
                "     - " + ", ".join(f":py:obj:`~{PACKAGE}.{dotted}`" for dotted in names),
                "     - " + (", ".join(pages) or "—"),
            ]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="grpo-equation-table"), self.content_offset, container)
        return container.children


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
            summary = f"``{obj!r}``" if role == "data" else summary_of(obj)
            lines += [f"   * - :py:{role}:`~{home}.{name}`", f"     - :py:mod:`~{home}`", f"     - {summary}"]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="grpo-top-level-names"), self.content_offset, container)
        return container.children


class NameSourceLinks(SphinxPostTransform):
    """Every ``[source]`` link is named after the object whose source it opens, in text only a screen reader reads
    ("[source] of BanditTrainer.start"): a page of the API reference has up to 66 of them, which a screen reader's
    list of links showed as 66 "[source]" (WCAG 2.4.4 lets the context name a link; a list of links has none).
    Runs after sphinx.ext.viewcode's ViewcodeAnchorTransform (priority 100) has made the links."""

    default_priority = 101

    def run(self, **kwargs) -> None:
        for anchor in self.document.findall(nodes.inline):
            signature = anchor.parent.parent if isinstance(anchor.parent, nodes.reference) else None
            if "viewcode-link" in anchor["classes"] and isinstance(signature, addnodes.desc_signature):
                anchor.parent += nodes.inline("", f" of {signature['fullname']}", classes=["visually-hidden"])


def setup(app) -> None:
    app.add_post_transform(NameSourceLinks)
    app.connect("missing-reference", resolve_top_level_name)
    app.add_directive("grpo-top-level-names", TopLevelNames)
    app.add_directive("grpo-equation-table", EquationTable)
