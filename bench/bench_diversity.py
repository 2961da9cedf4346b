"""Run the notebooks under every CPU setting of ``tests/conftest.py`` and require the same stored outputs under each.

    .venv/bin/python bench/bench_diversity.py [--setting NAME ...] [NOTEBOOK ...]     (make test-diversity)

A printed number whose digits go beyond what its claim needs (README, "What nbval checks"; ``grpo_core.report``)
holds on one CPU and fails on the next. One CPU cannot stand in for every other, but it can change the code paths
and reduction orders that move last digits: ``CPU_SETTINGS`` runs the notebooks' kernels natively, on the emulated
x86-64-v2 CPU, with MKL's reproducibility mode (``MKL_CBWR=COMPATIBLE``), with MKL held to AVX2, and with one and
two OpenMP/MKL/OpenBLAS threads. For each setting, nbval runs every notebook (two at a time) against the outputs
``make notebooks`` stored; the table gives its wall time and the cells that differed. Exits 1 if any cell differed.

All notebooks under all six settings take both cores for about 20 minutes: run it once, on an idle machine.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from conftest import CPU_SETTINGS  # noqa: E402

NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg"]


def run_setting(setting: str, notebooks: list[str]) -> tuple[float, int, list[str]]:
    """nbval on ``notebooks`` under ``setting``: its wall time, the number of cells, the cells that differed."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "junit.xml"
        # --dist loadfile: each notebook whole to one worker (its cells share one kernel; split, they fail)
        command = [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadfile", "-q", "-p", "no:cacheprovider"]
        command += NBVAL
        command += ["--cpu-env", setting, f"--junitxml={report}", "tests/conftest.py", *notebooks]
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, check=False)
        wall = time.perf_counter() - start
        cases = ET.parse(report).getroot().iter("testcase") if report.exists() else []
        cells, differed = 0, []
        for case in cases:
            cells += 1
            if case.find("failure") is not None or case.find("error") is not None:
                differed.append(f"{case.get('classname', '').removeprefix('notebooks.')}::{case.get('name')}")
    if cells == 0:
        differed.append("(pytest collected no cell)")
    return wall, cells, differed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--setting", action="append", choices=CPU_SETTINGS, help="default: every setting")
    parser.add_argument("notebooks", nargs="*", help="default: notebooks/*.ipynb")
    arguments = parser.parse_args()
    notebooks = arguments.notebooks or sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("*.ipynb"))
    print(f"{'setting':<16}{'wall s':>8}{'cells':>7}   cells that differ from the stored outputs")
    failed = False
    for setting in arguments.setting or CPU_SETTINGS:
        wall, cells, differed = run_setting(setting, notebooks)
        failed |= bool(differed)
        print(f"{setting:<16}{wall:>8.0f}{cells:>7}   {', '.join(differed) or 'none'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
