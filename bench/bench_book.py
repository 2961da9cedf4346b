"""Time the book build: cold and with nothing changed, from the stored outputs or executing every notebook.

    .venv/bin/python bench/bench_book.py

Builds into temporary folders (the project's own _build is left alone) with
the flags of `make book`, in two execution modes:

* ``stored`` (the book's setting): each ``notebooks/NAME.ipynb`` enters
  myst-nb's jupyter-cache as the execution of its ``.md``
  (book/_ext/companion_book/execution.py); nothing executes unless a ``.md``
  changed since ``make notebooks``;
* ``force``: myst-nb executes every notebook, one after the other, on every
  build (what executing at build time costs).

Prints the wall time of each build and the run time of each notebook recorded
in its ``.ipynb`` (what the site's "How these pages were computed" page lists).
"""

from __future__ import annotations

import os
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


def build(output: Path, config: Path) -> float:
    """Wall time of one `jupyter-book build` into ``output``; exits if the build fails."""
    command = [str(JUPYTER_BOOK), "build", ".", "--path-output", str(output), "--config", str(config), *FLAGS]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return seconds


def force_config(folder: Path) -> Path:
    """_config.yml with ``execute_notebooks: force``."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf8"))
    config["execute"]["execute_notebooks"] = "force"
    # Jupyter Book finds local extensions relative to the config file.
    extensions = config["sphinx"]["local_extensions"]
    config["sphinx"]["local_extensions"] = {name: str(ROOT / path) for name, path in extensions.items()}
    path = folder / "_config.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf8")
    return path


def notebook_times(output: Path) -> dict[str, float]:
    """Run seconds of each notebook, from the jupyter-cache of a ``stored`` build."""
    cache = get_cache(output / "_build" / ".jupyter_cache")
    by_uri = {record.uri: record.data.get("execution_seconds") for record in cache.list_cache_records()}
    return {Path(uri).stem: seconds for uri, seconds in sorted(by_uri.items())}


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-book-") as tmp:
        tmp = Path(tmp)
        for mode, config in (("stored", ROOT / "_config.yml"), ("force", force_config(tmp))):
            output = tmp / mode
            rows.append((f"{mode}: cold build", build(output, config)))
            rows.append((f"{mode}: rebuild, nothing changed", build(output, config)))
        recorded = notebook_times(tmp / "stored")

    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"Book build times ({os.cpu_count()} CPUs, load average {load} at the end)\n")
    print(f"{'build':<36} {'seconds':>8}")
    for name, seconds in rows:
        print(f"{name:<36} {seconds:>8.1f}")
    print(f"\n{'notebook':<36} {'run time in its .ipynb (s)':>27}")
    for name, seconds in recorded.items():
        print(f"{name:<36} {seconds:>27.2f}")
    print(f"{'sum':<36} {sum(recorded.values()):>27.2f}")


if __name__ == "__main__":
    main()
