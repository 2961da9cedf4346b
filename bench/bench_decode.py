"""What the trusted side pays to read one reply of a submission (``runner.loads`` and ``runner.decode``).

    .venv/bin/python bench/bench_decode.py

Each reply, of the most bytes the checker reads (``jail.MAX_REPLY``), is read in a fresh process that reports the
CPU seconds of reading it and how much its peak resident memory grew: the replies that cost the reader most per
byte (the most lists and objects it accepts, sets of the most items that share one hash, the shortest floats and
strings) and one long string. A reply the checker refuses is refused before it costs more than its parse.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HOMEWORK = Path(__file__).resolve().parents[1] / "homework"
MEASURE = """\
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import jail, runner
line = (json.dumps({"values": {"x": eval(sys.argv[2])}}) + "\\n").encode()
assert len(line) <= jail.MAX_REPLY, len(line)
before, started = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.process_time()
try:
    runner.decode(runner.loads(line)["values"]["x"])
    outcome = "read"
except ValueError as error:
    outcome = f"refused ({error})"
seconds = time.process_time() - started
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps([len(line) / 2**20, seconds, grown, outcome]))
"""
# 9 pairs of ints whose tuples share one hash (found as tests/homework/test_grading_limits.py's COLLIDING_PAIRS finds
# them).
PAIRS = [(17, 1145218961733567401), (20, 455069486320687213), (23, 80198531058199674), (24, 2133464737256092579),
         (27, 1443315261843212391), (30, 1068444306580724852), (58, 589858043124784403), (61, 214987087862296864),
         (62, 2268253294060189769)]  # fmt: skip
EIGHT = repr([{"tuple": list(pair)} for pair in PAIRS[:8]])
NINE = repr([{"tuple": list(pair)} for pair in PAIRS])
REPLIES = {
    "lists of empty lists (the most lists it accepts)": "{'list': [{'list': []}] * 524_000}",
    "sets of 8 pairs that share one hash": f"{{'list': [{{'set': {EIGHT}}}] * 50_000}}",
    "one-digit floats": "{'list': [0.5] * 3_300_000}",
    "one-letter strings (interned)": "{'list': ['a'] * 3_300_000}",
    "two-letter strings": "{'list': [f'{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}' for i in range(2_700_000)]}",
    "one string": "'x' * (16 * 2**20 - 40)",
    "a set of 9 pairs that share one hash (refused)": f"{{'set': {NINE}}}",
}


def main() -> None:
    print("| reply | MiB | CPU s | peak memory grew (MiB) | outcome |")
    print("|---|---|---|---|---|")
    for name, value in REPLIES.items():
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, str(HOMEWORK), value], capture_output=True, text=True, check=True
        )
        size, seconds, grown, outcome = json.loads(done.stdout)
        print(f"| {name} | {size:.1f} | {seconds:.2f} | {grown:.0f} | {outcome} |")


if __name__ == "__main__":
    main()
