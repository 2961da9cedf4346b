"""Time `make venv`'s torch step when PyTorch's CPU wheel index cannot be reached, and show what it resolves to.

    .venv/bin/python bench/bench_torch_install.py

Takes the step from the Makefile itself (``make -n venv``: on Linux x86-64, ``pip install torch==2.13.0+cpu
--index-url <PyTorch's CPU index> --timeout 10 --retries 0``) and runs it in a new virtual environment, without
pip's download cache, three ways:

* resolving it (``--dry-run --report``) from the wheel folder alone (``--no-index``): what the lookup costs anyway;
* resolving it as the Makefile says, where the index cannot be reached (no name resolution, as on the machines
  that reach only the package registries): pip must still find torch in the machine's own wheel folder (its
  find-links), as fast;
* resolving it with the index's address replaced by a server on 127.0.0.1 that accepts connections and never
  answers (an index that hangs rather than fails): the 10 s timeout, tried once, bounds the cost;
* installing it as the Makefile says, the index unreachable.

Prints the wall time and the requirement resolved (version, file) of each. Needs a wheel folder that holds
torch 2.13.0+cpu.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PIP_NO_CACHE_DIR": "1"}


def torch_step(venv: Path) -> list[str]:
    """The command of `make venv` that installs torch, for a virtual environment at ``venv``."""
    plan = subprocess.run(
        ["make", "-n", "-B", f"VENV={venv}", "venv"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    line = next(line for line in plan.splitlines() if re.search(r"pip install .*\btorch==", line))
    return shlex.split(line)


def timed(venv: Path, index: str, url: str | None, *extra: str) -> tuple[float, str]:
    """The torch step in a fresh ``venv``, with ``url`` for the CPU index ``index`` (None: no index, the wheel
    folder only), ``extra`` added: its wall time and the torch version it installed or would install."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    command = torch_step(venv)
    if url is None:
        command = [part for part in command if part not in ("--index-url", index)] + ["--no-index"]
    command = [url if part == index else part for part in command]
    report = venv / "report.json"
    start = time.perf_counter()
    done = subprocess.run([*command, *extra, "--report", str(report)], env=ENV, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        return wall, f"failed: {done.stderr.strip().splitlines()[-1]}"
    (item,) = json.loads(report.read_text())["install"]
    return wall, f"{item['metadata']['version']} from {item['download_info']['url']}"


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-torch-") as folder, socket.socket() as hanging:
        venv = Path(folder) / "venv"
        command = torch_step(venv)
        print("make venv's torch step:", shlex.join(command[command.index("install") + 1 :]))
        index = command[command.index("--index-url") + 1] if "--index-url" in command else None

        if index is None:
            print("this platform takes the ordinary wheel from the package index: no CPU index to bench")
            return
        hanging.bind(("127.0.0.1", 0))
        hanging.listen(16)  # the kernel completes the connections; nobody ever reads or answers
        hung = f"https://127.0.0.1:{hanging.getsockname()[1]}/whl/cpu"
        runs = [
            ("resolve, wheel folder only (--no-index)", None, "--dry-run"),
            ("resolve, CPU index unreachable (as here)", index, "--dry-run"),
            ("resolve, CPU index hangs (127.0.0.1)", hung, "--dry-run"),
            ("install, CPU index unreachable (as here)", index),
        ]
        for number, (label, url, *extra) in enumerate(runs):
            wall, resolved = timed(Path(folder) / f"venv{number}", index, url, *extra)
            print(f"{label:<42}{wall:>7.1f} s   torch {resolved}", flush=True)


if __name__ == "__main__":
    main()
