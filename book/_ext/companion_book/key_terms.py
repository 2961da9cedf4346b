"""The chapter's key terms lead search to the section that defines them.

``companion_key_terms`` in ``_config.yml`` names, for each key term, the
page and the section (a piece of its heading) where the term is defined.
Each becomes a main index entry of that section: the general index lists it,
and Sphinx's search ranks a query that matches an index entry (a score of up
to 100) above every page that merely contains the words (15 at most per
word), so a search for "zero variance" opens with the section of
Property 4.1. A term whose section is not found fails the build (a renamed
heading must not silently drop it).

The pages that carry key terms are read again on every build: Sphinx 7.4
rebuilds the search index of an incremental build from the previous
``searchindex.js`` without its index entries (``IndexBuilder.load`` restores
titles and words only), so the entries of a page that is not read again
would drop out of search.
"""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)


class KeyTermEntries(SphinxTransform):
    """Add the configured key terms as main index entries of their sections."""

    default_priority = 840  # before the domains collect index entries (850)

    def apply(self, **kwargs) -> None:
        for entry in self.config.companion_key_terms:
            if entry["page"] != self.env.docname:
                continue
            section = self._section(entry["section"])
            if section is None:
                LOGGER.warning(
                    "key terms %s: no section of %s has %r in its heading",
                    entry["terms"],
                    entry["page"],
                    entry["section"],
                    location=self.document,
                )
                continue
            anchor = section["ids"][0]
            terms = [("single", term, anchor, "main", None) for term in entry["terms"]]
            section.insert(1, addnodes.index(entries=terms))  # right after the heading

    def _section(self, heading: str) -> nodes.section | None:
        for section in self.document.findall(nodes.section):
            if heading in section[0].astext():
                return section
        return None


def reread_pages_with_key_terms(app, env, added, changed, removed) -> list[str]:
    """The pages with key terms, so that their index entries are fed to the search index again."""
    pages = {entry["page"] for entry in app.config.companion_key_terms}
    return sorted(pages & env.found_docs - added - changed)


def setup(app) -> None:
    app.add_config_value("companion_key_terms", [], "env", types=[list])
    app.add_transform(KeyTermEntries)
    app.connect("env-get-outdated", reread_pages_with_key_terms)
