"""Time creating the virtual environment as `make venv` does (also with PyTorch's CPU index hanging), and the ways
it was chosen against.

    .venv/bin/python bench/bench_install.py

Each way installs torch, requirements.txt and requirements-practice.txt, then the project, into a new virtual
environment in a temporary folder (the project's own .venv is left alone), with the download caches of pip and uv
turned off, as on a fresh machine. torch is installed as the Makefile installs it (on Linux x86-64
``torch==2.13.0+cpu`` from PyTorch's CPU wheel index, ``--timeout 10 --retries 0``; pip also looks where its own
configuration says, a machine's wheel folder), read from ``make -n`` (bench/bench_torch_install.py times that one
step alone):

* ``make venv``: the commands of the Makefile's recipe (``make -n``), run one by one; whether the CPU index answers
  from here is printed first (where it does not, as on machines that reach only the package registries, this is
  the unreachable-index case);
* ``make venv``, the CPU index hanging: the same, with the index at a server on 127.0.0.1 that accepts connections
  and never answers (pip waits its 10 s once, then takes the wheel from its configured folders);
* ``pip``: torch, then one ``pip install -r`` of both files (what `make venv` did before uv);
* ``pip + uv``, every module compiled to bytecode up front (what `make venv` did before it left that to each
  module's first import).

Prints the wall time of each and the torch it installed; needs the package registry.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from bench_torch_install import torch_step

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ["-r", str(ROOT / "requirements.txt"), "-r", str(ROOT / "requirements-practice.txt")]
ENV = {**os.environ, "PIP_NO_CACHE_DIR": "1", "UV_NO_CACHE": "1"}


def torch_arguments(venv: Path) -> list[str]:
    """What `make venv` hands ``pip install`` for torch: the requirement, and on Linux x86-64 the CPU index and
    pip's limits."""
    command = torch_step(venv)
    return [
        part for part in command[command.index("install") + 1 :] if part not in ("--quiet", "--no-compile", "--no-deps")
    ]


def cpu_index(venv: Path) -> str | None:
    arguments = torch_arguments(venv)
    return arguments[arguments.index("--index-url") + 1] if "--index-url" in arguments else None


def answers(url: str, timeout: float = 5) -> bool:
    """Whether the host of ``url`` accepts a connection within ``timeout`` seconds."""
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port or 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def with_make(venv: Path, index: str | None = None) -> None:
    """The commands of `make venv` for ``venv``, with the CPU index's address replaced by ``index`` if given."""
    plan = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", f"VENV={venv}", "venv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    original = cpu_index(venv)
    for line in plan.splitlines():
        command = line.replace(original, index) if index and original else line
        subprocess.run(["bash", "-c", command], cwd=ROOT, check=True, env=ENV)


def with_pip(venv: Path) -> None:
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--no-deps", *torch_arguments(venv)], check=True, env=ENV)
    subprocess.run([*pip, *REQUIREMENTS], check=True, env=ENV)
    subprocess.run([*pip, "--no-deps", "--no-build-isolation", "-e", str(ROOT)], check=True, env=ENV)


def with_uv_compiled(venv: Path) -> None:
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--quiet", "--no-deps"]
    subprocess.run([*pip, *torch_arguments(venv)], check=True, env=ENV)
    uv_pin = next(line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("uv=="))
    subprocess.run([*pip, uv_pin], check=True, env=ENV)
    uv = [str(venv / "bin" / "uv"), "pip", "install", "--quiet", "--python", python]
    subprocess.run([*uv, "--compile-bytecode", *REQUIREMENTS], check=True, env=ENV)
    subprocess.run([*uv, "--no-deps", "--no-build-isolation", "-e", str(ROOT)], check=True, env=ENV)


def installed_torch(venv: Path) -> str:
    python = str(venv / "bin" / "python")
    return subprocess.run(
        [python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True, check=True
    ).stdout.strip()


def seconds(install, *, makes_venv: bool) -> tuple[float, str]:
    """The wall time of ``install`` into a new virtual environment (created first unless it ``makes_venv``), and the
    torch it installed."""
    with tempfile.TemporaryDirectory(prefix="bench-install-") as folder:
        venv = Path(folder) / "venv"
        started = time.perf_counter()
        if not makes_venv:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        install(venv)
        return time.perf_counter() - started, installed_torch(venv)


def main() -> None:
    with socket.socket() as hanging:
        hanging.bind(("127.0.0.1", 0))
        hanging.listen(16)  # the kernel completes the connections; nobody ever reads or answers
        hung = f"https://127.0.0.1:{hanging.getsockname()[1]}/whl/cpu"
        index = cpu_index(Path("VENV"))
        print("torch, as `make venv` installs it: pip install", " ".join(torch_arguments(Path("VENV"))))
        if index:
            print(f"PyTorch's CPU index ({index}) answers from here: {'yes' if answers(index) else 'no'}")
        print("\n| installer | wall time | torch installed |\n|---|---|---|")
        ways = {
            "make venv": with_make,
            **({"make venv, the CPU index hanging": lambda venv: with_make(venv, hung)} if index else {}),
            "pip": with_pip,
            "pip + uv, all bytecode compiled up front": with_uv_compiled,
        }
        for label, install in ways.items():
            wall, torch = seconds(install, makes_venv=label.startswith("make"))
            print(f"| {label} | {wall:.1f} s | {torch} |", flush=True)


if __name__ == "__main__":
    main()
