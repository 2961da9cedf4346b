"""Pages depend on the site's own static files.

Every page names the site's CSS and JS with a checksum
(``companion.css?v=…``), but Sphinx rebuilds a page only when its source
changes, and copies ``html_static_path`` only when it rebuilds some page: an
edit to a CSS file alone would leave the pages and the old copy in
``_static`` as they were.

sphinx.ext.viewcode has the same blind spot: it rewrites a module's source
listing (``_modules/…``) only when the module is newer than the page, so a
change of template, theme or CSS left every listing in its old markup. The
listings are removed when a build starts, and viewcode writes them all anew
(26 small pages, well under a second).
"""

from __future__ import annotations

import shutil
from pathlib import Path


def depend_on_static_files(app, doctree) -> None:
    """Make the page being read depend on every file of ``html_static_path``."""
    for folder in app.config.html_static_path:
        for path in sorted(Path(app.confdir, folder).rglob("*")):
            if path.is_file():
                app.env.note_dependency(str(path))


def forget_source_listings(app) -> None:
    """Remove viewcode's ``_modules/`` from the output, so that this build writes every listing."""
    shutil.rmtree(Path(app.outdir, "_modules"), ignore_errors=True)


def setup(app) -> None:
    app.connect("doctree-read", depend_on_static_files)
    app.connect("builder-inited", forget_source_listings)
