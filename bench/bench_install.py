"""Time creating the virtual environment: pip alone against `make venv`'s pip (torch, uv) then uv.

    .venv/bin/python bench/bench_install.py

Each way installs requirements.txt and requirements-practice.txt, then the
project, into a new virtual environment in a temporary folder (the project's
own .venv is left alone), with the download caches of pip and uv turned off, as
on a fresh machine:

* ``pip``: one ``pip install -r`` of both files (what `make venv` did before);
* ``pip + uv``: pip installs the pinned torch and uv (pip's configuration is
  what finds a machine's CPU wheel of torch), then uv installs the rest; either
  compiling every module to bytecode up front (what `make venv` did), or leaving
  that to each module's first import (what `make venv` does).

Prints the wall time of each; both need the package registry.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ["-r", str(ROOT / "requirements.txt"), "-r", str(ROOT / "requirements-practice.txt")]
ENV = {**os.environ, "PIP_NO_CACHE_DIR": "1", "UV_NO_CACHE": "1"}


def pinned(name: str) -> str:
    """The line of requirements.txt that pins ``name``."""
    text = (ROOT / "requirements.txt").read_text(encoding="utf8")
    return re.search(rf"^{re.escape(name)}==\S+$", text, re.MULTILINE).group()


def with_pip(venv: Path) -> None:
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, *REQUIREMENTS], check=True, env=ENV)
    subprocess.run([*pip, "--no-deps", "--no-build-isolation", "-e", str(ROOT)], check=True, env=ENV)


def with_uv(venv: Path, *, compiled: bool = False) -> None:
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--quiet", "--no-deps", *([] if compiled else ["--no-compile"])]
    subprocess.run([*pip, pinned("torch"), pinned("uv")], check=True, env=ENV)
    uv = [str(venv / "bin" / "uv"), "pip", "install", "--quiet", "--python", python]
    subprocess.run([*uv, *(["--compile-bytecode"] if compiled else []), *REQUIREMENTS], check=True, env=ENV)
    subprocess.run([*uv, "--no-deps", "--no-build-isolation", "-e", str(ROOT)], check=True, env=ENV)


def seconds(install) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-install-") as folder:
        venv = Path(folder) / "venv"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        install(venv)
        return time.perf_counter() - started


def main() -> None:
    print("| installer | wall time |\n|---|---|")
    ways = {
        "pip": with_pip,
        "pip + uv, all bytecode compiled up front": lambda venv: with_uv(venv, compiled=True),
        "pip + uv, bytecode at first import (make venv)": with_uv,
    }
    for label, install in ways.items():
        print(f"| {label} | {seconds(install):.1f} s |", flush=True)


if __name__ == "__main__":
    main()
