"""The GRPO Companion's own Sphinx extension (``sphinx.local_extensions`` in _config.yml).

Small jobs that Sphinx, sphinx-book-theme, myst-nb, sphinxcontrib-bibtex and
autodoc leave open, one module each:

``execution``
    Puts the outputs stored in each notebook's ``.ipynb`` twin into myst-nb's
    jupyter-cache, so that a build executes only notebooks whose code changed
    since ``make notebooks``, and writes the status column of the execution
    table with characters every font has.
``downloads``
    Offers each notebook page's ``.ipynb`` next to its MyST ``.md``; keeps
    the launch buttons off until ``repository.url`` is set.
``api``
    Resolves ``grpo_core[.SUBPACKAGE].NAME`` to the module that defines it,
    lists ``grpo_core.__all__`` (``grpo-top-level-names``) and renders the
    package docstring's equation table (``grpo-equation-table``).
``links``
    Renders a link to one of the companion's notebooks (``notebooks/*.md``)
    that is not in ``_toc.yml`` as text instead of failing the build.
``bibliography``
    Labels the bibliography author–year, like the citations in the text, and
    writes its entries as list items (ARIA).
``figure_alt``
    Makes a notebook figure's alt text the title its SVG carries, which the
    cell wrote from the numbers it plots (``grpo_core.plotting.describe``).
``index_toggles``
    Gives the module index's collapse toggles an alt text that describes them.
``static``
    Rebuilds the pages when the site's own CSS or JS changes, and the
    source listings (viewcode) at every build.
``repository``
    Offers ``repository.url`` of ``_config.yml`` to the pages as
    ``{{ repository_url }}`` (the set-up page's ``git clone``).
``key_terms``
    Makes each key term of the chapter a main index entry of the section that
    defines it, so that search lists that section first.
``entry_page``
    Writes ``index.html``, which forwards to the landing page, with the
    site's icon (no request for ``/favicon.ico``).
"""

from companion_book import (
    api,
    bibliography,
    downloads,
    entry_page,
    execution,
    figure_alt,
    index_toggles,
    key_terms,
    links,
    repository,
    static,
)

MODULES = (
    api,
    bibliography,
    downloads,
    execution,
    links,
    static,
    repository,
    key_terms,
    entry_page,
    index_toggles,
    figure_alt,
)


def setup(app):
    for module in MODULES:
        module.setup(app)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
