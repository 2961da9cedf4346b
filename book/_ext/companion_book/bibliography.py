"""Bibliography entries labelled author–year, like the citations in the text.

With ``bibtex_reference_style: author_year`` the text cites "Shao et al.
(2024)"; pybtex's styles would still number the list itself. The
``author_year`` style (``bibtex_default_style`` in _config.yml) keeps the
``plain`` entries, sorted by author, with labels such as "Shao et al., 2024".
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


def setup(app) -> None:
    register_plugin("pybtex.style.formatting", "author_year", AuthorYearStyle)
