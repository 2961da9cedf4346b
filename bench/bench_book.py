"""Time the book build: cold and with nothing changed, executing notebooks or not.

    .venv/bin/python bench/bench_book.py

Builds into temporary folders (the project's own _build is left alone) with
the flags of `make book`, in two execution modes:

* ``cache`` (the book's setting): on the cold build myst-nb executes every
  notebook, one after the other, into a fresh jupyter-cache; a rebuild with
  nothing changed re-executes nothing;
* ``off``: the pages are built from the stored outputs of ``notebooks/*.ipynb``
  (the .ipynb is then the source and the .md is excluded), nothing executes.

Prints the wall time of each build and the execution time of each notebook
(from the jupyter-cache of the cold ``cache`` build).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parents[1]
JUPYTER_BOOK = Path(sys.executable).with_name("jupyter-book")
FLAGS = ("--warningiserror", "--nitpick", "--keep-going")


def build(output: Path, config: Path) -> tuple[float, str]:
    """Wall time and log of one `jupyter-book build` into ``output``; exits if the build fails."""
    command = [str(JUPYTER_BOOK), "build", ".", "--path-output", str(output), "--config", str(config), *FLAGS]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return seconds, result.stdout


def off_mode_config(folder: Path) -> Path:
    """_config.yml with execution off and the stored .ipynb as each notebook's source."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf8"))
    config["execute"]["execute_notebooks"] = "off"
    excluded = config["exclude_patterns"]
    excluded[excluded.index("notebooks/*.ipynb")] = "notebooks/*.md"
    # Jupyter Book finds local extensions relative to the config file.
    extensions = config["sphinx"]["local_extensions"]
    config["sphinx"]["local_extensions"] = {name: str(ROOT / path) for name, path in extensions.items()}
    path = folder / "_config.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf8")
    return path


def notebook_times(output: Path) -> dict[str, float]:
    """Execution seconds of each notebook, from the jupyter-cache of a build."""
    cache = get_cache(output / "_build" / ".jupyter_cache")
    by_uri = {record.uri: record.data.get("execution_seconds") for record in cache.list_cache_records()}
    return {Path(uri).stem: seconds for uri, seconds in sorted(by_uri.items())}


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-book-") as tmp:
        tmp = Path(tmp)
        for mode, config in (("cache", ROOT / "_config.yml"), ("off", off_mode_config(tmp))):
            output = tmp / mode
            seconds, log = build(output, config)
            rows.append((f"{mode}: cold build", seconds))
            if mode == "cache":
                parallel = re.search(r"executed (\d+) notebooks in ([\d.]+) s", log)
                rows.append((f"  of which executing {parallel[1]} notebooks", float(parallel[2])))
            rows.append((f"{mode}: rebuild, nothing changed", build(output, config)[0]))
        executed = notebook_times(tmp / "cache")

    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"Book build times ({os.cpu_count()} CPUs, load average {load} at the end)\n")
    print(f"{'build':<36} {'seconds':>8}")
    for name, seconds in rows:
        print(f"{name:<36} {seconds:>8.1f}")
    print(f"\n{'notebook (cold cache build)':<36} {'executed in (s)':>15}")
    for name, seconds in executed.items():
        print(f"{name:<36} {seconds:>15.2f}")
    print(f"{'sum':<36} {sum(executed.values()):>15.2f}")


if __name__ == "__main__":
    main()
