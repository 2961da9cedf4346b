"""The execution table's status column, written with characters every font has.

Notebooks execute in myst-nb's own ``cache`` mode (``execute:`` in _config.yml).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

# myst-nb's status marks, which many Linux systems have no font for, and what every text font draws.
EXECUTION_STATUS = {"✅": "✓ ran", "❌": "✗ failed"}


class PlainExecutionStatus(SphinxPostTransform):
    """Write the status column of ``{nb-exec-table}`` with characters every font has."""

    default_priority = 9  # after myst-nb fills in the table (8)

    def run(self, **kwargs) -> None:
        for cell in self.document.findall(nodes.entry):
            for text in list(cell.findall(nodes.Text)):
                if str(text) in EXECUTION_STATUS:
                    text.parent.replace(text, nodes.Text(EXECUTION_STATUS[str(text)]))


def setup(app) -> None:
    app.add_post_transform(PlainExecutionStatus)
