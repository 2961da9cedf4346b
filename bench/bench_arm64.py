"""Run the NumPy-only notebooks on arm64 code paths (qemu-user) under nbval, against the outputs stored on x86-64.

    .venv/bin/python bench/bench_arm64.py ROOT [NOTEBOOK ...]     (make test-arm64; ROOT from tests/arm64/make_root.sh)

pytest and nbval run here, natively; each notebook's kernel is Debian's arm64 Python 3.11 of ROOT started by
``qemu-aarch64 -L ROOT``, with the aarch64 wheels of NumPy (its NEON/ASIMD and SVE kernels, its OpenBLAS's
Neoverse kernels), matplotlib and pandas that tests/arm64/make_root.sh put in ROOT/opt/kernel, and grpo_core from
src/. A notebook is NumPy-only when its source imports neither torch nor TRL: PyPI's torch 2.13.0 for aarch64 is a
CUDA build that does not import without NVIDIA's libraries, one of which (nvidia-nccl-cu13==2.29.7) has no aarch64
wheel (README, "arm64"). Prints, per notebook, its cells, those that passed and those that differed, and the wall
time; exits 1 if any cell differed. qemu runs the kernels some 10 to 30 times slower than natively: about 15
minutes of one core for the seven notebooks.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBVAL = ["--nbval", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "--nbval-kernel-startup-timeout", "300"]
NEEDS_TORCH = re.compile(r"^\s*(import|from)\s+(torch|trl|transformers)\b", re.MULTILINE)


def numpy_only_notebooks() -> list[Path]:
    """The notebooks whose MyST source imports neither torch nor TRL nor transformers."""
    return [
        md.with_suffix(".ipynb")
        for md in sorted((ROOT / "notebooks").glob("*.md"))
        if not NEEDS_TORCH.search(md.read_text(encoding="utf-8"))
    ]


def arm64_kernel(folder: Path, arm64_root: Path) -> dict[str, str]:
    """Writes the kernel spec ``arm64`` under ``folder``; returns the environment in which Jupyter finds it."""
    spec = folder / "kernels" / "arm64"
    spec.mkdir(parents=True)
    python = str(arm64_root / "usr/bin/python3.11")
    kernel = {
        "argv": ["qemu-aarch64", "-L", str(arm64_root), python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3.11 (arm64, qemu-user)",
        "language": "python",
        "env": {"PYTHONPATH": f"{arm64_root / 'opt/kernel'}:{ROOT / 'src'}", "PYTHONDONTWRITEBYTECODE": "1"},
    }
    (spec / "kernel.json").write_text(json.dumps(kernel, indent=1))
    return {**os.environ, "JUPYTER_PATH": str(folder)}


def run_notebook(notebook: Path, env: dict[str, str], folder: Path) -> tuple[float, list[str], list[str]]:
    """nbval on ``notebook`` in the arm64 kernel: wall time, the cells that passed, the cells that differed."""
    report = folder / f"{notebook.stem}.xml"
    command = [sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", *NBVAL]
    command += ["--nbval-kernel-name", "arm64", f"--junitxml={report}", "tests/conftest.py", str(notebook)]
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    passed, differed = [], []
    for case in ET.parse(report).getroot().iter("testcase") if report.exists() else []:
        failed = case.find("failure") is not None or case.find("error") is not None
        (differed if failed else passed).append(case.get("name", "").removeprefix("Cell "))
    return wall, passed, differed or ([] if passed else ["(no cell ran)"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="the arm64 root of tests/arm64/make_root.sh")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every NumPy-only notebook")
    arguments = parser.parse_args()
    arm64_root = arguments.root.resolve()
    notebooks = [p.resolve() for p in arguments.notebooks] or numpy_only_notebooks()
    print(f"{'notebook':<40}{'cells':>6}{'pass':>6}{'wall s':>8}   cells that differ")
    failed = False
    with tempfile.TemporaryDirectory() as scratch:
        env = arm64_kernel(Path(scratch), arm64_root)
        for notebook in notebooks:
            wall, passed, differed = run_notebook(notebook, env, Path(scratch))
            failed |= bool(differed)
            cells = len(passed) + len(differed)
            shown = ", ".join(differed) or "none"
            print(f"{notebook.name:<40}{cells:>6}{len(passed):>6}{wall:>8.0f}   {shown}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
