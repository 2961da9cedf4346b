"""Links between the notebooks and the book's pages.

A link to one of the companion's notebooks that is not in ``_toc.yml``
renders as plain text (the build names them once, at the end) rather than
as a broken link: a course can publish a subset of the notebooks, and the
book builds while notebooks are being added. Any other unresolved link still
fails the build.

A notebook links to a page of the book by its relative path,
``../book/NAME.md``: the book resolves it to the page (and checks it,
``-n``), and JupyterLab (``make lab``, whose root is the project) opens the
page's source.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
NOTEBOOK_SUFFIXES = (".md", ".ipynb")


def notebooks(srcdir) -> set[str]:
    """The companion's notebooks, ``notebooks/NAME`` for every ``notebooks/NAME.md`` of the source tree."""
    return {f"notebooks/{path.stem}" for path in Path(srcdir, "notebooks").glob("*.md")}


class NotebooksLeftOut(SphinxPostTransform):
    """Render links to companion notebooks that are not in the book as plain text."""

    default_priority = 8  # before MyST (9) and Sphinx (10) resolve references

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(pending_xref)):
            docname = self._notebook(node)
            if docname is None or docname in self.env.all_docs:
                continue
            self.app.companion_left_out.add(docname)
            text = node.astext() or posixpath.basename(docname)
            node.replace_self(nodes.inline(text, text, classes=["notebook-not-in-book"]))

    def _notebook(self, node) -> str | None:
        """The companion notebook a MyST link or ``{doc}`` role points at, if any."""
        if node.get("reftype") not in ("myst", "doc"):
            return None
        target = node.get("reftarget", "").split("#", 1)[0]
        if target.startswith("/"):  # {doc}`/notebooks/NAME`: from the book's root
            target = target[1:]
        elif node.get("refdomain") != "doc":  # a path relative to the linking page
            target = posixpath.normpath(posixpath.join(posixpath.dirname(node.get("refdoc", "")), target))
        for suffix in NOTEBOOK_SUFFIXES:
            target = target.removesuffix(suffix)
        return target if target in notebooks(self.app.srcdir) else None


def report_left_out(app, exception) -> None:
    """One line per build naming the notebooks whose links rendered as text."""
    if app.companion_left_out:
        listed = ", ".join(sorted(posixpath.basename(name) for name in app.companion_left_out))
        LOGGER.info(f"[companion] not in _toc.yml, links to them render as text: {listed}")


def setup(app) -> None:
    app.companion_left_out = set()
    app.add_post_transform(NotebooksLeftOut)
    app.connect("build-finished", report_left_out)
