"""The jail a submission runs in: bubblewrap, resource limits, and a data-only conversation.

:class:`Jail` starts ``runner.py`` under ``bwrap`` (Debian's ``bubblewrap``) with

* every namespace new (no network: ``--unshare-net``; its own PIDs, IPC, UTS), ``--new-session``
  and ``--die-with-parent``: when the jail's first process is killed, the kernel kills every
  process in its PID namespace, and its mounts vanish with it;
* a read-only view of the Python installation (``/usr`` and the environment's prefixes) and of
  ``runner.py``, nothing else of the machine: a private, size-capped tmpfs as ``/tmp``, as
  ``/dev/shm`` and as the working directory (:data:`WRITABLE`); the rest of the jail's tree,
  ``/dev`` included (null, zero, full, random and urandom; no terminals), is read-only;
* a seccomp filter (:func:`seccomp_filter`) that refuses, with ``EPERM``, every call that makes
  memory outside a process and outside those three file systems: System V shared memory, message
  queues and semaphores, POSIX message queues, memfd files, shared anonymous or ``/dev/zero``
  mappings, sockets, pipes and FIFOs, epoll, inotify, fanotify, io_uring and BPF;
* limits set with ``prlimit`` before it starts: processes (``RLIMIT_NPROC``), address space per
  process, CPU seconds, file size, open files, POSIX message queue bytes (none); and, from outside,
  a watchdog that kills the jail when it holds more than :data:`MEMORY` bytes (its processes'
  private and file-backed resident memory, page tables and swap, plus what its three file systems
  hold: :func:`memory_of`) or it outlives its wall time.

Run by an ordinary user, ``bwrap`` makes a user namespace (no privilege needed). Run as root,
``bwrap`` keeps only ``CAP_SETUID``/``CAP_SETGID`` for ``setpriv``, which makes the jail's
process a uid of its own (:func:`lease_uid`: no two jails on the machine share one, whichever run
started them) with no capabilities and ``no_new_privs`` before Python starts (a process of root
would not be held by ``RLIMIT_NPROC``).

The conversation is JSON lines: requests on the jail's stdin, replies on a pipe of their own, each reply at
most :data:`MAX_REPLY` bytes, read by ``runner.loads``. The runner's first line says it started, before any of the
submission's code runs: a jail that ends before it is the grader's failure (:class:`JailStartError`, with what
bwrap, setpriv or Python wrote on stderr), never the submission's. After it, stdout and stderr go to ``/dev/null``.
A call may be given a limit of its own (:meth:`Jail.ask`): when it strikes, the jail is killed and :class:`Hung`
raised, and :meth:`Jail.restart` starts it again within the same wall time. Every message names the limit that
struck, never a figure the submission's code chose.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from runner import loads

HOMEWORK = Path(__file__).resolve().parent
MEMORY = 2 * 2**30  # bytes: a jail's processes and files together (memory_of)
PROCESSES = 256
FILE_SIZE = 64 * 2**20
TMPFS = 256 * 2**20
DEVICES = ("null", "zero", "full", "random", "urandom")
MAX_REPLY = 16 * 2**20  # the largest reply of the ten reference solutions is 3.9 MB
# 64000 + slot was the old sandbox's (a machine may still run it); the range stops below 65534, nobody, whom
# other programs run as (and an unprivileged jail: no uid of its own).
UID_BASE, UIDS = 65000, 534
UID_LOCKS = Path("/run/grpo-homework-jails")  # root's: a lock file per uid in use (lease_uid)
STDERR_CHARS = 1000  # of what a jail that failed to start wrote
WORKDIR = "/submission"
WRITABLE = ("/tmp", "/dev/shm", WORKDIR)  # the jail's only writable places: one tmpfs of TMPFS bytes each
# bwrap's own environment (its --clearenv clears only the child's): run unprivileged, bwrap is the jail's PID 1, and
# a student reads its /proc/1/environ. So it gets no variable of the grader's.
ENVIRONMENT = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


# The seccomp filter: classic BPF over ``struct seccomp_data`` (nr at byte 0, arch at 4, args from 16, 8 bytes each).
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}  # linux/audit.h; any other (i386, x32) is killed
X32_SYSCALL_BIT = 0x40000000
# Calls that make memory no process maps and no jail file system holds (so the watchdog could not count it),
# by number (asm/unistd_64.h, asm-generic/unistd.h). None is needed to run a notebook's Python.
DENIED = {
    "x86_64": {
        "shmget": 29, "semget": 64, "msgget": 68, "mq_open": 240, "memfd_create": 319, "memfd_secret": 447,
        "socket": 41, "socketpair": 53, "pipe": 22, "pipe2": 293, "mknod": 133, "mknodat": 259,
        "epoll_create": 213, "epoll_create1": 291, "inotify_init": 253, "inotify_init1": 294,
        "fanotify_init": 300, "io_uring_setup": 425, "bpf": 321,
    },
    "aarch64": {
        "shmget": 194, "semget": 190, "msgget": 186, "mq_open": 180, "memfd_create": 279, "memfd_secret": 447,
        "socket": 198, "socketpair": 199, "pipe2": 59, "mknodat": 33,
        "epoll_create1": 20, "inotify_init1": 26, "fanotify_init": 262, "io_uring_setup": 425, "bpf": 280,
    },
}  # fmt: skip
MMAP = {"x86_64": 9, "aarch64": 222}  # allowed only MAP_PRIVATE: a shared mapping of /dev/zero is memory of its own
MAP_TYPE, MAP_PRIVATE = 0x0F, 0x02
# Opcodes: BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_JMP|BPF_JGE|BPF_K, BPF_ALU|BPF_AND|BPF_K, BPF_RET|BPF_K
LOAD, JEQ, JGE, AND, RET = 0x20, 0x15, 0x35, 0x54, 0x06
ALLOW, KILL, EPERM = 0x7FFF0000, 0x80000000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, _KILL_PROCESS, _ERRNO | EPERM


def seccomp_filter() -> bytes:
    """The filter bwrap installs before the runner starts (``--seccomp FD``): the :data:`DENIED` calls and
    shared ``mmap`` fail with EPERM, everything else is allowed, a call of any other ABI kills the process."""
    program: list = [(LOAD, 4), *((JEQ, AUDIT_ARCH[arch], arch) for arch in DENIED), (RET, KILL)]
    for arch, numbers in DENIED.items():
        program += [arch, (LOAD, 0), (JGE, X32_SYSCALL_BIT, "kill"), (JEQ, MMAP[arch], "mmap")]
        program += [*((JEQ, number, "deny") for number in numbers.values()), (RET, ALLOW)]
    program += ["mmap", (LOAD, 16 + 3 * 8), (AND, MAP_TYPE), (JEQ, MAP_PRIVATE, "allow")]  # low half of flags
    program += ["deny", (RET, EPERM), "allow", (RET, ALLOW), "kill", (RET, KILL)]
    labels, code = {}, []
    for item in program:
        if isinstance(item, str):
            labels[item] = len(code)
        else:
            code.append(item)
    # A conditional jump goes to its label when true, to the next instruction when false (jumps only go forward).
    return b"".join(
        struct.pack("=HBBI", op, labels[rest[0]] - index - 1 if rest else 0, 0, k)
        for index, (op, k, *rest) in enumerate(code)
    )


def filter_pipe() -> int:
    """A pipe's read end holding :func:`seccomp_filter` (for ``bwrap --seccomp``); the caller passes and closes it."""
    read, write = os.pipe()
    os.write(write, seccomp_filter())  # a few hundred bytes: the pipe holds them
    os.close(write)
    return read


class JailError(RuntimeError):
    """The jail broke a limit, died, or answered with something that is not an answer."""


class JailStartError(JailError):
    """The jail did not start (no code of the submission ran): the grader's failure."""


class Hung(Exception):
    """A call did not return within the limit :meth:`Jail.ask` was given (its ``args[0]``, in seconds)."""


def python_paths(python: str) -> list[str]:
    """The folders a Python environment needs, read-only: its prefix and its base installation's."""
    code = "import sys; print(sys.prefix); print(sys.base_prefix)"
    done = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, check=True)
    paths = {os.path.realpath(line) for line in done.stdout.split()}
    paths |= {os.path.dirname(os.path.realpath(python))}
    return sorted(path for path in paths if not path.startswith("/usr/"))


def interpreter(python: str) -> str:
    """``python`` with every symlinked folder of its path resolved (a symlinked ``.venv`` too), the file's name
    kept: the jail mounts the resolved folders (:func:`python_paths`), and a venv's ``bin/python`` is itself a
    symlink that must stay unresolved for Python to find its ``pyvenv.cfg``."""
    return os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(python))), os.path.basename(python))


def lease_uid() -> tuple[int, int]:
    """``(uid, descriptor)``: a uid from ``UID_BASE`` on that no other jail on this machine runs as while the
    descriptor is open, whichever run (``make grade``, the Gradescope script) leased it. Each uid has a lock file
    in :data:`UID_LOCKS`, a folder of root's alone; the lease is ``flock`` on it, which the kernel drops when the
    descriptor is closed or its process dies, so a run that crashed leaks nothing. For root only."""
    UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    folder = os.open(UID_LOCKS, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        if os.fstat(folder).st_uid != 0:
            raise JailStartError(f"{UID_LOCKS} is not root's")
        for uid in range(UID_BASE, UID_BASE + UIDS):
            lock = os.open(str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return uid, lock
            except BlockingIOError:
                os.close(lock)
        raise JailStartError(f"all {UIDS} jail uids from {UID_BASE} are in use")
    finally:
        os.close(folder)


def command(python: str, paths: list[str], uid: int, cpu_seconds: int, seccomp_fd: int) -> list[str]:
    """The argv that starts ``runner.py`` in a jail (see the module docstring); ``uid``: :func:`lease_uid`'s (run
    as root), ``seccomp_fd``: :func:`filter_pipe`."""
    limits = [
        f"--nproc={PROCESSES}",
        f"--as={MEMORY}",
        f"--cpu={cpu_seconds}",
        f"--fsize={FILE_SIZE}",
        "--nofile=256",
        "--core=0",
        "--msgqueue=0",
    ]
    jail = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    jail += ["--die-with-parent", "--new-session", "--clearenv", "--setenv", "HOME", WORKDIR]
    for variable, value in (("OMP_NUM_THREADS", "1"), ("OPENBLAS_NUM_THREADS", "1"), ("MPLBACKEND", "agg")):
        jail += ["--setenv", variable, value]
    jail += ["--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64"]
    jail += ["--symlink", "usr/bin", "/bin", "--proc", "/proc", "--perms", "0755", "--tmpfs", "/dev"]
    for device in DEVICES:  # not bwrap's --dev: its terminals (/dev/ptmx) would hold buffers of their own
        jail += ["--dev-bind", f"/dev/{device}", f"/dev/{device}"]
    for where in WRITABLE:
        jail += ["--size", str(TMPFS), "--perms", "1777", "--tmpfs", where]
    for folder in sorted({str(parent) for path in paths for parent in Path(path).parents} - {"/"}):
        jail += ["--perms", "0755", "--dir", folder]  # bwrap would make them 0700: root's alone
    for path in paths:
        jail += ["--ro-bind", path, path]
    jail += ["--perms", "0755", "--dir", "/grader", "--ro-bind", str(HOMEWORK / "runner.py"), "/grader/runner.py"]
    # Last: bwrap's own tmpfs as / and /dev (half the machine's RAM each) would be the user's, unprivileged.
    jail += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", WORKDIR, "--seccomp", str(seccomp_fd)]
    if os.geteuid() == 0:
        jail += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--", "setpriv", f"--reuid={uid}"]
        jail += [f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    else:
        jail += ["--unshare-user", "--disable-userns", "--"]
    return ["prlimit", *limits, "--", *jail, python, "-I", "/grader/runner.py"]


class Jail:
    """One submission's jailed runner (``python``: the jail's interpreter, ``paths``: :func:`python_paths`,
    ``wall_seconds``: the whole submission's time, restarts included); :meth:`ask` sends a request and returns the
    reply as plain data."""

    command = staticmethod(command)  # the argv that starts the runner (gradescope.ContainerJail: another one)

    def __init__(self, python: str, paths: list[str], wall_seconds: float):
        self.python, self.paths = interpreter(python), paths
        self.deadline = time.monotonic() + wall_seconds
        self.uid, self.lease = lease_uid() if os.geteuid() == 0 else (None, None)
        try:
            self._start()
        except BaseException:
            if self.lease is not None:
                os.close(self.lease)
            raise

    def _start(self) -> None:
        self.broken, self.started = "", False
        seccomp = filter_pipe()
        read, write = os.pipe()
        try:
            # At least a second past the wall time: the watchdog's kill, which names the time limit, comes first.
            cpu_seconds = max(1, math.ceil(self.deadline - time.monotonic()) + 1)  # past the deadline: killed at once
            argv = self.command(self.python, self.paths, self.uid, cpu_seconds, seccomp)
            self.process = subprocess.Popen(
                [*argv, str(write)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=(write, seccomp), start_new_session=True, env=ENVIRONMENT,
            )  # fmt: skip
        finally:
            os.close(write)
            os.close(seccomp)
        self.replies = os.fdopen(read, "rb")
        self.watchdog = threading.Thread(target=self._watch, args=(self.process,), daemon=True)
        self.watchdog.start()

    def _watch(self, process: subprocess.Popen) -> None:
        while process.poll() is None:
            if time.monotonic() > self.deadline:
                self.kill("ran longer than its time limit")
            elif memory_of(process.pid) > MEMORY:
                self.kill(f"it held over the {MEMORY / 2**30:g} GiB limit in processes and files")
            time.sleep(0.1)

    def kill(self, reason: str) -> None:
        self.broken = self.broken or reason
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # bwrap: its PID namespace dies with it

    def ask(self, request: dict, seconds: float | None = None) -> dict:
        """The reply to ``request``; :class:`Hung` if it takes more than ``seconds`` (when given: the jail is then
        killed, :meth:`restart` starts it again), :class:`JailError` if a limit of the whole jail strikes first."""
        if not self.started:
            self._ready()
        line = (json.dumps(request) + "\n").encode()
        try:
            self.process.stdin.write(line)
            self.process.stdin.flush()
        except OSError:
            pass  # a dead jail: the reply below says why
        until = self.deadline if seconds is None else min(self.deadline, time.monotonic() + seconds)
        reply = self._read_line(until)
        if reply is None:
            self.kill("")
            raise Hung(seconds)
        if self.broken:  # killed for a reason (a limit struck): what its runner says while it dies does not count
            raise JailError(self.broken)
        try:
            answer = loads(reply)
        except (ValueError, RecursionError):
            raise JailError(self.broken or "the notebook's process sent something that is not an answer") from None
        if not isinstance(answer, dict):
            raise JailError("the notebook's process sent something that is not an answer")
        return answer

    def _ready(self) -> None:
        """Wait for the runner's first line, written before any of the submission's code runs: a jail that ends
        first failed to start, which is the grader's failure (:class:`JailStartError`)."""
        try:
            line = self._read_line(self.deadline)
        except JailError:
            if self.broken:  # killed: by close(), or by a limit
                raise
            self.process.wait()
            os.set_blocking(self.process.stderr.fileno(), False)
            said = (self.process.stderr.read(STDERR_CHARS) or b"").decode("utf8", "replace").strip()
            raise JailStartError(
                f"grader error: the jail could not start, so nothing of the submission ran (the grader's failure, "
                f"not the student's: grade it again once fixed){': ' + said if said else ''}"
            ) from None
        self.process.stderr.close()  # nothing the submission's code writes there is read
        if line != b'{"ready": true}\n':
            raise JailStartError("grader error: the jail's runner did not say it started")
        self.started = True

    def _read_line(self, until: float) -> bytes | None:
        """The next line of the replies, or None if ``until`` passes first (before the deadline)."""
        chunks, size = [], 0
        while True:
            wait = until - time.monotonic()
            if wait <= 0 or not select.select([self.replies], [], [], wait)[0]:
                if until < self.deadline:
                    return None
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

    def restart(self) -> None:
        """A fresh jail in place of this one (which a hung call left killed), within the same wall time."""
        self._stop()
        self._start()

    def _stop(self) -> None:
        """Kill the jail and wait until every process it held is gone (the kernel ends them after bwrap) or is a
        zombie: the jail's first process, whose parent died first, is collected by the machine's init, which on
        some machines does it only every second or two (1.5 s per submission on this project's), and a zombie runs
        nothing and holds no memory."""
        held = processes_below(self.process.pid)
        self.kill("")
        self.process.wait()
        deadline = time.monotonic() + 30
        while any(map(running, held)) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.replies.close()
        with contextlib.suppress(BrokenPipeError):  # a request the dead jail never read is still buffered
            self.process.stdin.close()
        if not self.started:
            self.process.stderr.close()

    def close(self) -> None:
        """Stop the jail for good and give back its uid."""
        self._stop()
        if self.lease is not None:
            os.close(self.lease)


def running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has: it waits only to be collected)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def processes_below(root: int) -> dict[int, int]:
    """``{pid: depth}`` of ``root`` (depth 0) and every process below it (read from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            parent = int(Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = {}, [(root, 0)]
    while todo:
        pid, depth = todo.pop()
        found[pid] = depth
        todo += [(child, depth + 1) for child in children.get(pid, [])]
    return found


STATUS_FIELDS = ("RssAnon:", "RssFile:", "VmPTE:", "VmSwap:")  # kB; shared memory (RssShmem) lives in WRITABLE


def memory_of(root: int) -> int:
    """Bytes the jail of bwrap ``root`` holds: its processes' private and file-backed resident memory, page tables
    and swap, and what its :data:`WRITABLE` file systems hold (files, open or deleted, mapped or not). The seccomp
    filter refuses every other kind of memory a process can leave outside itself (System V and POSIX IPC, memfd,
    shared anonymous mappings, pipes, sockets)."""
    below = processes_below(root)
    held = 0
    for pid in below:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(STATUS_FIELDS):
                    held += int(line.split()[1]) * 1024
    # Below bwrap, a process two levels down was started after the jail's mounts were made: its root is the jail's.
    inside = [pid for pid, depth in below.items() if depth >= 2]
    if inside:
        with contextlib.suppress(OSError):  # the process ended: the jail ends with it, or another one is seen next time
            for where in WRITABLE:
                disk = os.statvfs(f"/proc/{inside[0]}/root{where}")
                held += (disk.f_blocks - disk.f_bfree) * disk.f_frsize
    return held


if __name__ == "__main__":  # a quick look: python jail.py PYTHON CODE  (prints what CODE prints in a jail)
    seccomp = filter_pipe()
    uid, lease = lease_uid() if os.geteuid() == 0 else (None, None)
    argv = command(interpreter(sys.argv[1]), python_paths(sys.argv[1]), uid, 60, seccomp)
    subprocess.run([*argv[:-1], "-c", sys.argv[2]], check=False, env=ENVIRONMENT, pass_fds=(seccomp,))
