"""The module index's collapse toggles say what they do.

Sphinx's ``domainindex.html`` (the module index, ``py-modindex.html``) draws the
toggle that shows or hides a package's submodules as an image with the alt
text "-", which a screen reader reads as "minus" or "dash" (WCAG 1.1.1;
``tests/site/test_site.py`` rejects alt text that does not describe the image). The
written page gets a description instead.
"""

from __future__ import annotations

import re
from pathlib import Path

TOGGLE_ALT = re.compile(r'(<img\b[^>]*\bclass="toggler"[^>]*\balt=)"-"')
DESCRIPTION = "Show or hide the submodules"


def describe_toggles(app, exception) -> None:
    """Rewrite the toggles' alt text in the module index once the build has written it."""
    page = Path(app.outdir, "py-modindex.html")
    if exception is None and app.builder.format == "html" and page.is_file():
        html = page.read_text(encoding="utf8")
        page.write_text(TOGGLE_ALT.sub(rf'\1"{DESCRIPTION}"', html), encoding="utf8")


def setup(app) -> None:
    app.connect("build-finished", describe_toggles)
