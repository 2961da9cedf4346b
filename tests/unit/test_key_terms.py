"""book/_ext/companion_book/key_terms.py on a two-page Sphinx project: a key term becomes a main index entry of
the section whose heading names it, it stays in search when another page changes, and a heading that no section
has is a warning (an error under ``-W``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util.docutils import docutils_namespace

EXTENSIONS = Path(__file__).resolve().parents[2] / "book" / "_ext"

PAGE = """---
orphan: true
---

# A page

Some words.

## Property 4.1: a group with nothing to say

Zero variance, no signal.
"""


def build(tmp_path: Path, key_terms: list[dict], root: str = "# The root page\n") -> tuple[dict, str]:
    """Build the page ``terms`` and the root page to HTML with the key terms; return the search index's index
    entries and the warnings. A second call is an incremental build."""
    for name, text in {"terms.md": PAGE, "index.md": root}.items():
        path = tmp_path / name
        if not path.exists() or path.read_text(encoding="utf8") != text:  # an unchanged page is not read again
            path.write_text(text, encoding="utf8")
    (tmp_path / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXTENSIONS)!r})\n"
        f"extensions = ['myst_parser', 'companion_book.key_terms']\n"
        f"myst_heading_anchors = 3\n"
        f"exclude_patterns = ['_build', '_doctrees']\n"
        f"companion_key_terms = {key_terms!r}\n",
        encoding="utf8",
    )
    warnings = io.StringIO()
    with docutils_namespace():  # each build registers its nodes afresh, as sphinx-build does
        app = Sphinx(
            tmp_path, tmp_path, tmp_path / "_build", tmp_path / "_doctrees", "html", status=None, warning=warnings
        )
        app.build()
    index = (tmp_path / "_build" / "searchindex.js").read_text(encoding="utf8")
    return json.loads(index[index.index("(") + 1 : index.rindex(")")])["indexentries"], warnings.getvalue()


def test_a_key_term_is_a_main_entry_of_its_section(tmp_path):
    entries, warnings = build(tmp_path, [{"page": "terms", "section": "Property 4.1", "terms": ["zero variance"]}])
    assert warnings == ""
    assert entries == {"zero variance": [[1, "property-4-1-a-group-with-nothing-to-say", True]]}


def test_a_heading_no_section_has_is_a_warning(tmp_path):
    entries, warnings = build(tmp_path, [{"page": "terms", "section": "Property 9.9", "terms": ["zero variance"]}])
    assert "no section of terms has 'Property 9.9' in its heading" in warnings
    assert entries == {}


def test_the_entries_survive_an_incremental_build(tmp_path):
    """Only the root page changes: Sphinx alone would drop the unchanged page's entries from search."""
    key_terms = [{"page": "terms", "section": "Property 4.1", "terms": ["zero variance"]}]
    build(tmp_path, key_terms)
    entries, warnings = build(tmp_path, key_terms, root="# The root page\n\nEdited.\n")
    assert warnings == ""
    assert entries == {"zero variance": [[1, "property-4-1-a-group-with-nothing-to-say", True]]}
