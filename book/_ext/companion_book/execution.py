"""Notebook execution: in parallel before reading, and a readable status column.

myst-nb's cache mode executes notebooks one after the other as it reads them.
Before reading, the notebooks that are not in the jupyter-cache yet are
executed into it in parallel, one per core, which about halves a cold build on
two cores; myst-nb then finds each one in the cache. A notebook that fails
here is executed again by myst-nb, which reports its traceback and, with
``execute.raise_on_error``, fails the build.
"""

from __future__ import annotations

import os
import time
from pathlib import Path, PurePosixPath

from docutils import nodes
from jupyter_cache import get_cache
from jupyter_cache.executors import load_executor
from myst_nb.core.read import create_nb_reader
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
# myst-nb's status marks, which many Linux systems have no font for, and what every text font draws.
EXECUTION_STATUS = {"✅": "✓ ran", "❌": "✗ failed"}


def execute_notebooks_in_parallel(app, env, docnames) -> None:
    """Execute the notebooks about to be read, and not yet cached, into myst-nb's jupyter-cache in parallel."""
    config = env.mystnb_config
    if config.execution_mode != "cache" or (os.cpu_count() or 1) < 2:
        return
    cache = get_cache(config.execution_cache_path)
    pending = []
    for docname in docnames:
        path = env.doc2path(docname)
        content = Path(path).read_text(encoding="utf8")
        reader = create_nb_reader(str(path), env.myst_config, config, content)
        excluded = any(PurePosixPath(path).match(pattern) for pattern in config.execution_excludepatterns)
        if reader is None or excluded:
            continue
        try:
            cache.match_cache_notebook(reader.read(content))
        except KeyError:
            pending.append(cache.add_nb_to_project(str(path), read_data=reader.read_fmt).uri)
    if len(pending) < 2:
        return
    LOGGER.info(f"[companion] executing {len(pending)} notebooks in parallel, {os.cpu_count()} at a time")
    start = time.perf_counter()
    result = load_executor("local-parallel", cache).run_and_cache(
        filter_uris=pending, timeout=config.execution_timeout, allow_errors=config.execution_allow_errors
    )
    failed = [Path(uri).stem for uri in result.excepted + result.errored]
    LOGGER.info(
        f"[companion] executed {len(result.succeeded)} notebooks in {time.perf_counter() - start:.1f} s"
        + (f"; failed, to be re-run by myst-nb: {', '.join(failed)}" if failed else "")
    )


class PlainExecutionStatus(SphinxPostTransform):
    """Write the status column of ``{nb-exec-table}`` with characters every font has."""

    default_priority = 9  # after myst-nb fills in the table (8)

    def run(self, **kwargs) -> None:
        for cell in self.document.findall(nodes.entry):
            for text in list(cell.findall(nodes.Text)):
                if str(text) in EXECUTION_STATUS:
                    text.parent.replace(text, nodes.Text(EXECUTION_STATUS[str(text)]))


def setup(app) -> None:
    app.connect("env-before-read-docs", execute_notebooks_in_parallel)
    app.add_post_transform(PlainExecutionStatus)
