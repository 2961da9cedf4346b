"""Pages depend on the site's own static files.

Every page names the site's CSS and JS with a checksum
(``companion.css?v=…``), but Sphinx rebuilds a page only when its source
changes, and copies ``html_static_path`` only when it rebuilds some page: an
edit to a CSS file alone would leave the pages and the old copy in
``_static`` as they were.
"""

from __future__ import annotations

from pathlib import Path


def depend_on_static_files(app, doctree) -> None:
    """Make the page being read depend on every file of ``html_static_path``."""
    for folder in app.config.html_static_path:
        for path in sorted(Path(app.confdir, folder).rglob("*")):
            if path.is_file():
                app.env.note_dependency(str(path))


def setup(app) -> None:
    app.connect("doctree-read", depend_on_static_files)
