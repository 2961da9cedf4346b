"""The jail a submission runs in: bubblewrap, resource limits, and a data-only conversation.

:class:`Jail` starts ``runner.py`` under ``bwrap`` (Debian's ``bubblewrap``) with

* every namespace new (no network: ``--unshare-net``; its own PIDs, IPC, UTS), ``--new-session``
  and ``--die-with-parent``: when the jail's first process is killed, the kernel kills every
  process in its PID namespace, and its mounts vanish with it;
* a read-only view of the Python installation (``/usr`` and the environment's prefixes) and of
  ``runner.py``, nothing else of the machine: a private, size-capped tmpfs as ``/tmp``, as
  ``/dev/shm`` and as the working directory ``/work``;
* limits set with ``prlimit`` before it starts: processes (``RLIMIT_NPROC``), address space per
  process, CPU seconds, file size, open files; and, from outside, a watchdog that kills the jail
  when its processes together hold more than :data:`MEMORY` bytes (resident memory plus the memfd
  files they hold open or mapped) or it outlives its wall time.

Run by an ordinary user, ``bwrap`` makes a user namespace (no privilege needed). Run as root,
``bwrap`` keeps only ``CAP_SETUID``/``CAP_SETGID`` for ``setpriv``, which makes the jail's
process uid ``65000 + slot`` with no capabilities and ``no_new_privs`` before Python starts (a
process of root would not be held by ``RLIMIT_NPROC``).

The conversation is JSON lines: requests on the jail's stdin, replies on a pipe of their own, each reply at
most :data:`MAX_REPLY` bytes; its stdout and stderr go to ``/dev/null``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HOMEWORK = Path(__file__).resolve().parent
MEMORY = 2 * 2**30  # bytes, every process of a jail together
PROCESSES = 256
FILE_SIZE = 64 * 2**20
TMPFS = 256 * 2**20
MAX_REPLY = 32 * 2**20
UID_BASE = 65000  # 64000 + slot was the old sandbox's: a machine may still run it
WORKDIR = "/submission"
# bwrap's own environment (its --clearenv clears only the child's): run unprivileged, bwrap is the jail's PID 1, and
# a student reads its /proc/1/environ. So it gets no variable of the grader's.
ENVIRONMENT = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


class JailError(RuntimeError):
    """The jail broke a limit, died, or answered with something that is not an answer."""


def python_paths(python: str) -> list[str]:
    """The folders a Python environment needs, read-only: its prefix and its base installation's."""
    code = "import sys; print(sys.prefix); print(sys.base_prefix)"
    done = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, check=True)
    paths = {os.path.realpath(line) for line in done.stdout.split()}
    paths |= {os.path.dirname(os.path.realpath(python))}
    return sorted(path for path in paths if not path.startswith("/usr/"))


def command(python: str, paths: list[str], slot: int, cpu_seconds: int) -> list[str]:
    """The argv that starts ``runner.py`` in a jail (see the module docstring)."""
    limits = [
        f"--nproc={PROCESSES}",
        f"--as={MEMORY}",
        f"--cpu={cpu_seconds}",
        f"--fsize={FILE_SIZE}",
        "--nofile=256",
        "--core=0",
    ]
    jail = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    jail += ["--die-with-parent", "--new-session", "--clearenv", "--setenv", "HOME", WORKDIR]
    for variable, value in (("OMP_NUM_THREADS", "1"), ("OPENBLAS_NUM_THREADS", "1"), ("MPLBACKEND", "agg")):
        jail += ["--setenv", variable, value]
    jail += ["--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64"]
    jail += ["--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev"]
    for where in ("/tmp", "/dev/shm", WORKDIR):
        jail += ["--size", str(TMPFS), "--perms", "1777", "--tmpfs", where]
    for folder in sorted({str(parent) for path in paths for parent in Path(path).parents} - {"/"}):
        jail += ["--perms", "0755", "--dir", folder]  # bwrap would make them 0700: root's alone
    for path in paths:
        jail += ["--ro-bind", path, path]
    jail += ["--perms", "0755", "--dir", "/grader", "--ro-bind", str(HOMEWORK / "runner.py"), "/grader/runner.py"]
    jail += ["--chdir", WORKDIR]
    if os.geteuid() == 0:
        uid = str(UID_BASE + slot)
        jail += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--", "setpriv", f"--reuid={uid}"]
        jail += [f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    else:
        jail += ["--unshare-user", "--disable-userns", "--"]
    return ["prlimit", *limits, "--", *jail, python, "-I", "/grader/runner.py"]


class Jail:
    """One submission's jailed runner: :meth:`ask` sends a request and returns the decoded-JSON reply."""

    def __init__(self, argv: list[str], wall_seconds: float):
        self.deadline = time.monotonic() + wall_seconds
        self.broken = ""
        read, write = os.pipe()
        try:
            self.process = subprocess.Popen(
                [*argv, str(write)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(write,), start_new_session=True, env=ENVIRONMENT,
            )  # fmt: skip
        finally:
            os.close(write)
        self.replies = os.fdopen(read, "rb")
        self.watchdog = threading.Thread(target=self._watch, daemon=True)
        self.watchdog.start()

    def _watch(self) -> None:
        while self.process.poll() is None:
            if time.monotonic() > self.deadline:
                self.kill("ran longer than its time limit")
            elif (used := memory_of(self.process.pid)) > MEMORY:
                self.kill(f"its processes used {used / 2**30:.1f} GiB, over the {MEMORY / 2**30:g} GiB limit")
            time.sleep(0.1)

    def kill(self, reason: str) -> None:
        self.broken = self.broken or reason
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # bwrap: its PID namespace dies with it

    def ask(self, request: dict) -> dict:
        line = (json.dumps(request) + "\n").encode()
        try:
            self.process.stdin.write(line)
            self.process.stdin.flush()
        except OSError:
            pass  # a dead jail: the reply below says why
        reply = self._read_line()
        try:
            answer = json.loads(reply)
        except (ValueError, RecursionError):
            raise JailError(self.broken or "the notebook's process sent something that is not JSON") from None
        if not isinstance(answer, dict):
            raise JailError("the notebook's process sent something that is not an answer")
        return answer

    def _read_line(self) -> bytes:
        chunks, size = [], 0
        while True:
            wait = self.deadline - time.monotonic()
            if wait <= 0 or not select.select([self.replies], [], [], wait)[0]:
                self.kill("ran longer than its time limit")
                raise JailError(self.broken)
            chunk = self.replies.readline(MAX_REPLY + 1 - size)
            if not chunk:
                self.process.wait()
                # No exit status: the student's code chooses it, so it could carry a hidden test's input back.
                raise JailError(self.broken or "the notebook's process ended before it answered")
            chunks.append(chunk)
            size += len(chunk)
            if chunk.endswith(b"\n"):
                return b"".join(chunks)
            if size > MAX_REPLY:
                self.kill(f"an answer was longer than {MAX_REPLY // 2**20} MiB")
                raise JailError(self.broken)

    def close(self) -> None:
        """Kill the jail and wait until every process it held is gone (the kernel ends them after bwrap)."""
        held = processes_below(self.process.pid)
        self.kill("")
        self.process.wait()
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{pid}").exists() for pid in held) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.replies.close()
        self.process.stdin.close()


def processes_below(root: int) -> dict[int, int]:
    """``{pid: resident bytes}`` of ``root`` and every process below it (read from ``/proc``)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(stat[1]), []).append(int(entry.name))
        rss[int(entry.name)] = int(stat[21]) * os.sysconf("SC_PAGE_SIZE")
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        found[pid] = rss.get(pid, 0)
        todo += children.get(pid, [])
    return found


def memory_of(root: int) -> int:
    """Bytes held by ``root`` and the processes below it: their resident memory and every memfd file (RAM that
    is neither resident nor address space until mapped) that one of them holds open or mapped, each file once."""
    below = processes_below(root)
    files: dict[tuple[int, int], int] = {}
    for pid in below:
        for path in _memfd_paths(pid):
            with contextlib.suppress(OSError):
                info = os.stat(path)
                files[info.st_dev, info.st_ino] = info.st_blocks * 512
    return sum(below.values()) + sum(files.values())


def _memfd_paths(pid: int) -> list[str]:
    """``/proc`` paths that ``stat`` to each memfd file ``pid`` holds: its descriptors' and its mappings'."""
    paths = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(entry.path).startswith("/memfd:"):
                    paths.append(entry.path)
    with contextlib.suppress(OSError), open(f"/proc/{pid}/maps") as maps:
        paths += [f"/proc/{pid}/map_files/{line.split()[0]}" for line in maps if " /memfd:" in line]
    return paths


if __name__ == "__main__":  # a quick look: python jail.py PYTHON CODE  (prints what CODE prints in a jail)
    argv = command(sys.argv[1], python_paths(sys.argv[1]), 0, 60)
    subprocess.run([*argv[:-1], "-c", sys.argv[2]], check=False, env=ENVIRONMENT)
