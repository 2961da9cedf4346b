"""Notebook 13's TRL run on CPU: wall and CPU time of its parts, and of the whole notebook.

Parts: importing ``grpo_core.sequence.trl_bridge`` (TRL, transformers, datasets; in a
fresh interpreter), the 6-step training run of the notebook, and one 2-step run
per flipped setting (the notebook runs 7, ``tests/unit/test_trl_bridge.py`` 12).
Whole: the notebook executed top to bottom by ``jupytext --execute``, kernel
start included, as ``make notebooks`` does. Wall time depends on the load of
the machine; CPU time (user + system, this process and its children) much less.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "13-from-companion-to-trl.md"


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(label, action, rows):
    wall, cpu = time.perf_counter(), cpu_seconds()
    result = action()
    rows.append((label, time.perf_counter() - wall, cpu_seconds() - cpu))
    return result


def main() -> None:
    rows: list[tuple[str, float, float]] = []
    python = [sys.executable, "-c", "import grpo_core.sequence.trl_bridge"]
    timed("import grpo_core.sequence.trl_bridge (fresh process)", lambda: subprocess.run(python, check=True), rows)

    warnings.filterwarnings("ignore")
    import torch

    from grpo_core.sequence import trl_bridge as bridge

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as workdir:
        model_dir = bridge.save_model_and_tokenizer(f"{workdir}/model")
        config = bridge.bridge_config(f"{workdir}/run")
        timed("6-step run (the notebook's)", lambda: bridge.run(config, model_dir, quiet=True), rows)
        flipped = bridge.bridge_config(f"{workdir}/run", max_steps=2, loss_type="grpo")
        timed("2-step run (one flipped setting)", lambda: bridge.run(flipped, model_dir, quiet=True), rows)
        jupytext = [str(Path(sys.executable).parent / "jupytext"), "--to", "ipynb", "--execute", str(NOTEBOOK)]
        out = Path(workdir) / "13.ipynb"
        command = [*jupytext, "--output", str(out)]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        timed("whole notebook 13 (jupytext --execute)", lambda: subprocess.run(command, check=True, env=env), rows)

    print(f"{'part':<44}{'wall s':>8}{'CPU s':>8}   (machine: {os.cpu_count()} cores)")
    for label, wall, cpu in rows:
        print(f"{label:<44}{wall:>8.1f}{cpu:>8.1f}")


if __name__ == "__main__":
    main()
