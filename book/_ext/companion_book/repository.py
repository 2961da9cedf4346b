"""The repository's address, set once: ``repository.url`` in ``_config.yml``.

Jupyter Book passes it to the theme (launch buttons, see ``downloads``);
this module also offers it to every page as the MyST substitution
``{{ repository_url }}``, so that the set-up page's ``git clone`` command
names the real address. In a code block, write it in a ``{parsed-literal}``
block (MyST does not substitute inside fenced code).
"""

from __future__ import annotations


def offer_repository_url(app, config) -> None:
    """Make ``{{ repository_url }}`` the configured repository address."""
    url = config.html_theme_options.get("repository_url", "")
    config.myst_substitutions = {**config.myst_substitutions, "repository_url": url}


def setup(app) -> None:
    app.connect("config-inited", offer_repository_url)
