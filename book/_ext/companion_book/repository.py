"""The repository's address, set once: ``repository.url`` in ``_config.yml``.

Jupyter Book passes it to the theme (launch buttons, see ``downloads``);
this module also offers it to every page as the MyST substitution
``{{ repository_url }}``, so that the set-up page's ``git clone`` command
names the real address. In a code block, write it in a ``{parsed-literal}``
block (MyST does not substitute inside fenced code).

Until someone publishes the companion, the address is :data:`PLACEHOLDER`,
which names no repository a reader can clone. Every page that uses the
address puts ``{{ repository_note }}`` on a line of its own beside it: a
warning that says so while the address is the placeholder, nothing once it
is a real one. The launch buttons stay off meanwhile (``downloads``).
"""

from __future__ import annotations

#: The address the companion is written with until it is published: set ``repository.url`` to your own.
PLACEHOLDER = "https://github.com/grpo-companion/grpo-companion"


def is_placeholder(url: str) -> bool:
    """Whether ``url`` is no repository a reader can reach: empty, or still :data:`PLACEHOLDER`."""
    return url.rstrip("/") in ("", PLACEHOLDER)


def repository_note(url: str) -> str:
    """What a page says beside the address: a warning while it is the placeholder, else nothing."""
    if not is_placeholder(url):
        return ""
    return (
        ":::{warning}\n"
        f"The address {url or '(none)'} is a placeholder: this copy of the companion has not been published yet, so"
        " there is nothing to clone or open there. Use the address of the copy you were given (your course page"
        " names it), or the folder you already have; whoever publishes the companion sets `repository.url` in"
        " `_config.yml`.\n"
        ":::"
    )


def offer_repository_url(app, config) -> None:
    """Make ``{{ repository_url }}`` the configured repository address and ``{{ repository_note }}`` its warning."""
    url = config.html_theme_options.get("repository_url", "")
    config.myst_substitutions = {
        **config.myst_substitutions,
        "repository_url": url,
        "repository_note": repository_note(url),
    }


def setup(app) -> None:
    app.connect("config-inited", offer_repository_url)
