"""Bibliography entries labelled author–year, like the citations in the text.

With ``bibtex_reference_style: author_year`` the text cites "Shao et al.
(2024)"; pybtex's styles would still number the list itself. The
``author_year`` style (``bibtex_default_style`` in _config.yml) keeps the
``plain`` entries, sorted by author, with labels such as "Shao et al., 2024".

docutils 0.21 writes each entry of the list (``role="list"``) with the ARIA
role ``doc-biblioentry``, which DPUB-ARIA 1.1 deprecates because a list's
children must be list items (w3c/dpub-aria#22; axe-core reports both,
dequelabs/axe-core#2759): the entries are written as list items.
"""

from __future__ import annotations

from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle


def _surname(person) -> str:
    return Text.from_latex(" ".join(person.prelast_names + person.last_names)).render_as("text")


class AuthorYearLabels(BaseLabelStyle):
    """Labels like the citations: "Williams, 1992", "Kool and van Hoof, 2019", "Shao et al., 2024"."""

    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            authors = entry.persons["author"]
            names = _surname(authors[0])
            if len(authors) == 2:
                names += f" and {_surname(authors[1])}"
            elif len(authors) > 2:
                names += " et al."
            yield f"{names}, {entry.fields['year']}"


class AuthorYearStyle(PlainStyle):
    """pybtex's ``plain`` entries (sorted by author), labelled author–year."""

    default_label_style = AuthorYearLabels


BIBLIOENTRY = 'role="doc-biblioentry"'


def entries_as_list_items(app, pagename, templatename, context, doctree) -> None:
    """The bibliography's entries are items of its list (see the module docstring)."""
    if BIBLIOENTRY in context.get("body", ""):
        context["body"] = context["body"].replace(BIBLIOENTRY, 'role="listitem"')


def setup(app) -> None:
    register_plugin("pybtex.style.formatting", "author_year", AuthorYearStyle)
    app.connect("html-page-context", entries_as_list_items)
