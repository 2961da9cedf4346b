"""Notebook outputs: the ones stored in each notebook's ``.ipynb`` twin, and a readable status column.

A notebook page's source is its MyST ``notebooks/NAME.md``; its twin
``notebooks/NAME.ipynb`` holds the outputs of ``make notebooks``, which
``make test`` re-executes and compares cell by cell (nbval). Before reading,
each twin is put into myst-nb's jupyter-cache as the executed version of its
``.md``, with the run time its own cell timings record, so that the build shows
those outputs without executing anything. A twin whose code differs from its
``.md`` (an edited ``.md`` not yet re-executed) matches nothing in the cache:
myst-nb then executes that notebook, as ``execute_notebooks: cache`` does.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import nbformat
from docutils import nodes
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from sphinx.transforms.post_transforms import SphinxPostTransform

# myst-nb's status marks, which many Linux systems have no font for, and what every text font draws.
EXECUTION_STATUS = {"✅": "✓ ran", "❌": "✗ failed"}


def run_seconds(notebook: nbformat.NotebookNode) -> float | None:
    """Seconds from the first cell's start to the last cell's reply, as nbclient recorded them."""
    timings = [cell.metadata.get("execution", {}) for cell in notebook.cells if cell.cell_type == "code"]
    timings = [t for t in timings if "iopub.execute_input" in t and "shell.execute_reply" in t]
    if not timings:
        return None
    start = datetime.fromisoformat(timings[0]["iopub.execute_input"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(timings[-1]["shell.execute_reply"].replace("Z", "+00:00"))
    return (end - start).total_seconds()


def cache_twin(cache, source: Path) -> None:
    """Put ``source``'s ``.ipynb`` twin, if it has one, into ``cache`` as the execution of ``source``."""
    stored = source.with_suffix(".ipynb")
    if source.suffix != ".md" or not stored.is_file():
        return
    notebook = nbformat.read(stored, as_version=4)
    seconds = run_seconds(notebook)
    for cell in notebook.cells:  # timings are not code: the cache must match the .md without them
        cell.metadata.pop("execution", None)
    bundle = CacheBundleIn(notebook, str(source), data={"execution_seconds": seconds} if seconds else {})
    cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)


def cache_stored_outputs(app, env, docnames) -> None:
    """Cache the twin of every notebook about to be read."""
    if env.mystnb_config.execution_mode == "cache":
        cache = get_cache(env.mystnb_config.execution_cache_path)
        for docname in docnames:
            cache_twin(cache, Path(env.doc2path(docname)))


def depend_on_twin(app, docname, source) -> None:
    """A notebook's page depends on its ``.ipynb`` twin: ``make notebooks`` rewrites the twin alone, and the next
    build reads the page again with the new outputs (Sphinx compares a dependency's time with the page's)."""
    page = Path(app.env.doc2path(docname))
    if page.suffix == ".md" and page.with_suffix(".ipynb").is_file():
        app.env.note_dependency(str(page.with_suffix(".ipynb")))


class PlainExecutionStatus(SphinxPostTransform):
    """Write the status column of ``{nb-exec-table}`` with characters every font has."""

    default_priority = 9  # after myst-nb fills in the table (8)

    def run(self, **kwargs) -> None:
        for cell in self.document.findall(nodes.entry):
            for text in list(cell.findall(nodes.Text)):
                if str(text) in EXECUTION_STATUS:
                    text.parent.replace(text, nodes.Text(EXECUTION_STATUS[str(text)]))


def setup(app) -> None:
    app.connect("env-before-read-docs", cache_stored_outputs)
    app.connect("source-read", depend_on_twin)
    app.add_post_transform(PlainExecutionStatus)
