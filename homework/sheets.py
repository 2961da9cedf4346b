"""Grade sheets that lose nothing: merged by submission, rewritten atomically after every row.

A :class:`Sheet` is one CSV file. Opening it reads the rows already there; each
:meth:`Sheet.put` replaces the row of the same ``file`` (or adds one) and writes
the whole sheet to a temporary file in the same directory, then renames it over
the old one — a reader, a crash or Ctrl-C sees the sheet before or after the
row, never half of it. Text that a spreadsheet would run as a formula (a cell
starting with ``=``, ``+``, ``-``, ``@``) is stored with a leading apostrophe, and so
is text that starts with an apostrophe (``'=x`` becomes ``''=x``), so that no two
texts share a cell. A character that UTF-8 cannot encode (a lone surrogate) is
written as ``\\udXXX``.
"""

from __future__ import annotations

import csv
import os
import tempfile
import threading
from pathlib import Path

ESCAPED_START = ("=", "+", "-", "@", "\t", "\r", "'")  # formulas; and the escape itself, to stay one-to-one


def cell_text(value: object) -> str:
    """A value as a CSV cell that no spreadsheet evaluates."""
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return "'" + text if text.startswith(ESCAPED_START) else text


class Sheet:
    """A CSV file keyed by its ``file`` column; ``first`` rows (e.g. points possible) stay on top."""

    def __init__(self, path: Path, header: list[str], first: list[dict[str, str]] | None = None):
        self.path, self.header, self.first = path, header, first or []
        self.rows: dict[str, dict[str, str]] = {}
        self.lock = threading.Lock()
        firsts = {row["file"] for row in self.first}
        if path.is_file():
            with path.open(newline="", encoding="utf8") as handle:
                for row in csv.DictReader(handle):
                    if row.get("file") and row["file"] not in firsts:
                        self.rows[row["file"]] = row

    def put(self, row: dict[str, object]) -> None:
        """Add or replace the row of ``row["file"]`` and write the sheet."""
        cells = {key: cell_text(value) for key, value in row.items()}
        with self.lock:
            before = self.rows.get(cells["file"])
            self.rows[cells["file"]] = cells
            try:
                self._write()
            except BaseException:  # the sheet on disk is as it was: so is the one in memory
                if before is None:
                    del self.rows[cells["file"]]
                else:
                    self.rows[cells["file"]] = before
                raise

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".tmp.", dir=self.path.parent)  # 0600, as it stays
        try:
            with os.fdopen(handle, "w", newline="", encoding="utf8", errors="backslashreplace") as out:
                writer = csv.DictWriter(out, self.header, extrasaction="ignore", restval="")
                writer.writeheader()
                writer.writerows(self.first)
                writer.writerows(self.rows[key] for key in sorted(self.rows))
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
