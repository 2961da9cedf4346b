"""book/_ext/companion_book/key_terms.py on a one-page Sphinx project: a key term becomes a main index entry of
the section whose heading names it, and a heading that no section has is a warning (an error under ``-W``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from sphinx.application import Sphinx

EXTENSIONS = Path(__file__).resolve().parent.parent / "book" / "_ext"

PAGE = """# A page

Some words.

## Property 4.1: a group with nothing to say

Zero variance, no signal.
"""


def build(tmp_path: Path, key_terms: list[dict]) -> tuple[dict, str]:
    """Build the page to HTML with the key terms; return the search index's index entries and the warnings."""
    (tmp_path / "index.md").write_text(PAGE, encoding="utf8")
    (tmp_path / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXTENSIONS)!r})\n"
        f"extensions = ['myst_parser', 'companion_book.key_terms']\n"
        f"myst_heading_anchors = 3\n"
        f"companion_key_terms = {key_terms!r}\n",
        encoding="utf8",
    )
    warnings = io.StringIO()
    app = Sphinx(tmp_path, tmp_path, tmp_path / "_build", tmp_path / "_doctrees", "html", status=None, warning=warnings)
    app.build()
    index = (tmp_path / "_build" / "searchindex.js").read_text(encoding="utf8")
    return json.loads(index[index.index("(") + 1 : index.rindex(")")])["indexentries"], warnings.getvalue()


def test_a_key_term_is_a_main_entry_of_its_section(tmp_path):
    entries, warnings = build(tmp_path, [{"page": "index", "section": "Property 4.1", "terms": ["zero variance"]}])
    assert warnings == ""
    assert entries == {"zero variance": [[0, "property-4-1-a-group-with-nothing-to-say", True]]}


def test_a_heading_no_section_has_is_a_warning(tmp_path):
    entries, warnings = build(tmp_path, [{"page": "index", "section": "Property 9.9", "terms": ["zero variance"]}])
    assert "no section of index has 'Property 9.9' in its heading" in warnings
    assert entries == {}
