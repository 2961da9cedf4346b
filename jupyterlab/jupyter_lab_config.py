"""JupyterLab as ``make lab`` starts it: ``jupyter lab --config=jupyterlab/jupyter_lab_config.py``.

Everything here is local to the project: nothing is installed in the user's
home, and the workspace (open tabs, layout) is kept in ``_build/``. See
book/setup.md ("Working in JupyterLab") for what the reader sees.

* The server's root is the project: a notebook's links to the book's pages
  (``../book/NAME.md``) open them, rendered as notebooks of text cells
  (``jupytext.toml`` reads every ``.md`` as MyST). The file browser opens on
  ``notebooks/`` and lists each notebook once: its MyST source ``NAME.md``,
  which opens as a notebook (jupytext, the default viewer set in
  ``overrides.json``). The ``NAME.ipynb`` beside it (stored outputs for nbval
  and the book, rewritten only by ``make notebooks``) is hidden.
* Jupytext reads the project's ``jupytext.toml``: no pairing, so saving writes
  the ``.md`` only, in the form it is stored in, and opening, running and
  saving a notebook leaves ``git status`` clean.
* A book page opened as a notebook is read-only (:class:`ProjectContents`):
  saved in the notebook format, it would gain a jupytext header, and
  JupyterLab's autosave would save it two minutes after it was opened.
  JupyterLab neither autosaves a read-only document nor saves it on Ctrl+S
  (it offers *Save As*); in the text editor the page stays writable. A page
  names no kernel, and JupyterLab's notebook model writes an empty kernelspec
  and language_info into such a notebook the first time anything reads it,
  which marked the page modified as soon as it opened and made closing it ask
  to save: the page arrives with them (``NO_KERNEL``).
* ``overrides.json`` (this folder is JupyterLab's application settings
  folder) turns the news pop-up off and makes ``.md`` open as a notebook;
  the reader's own settings still take precedence.
* It also keeps the console free of errors during Run All: jupyterlab-myst 2.7
  draws a Markdown cell after JupyterLab 4.6 counts it as drawn, and a cell
  out of view only when it scrolls in. JupyterLab's cell toolbar, which
  measures the active Markdown cell, then threw a TypeError
  (``_markdownOverlapsToolbar``) in 8 of the 13 notebooks, and a reference to a
  later cell was not found (06). The cell toolbar is off (its actions stay in
  the menus, the context menu and the shortcuts) and every cell is drawn when
  the notebook opens (``windowingMode: none``; the notebooks are short).
  tests/browser/test_jupyterlab_reader.py runs every notebook to check it.
* In a container or a Codespace the reader is root, whom Jupyter refuses to
  serve unless told to: it is told to there, and only there (uid 0). The
  server still listens on localhost only and asks for its token.
"""

import os
from pathlib import Path

from jupytext import AsyncTextFileContentsManager

c = get_config()  # noqa: F821 (traitlets provides get_config to config files)
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


# What JupyterLab's notebook model (4.6, NotebookModel.toJSON) writes into a notebook that names no kernel, the first
# time anything reads the model: a book page arrives with it already, so that first read changes nothing.
NO_KERNEL = {"kernelspec": {"name": "", "display_name": ""}, "language_info": {"name": ""}}


class ProjectContents(AsyncTextFileContentsManager):
    """Jupytext's contents manager, with the book's pages read-only as notebooks."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if model["type"] == "notebook" and path.strip("/").startswith("book/"):
            model["writable"] = False
            if content:
                model["content"].metadata.update(NO_KERNEL)
        return model


c.ServerApp.contents_manager_class = ProjectContents
c.ServerApp.allow_root = hasattr(os, "geteuid") and os.geteuid() == 0
c.ServerApp.ip = "localhost"

c.ServerApp.root_dir = str(ROOT)
c.ContentsManager.preferred_dir = "notebooks"  # where the file browser opens
c.LabApp.app_settings_dir = str(HERE)
c.LabApp.workspaces_dir = str(ROOT / "_build" / "jupyterlab-workspaces")  # open tabs and layout, not in git
c.ContentsManager.hide_globs = ["__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*~", "*.ipynb", "ruff.toml"]
