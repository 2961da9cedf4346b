"""The site's entry page, ``index.html``: it forwards to the landing page.

sphinx-external-toc writes a bare ``<meta http-equiv="Refresh">`` there when
the root document is not ``index``. A page without ``<link rel="icon">``
makes the browser ask for ``/favicon.ico``, a 404 on the first visit. This
one names the site's icon, has a title, and links the landing page for
browsers that do not follow the refresh. It is written before
sphinx-external-toc looks for an ``index.html`` (which then leaves it alone).
"""

from __future__ import annotations

import html
import posixpath
from pathlib import Path

PAGE = """<!DOCTYPE html>
<html lang="{language}">
<head>
<meta charset="utf-8">
<title>{title}</title>
{icon}<meta http-equiv="Refresh" content="0; url={target}">
</head>
<body>
<p><a href="{target}">{title}</a></p>
</body>
</html>
"""


def write_entry_page(app, exception) -> None:
    """Write ``index.html`` forwarding to the root document, with the site's icon."""
    if exception is not None or app.builder.format != "html" or app.config.root_doc == "index":
        return
    icon = app.config.html_favicon  # a file copied into _static/, or an address
    if icon and "://" not in icon:
        icon = f"_static/{posixpath.basename(icon)}"
    page = PAGE.format(
        language=html.escape(app.config.language or "en"),
        title=html.escape(app.config.html_title or app.config.project),
        icon=f'<link rel="icon" href="{html.escape(icon)}">\n' if icon else "",
        target=html.escape(app.builder.get_target_uri(app.config.root_doc)),
    )
    Path(app.outdir, "index.html").write_text(page, encoding="utf8")


def setup(app) -> None:
    app.connect("build-finished", write_entry_page, priority=400)  # sphinx-external-toc's runs at 500
