"""A notebook figure's alt text is the ``<title>`` its SVG carries.

A figure cell writes its alt text from the numbers it plots (``grpo_core.plotting.describe``), and the inline SVG
it stores starts with that text as its ``<title>``. myst-nb writes the SVG to a file and shows it as an ``<img>``,
whose ``alt`` only a cell's hand-written metadata could set: this makes each such image's ``alt`` its SVG's title,
so that the page says what the figure draws, and nothing typed beside it (``tests/site/test_site.py`` checks that every
figure of the site has it).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from docutils import nodes

TITLE = re.compile(r"<svg\b[^>]*>\s*<title>([^<]*)</title>")


def svg_title(svg: str) -> str | None:
    """The text of the ``<title>`` an SVG document's root starts with, or None."""
    found = TITLE.search(svg)
    return html.unescape(found.group(1)) if found else None


def alt_from_titles(app, doctree) -> None:
    """Give every SVG image of the page that has a title that title as its alt text."""
    for image in doctree.findall(nodes.image):
        uri = image.get("uri", "")
        if not uri.endswith(".svg") or "://" in uri:
            continue
        # Sphinx's image collector has made the path relative to the source folder (``candidates``) by now,
        # or, if it runs later, it is still as myst-nb wrote it ("/" for the source folder)
        found = image.get("candidates", {}).get("*")
        path = Path(app.srcdir, found) if found else Path(app.env.relfn2path(uri, app.env.docname)[1])
        if path.is_file():
            title = svg_title(path.read_text(encoding="utf8"))
            if title is not None:
                image["alt"] = title


def setup(app) -> None:
    app.connect("doctree-read", alt_from_titles)
