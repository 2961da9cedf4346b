"""Seconds and bytes spent recording a class, without jails: linear in the class, whatever an answer holds.

    .venv/bin/python bench/bench_grading_records.py [N]

Records N rows (default 200) of a toy assignment through ``records.Records`` as ``grade.py`` does, the first
submission carrying 4,900 cells tagged as written answers (issue #37's flood), the others one answer each; then
closes the run (each sheet, ``manual-NAME.md`` and the class report written once). Prints the seconds of the rows,
of the close, and the bytes on disk, for N and 2N rows: both grow linearly. A row's time is nearly all the fsync of
its journal line, which depends on the machine's load, not on the class. On this project's machine at load average
17: 7.6 and 15.9 ms a row (200 and 400 rows; fsync 11 ms a call in a profile), 0.25 and 0.66 s to close, 0.15 and
0.29 MiB. Before (issue #37: the sheet and ``manual-NAME.md`` rewritten after every row, the flood giving every
classmate 4,900 entries): 100 rows took 444 s, 4.4 s a row, and left a 16.4 MiB manual.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "homework"))

from records import Records, Row

CASES = [{"code": "assert a", "hidden": False}, {"code": "# HIDDEN\nassert b", "hidden": True}]
KEY = {"questions": [{"name": "q1", "points": 1, "cases": CASES}]}


def run(rows: int) -> tuple[float, float, int]:
    """``(seconds for the rows, seconds for the close, bytes in the output folder)``."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out"
        records = Records(out, {"hw0-toy": KEY})
        start = time.perf_counter()
        for number in range(rows):
            row = Row(file=f"s{number:04}.ipynb", assignment="hw0-toy", scores={"q1": 1.0})
            answers = [f"cell {n}" for n in range(4900)] if number == 0 else [f"answer {number}"]
            feedback = [{"question": "q1", "case": 1, "hidden": False, "passed": True}]
            feedback.append({"question": "q1", "case": 2, "hidden": True, "passed": number % 2 == 0})
            records.record(row, feedback, answers)
        recorded = time.perf_counter()
        records.close()
        closed = time.perf_counter()
        size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
        return recorded - start, closed - recorded, size


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for rows in (n, 2 * n):
        recording, closing, size = run(rows)
        print(f"{rows} rows: {recording:.2f} s recording ({1000 * recording / rows:.1f} ms a row), {closing:.2f} s "
              f"closing, {size / 2**20:.2f} MiB written")  # fmt: skip
