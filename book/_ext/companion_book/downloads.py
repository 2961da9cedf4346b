"""The buttons above a notebook page: downloads and launch.

A notebook page is built from its MyST ``.md``, which the theme offers for
download; its ``.ipynb`` twin (the stored outputs and widget state) is offered
next to it. Launch buttons (Binder, Colab, JupyterHub) need the repository's
address: while ``repository.url`` is empty, or still the placeholder
(``repository``), they stay off instead of pointing nowhere (sphinx-book-theme
would fail on an empty one).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from companion_book.repository import is_placeholder


def hide_launch_buttons_without_repository(app, config) -> None:
    """No repository URL, or the placeholder, no launch buttons (they would have nothing to launch)."""
    options = config.html_theme_options
    if is_placeholder(options.get("repository_url", "")):
        options["launch_buttons"] = {}


def offer_paired_notebook(app, pagename, templatename, context, doctree) -> None:
    """List a notebook page's ``.ipynb`` twin in the page's download menu.

    Runs before the theme builds that menu (priority 501), which then offers
    ``.ipynb`` (copied by :func:`copy_paired_notebooks`) and ``.md`` (the
    page's source).
    """
    if context.get("page_source_suffix") == ".md" and Path(app.srcdir, f"{pagename}.ipynb").is_file():
        context["ipynb_source"] = f"{pagename}.ipynb"


def copy_paired_notebooks(app, exception) -> None:
    """Copy ``notebooks/NAME.ipynb`` (stored outputs and widget state) into ``_sources``.

    Done last, so that it also replaces the copy the theme makes for its launch
    buttons, which can lack outputs when myst-nb took them from its cache.
    """
    if exception is not None or app.builder.format != "html":
        return
    for docname in app.env.found_docs:
        paired = Path(app.srcdir, f"{docname}.ipynb")
        if Path(app.env.doc2path(docname)).suffix == ".md" and paired.is_file():
            target = Path(app.outdir, "_sources", f"{docname}.ipynb")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(paired, target)


def setup(app) -> None:
    app.connect("config-inited", hide_launch_buttons_without_repository)
    app.connect("html-page-context", offer_paired_notebook, priority=500)
    app.connect("build-finished", copy_paired_notebooks)
