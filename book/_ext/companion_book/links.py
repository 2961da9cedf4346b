"""Links between the notebooks and the book's pages.

A link to one of the companion's notebooks that is not in ``_toc.yml``
renders as plain text (the build names them once, at the end) rather than
as a broken link: a course can publish a subset of the notebooks, and the
book builds while notebooks are being added. Any other unresolved link still
fails the build.

A notebook links to a page of the book by the page's address in the
repository, ``{repository.url}/blob/{repository.branch}/book/NAME.md``:
JupyterLab's server (``make lab``) serves ``notebooks/`` only, where a
relative ``../book/NAME.md`` is a 404, and Colab or Binder show a lone
notebook. In the book such a link becomes a link to the page itself,
resolved (and checked, ``-n``) like any other.
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


def repository_pages(app, doctree) -> None:
    """Make each link to ``{repository.url}/blob/{repository.branch}/PATH.md`` a link to the book's page PATH."""
    options = app.config.html_theme_options
    prefix = f"{options.get('repository_url', '').rstrip('/')}/blob/{options.get('repository_branch', 'main')}/"
    docname = app.env.docname
    for node in list(doctree.findall(nodes.reference)):
        uri = node.get("refuri", "")
        if not uri.startswith(prefix) or not uri.endswith(".md"):
            continue
        target = "/" + uri.removeprefix(prefix).removesuffix(".md")
        xref = pending_xref(
            "", refdomain="std", reftype="doc", reftarget=target, refexplicit=True, refwarn=True, refdoc=docname
        )
        xref += nodes.inline(node.astext(), node.astext())
        node.replace_self(xref)


def report_left_out(app, exception) -> None:
    """One line per build naming the notebooks whose links rendered as text."""
    if app.companion_left_out:
        listed = ", ".join(sorted(posixpath.basename(name) for name in app.companion_left_out))
        LOGGER.info(f"[companion] not in _toc.yml, links to them render as text: {listed}")


def setup(app) -> None:
    app.companion_left_out = set()
    app.add_post_transform(NotebooksLeftOut)
    app.connect("doctree-read", repository_pages)
    app.connect("build-finished", report_left_out)
