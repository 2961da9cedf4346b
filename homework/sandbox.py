"""Start a submission's Jupyter kernel as an unprivileged user, inside its own PID namespace.

    unshare --pid --fork --kill-child --mount-proc PYTHON sandbox.py UID CONNECTION_FILE [ZYGOTE_SOCKET]

The grader writes this command into a kernelspec, so ``jupyter_client`` starts it
for every submission it grades. ``unshare`` (util-linux) gives the kernel a PID
namespace of its own: inside it, this script is PID 1, ``/proc`` lists only the
submission's own processes, no other process (the grader, other submissions)
can be seen or signalled, and when PID 1 ends every process it left behind is
killed. ``--kill-child`` ends PID 1 when ``unshare`` itself is killed, which is
how the grader's timeout takes the whole submission down.

Still root inside the namespace, this script copies the connection file (written
by the grader, readable by root only) into ``scratch/`` of its working directory
(the kernel's current directory, the only place the submission may write), with
``HOME`` and ``TMPDIR`` in that scratch directory for the kernel. Then:

* with ``ZYGOTE_SOCKET``, it asks the grader's ``zygote.py`` for the kernel: the
  zygote forks it, already holding ipykernel, otter and numpy, as PID 1 of a PID
  and mount namespace of its own, where it does what follows itself. This script
  stays as its stand-in: it passes interrupts on, ends with the kernel's exit
  status, and when it is killed the zygote kills the kernel (:func:`follow`);
* otherwise, or if the zygote does not answer, it makes the interpreter reachable
  (:func:`expose`), drops to ``UID`` for good (:func:`drop_privileges`: its own
  group, no supplementary groups, no new privileges) and replaces itself with
  ``python -m ipykernel_launcher``.

Standard library only: it runs in whatever environment grades.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import sys
from pathlib import Path

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
STARTED, INTERRUPT = b"started\n", b"interrupt\n"  # what zygote.py and this script say to each other
LIBC = ctypes.CDLL(None, use_errno=True)


def _mount(source: str, target: str, kind: str | None, flags: int, options: str | None) -> None:
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    if LIBC.mount(encode(source), encode(target), encode(kind), flags, encode(options)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {source} on {target}: {os.strerror(error)}")


def expose(path: Path) -> None:
    """Make ``path`` reachable by any user in this mount namespace (and hide its hidden ancestor's rest).

    The Python that runs the kernel may live below a directory other users cannot
    enter (``/root/.pyenv``). In this private mount namespace the first such
    ancestor is covered by an empty tmpfs and ``path`` alone is bind-mounted back
    at its place; outside the namespace nothing changes.
    """
    path = path.resolve()
    blocked = next((p for p in reversed(path.parents) if not p.stat().st_mode & 0o001), None)
    if blocked is None:
        return
    handle = os.open(path, os.O_PATH | os.O_DIRECTORY)
    _mount("tmpfs", str(blocked), "tmpfs", 0, "mode=0755")
    path.mkdir(parents=True, exist_ok=True)
    _mount(f"/proc/self/fd/{handle}", str(path), None, MS_BIND | MS_REC, None)
    os.close(handle)


def mount_own_proc() -> None:
    """In a new mount namespace, as PID 1 of a new PID namespace: what ``unshare --mount-proc`` does."""
    _mount("none", "/", None, MS_REC | MS_PRIVATE, None)  # nothing mounted here shows outside
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)


def drop_privileges(uid: int) -> None:
    """Become ``uid`` (group ``uid``, no supplementary groups) for good.

    Changing user clears the parent-death signal (``unshare --kill-child``'s, or
    the zygote's): it is set again. It also makes the process undumpable (its
    ``/proc`` entries root's), which the kernel's ``exec`` undid; a kernel forked
    by ``zygote.py`` runs without one, so it is made dumpable here.
    """
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    for option, value in ((PR_SET_NO_NEW_PRIVS, 1), (PR_SET_PDEATHSIG, signal.SIGKILL), (PR_SET_DUMPABLE, 1)):
        if LIBC.prctl(option, int(value), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"prctl({option}) failed")
    if os.getuid() != uid or os.geteuid() != uid:
        raise PermissionError(f"could not drop to uid {uid}")


def forked_kernel(zygote: str, request: dict) -> socket.socket | None:
    """The channel to the grader's ``zygote.py`` once it has started the kernel of ``request``; None if it can't."""
    channel = socket.socket(socket.AF_UNIX)
    try:
        channel.connect(zygote)
        message = json.dumps(request).encode()
        socket.send_fds(channel, [len(message).to_bytes(8, "big") + message], [0, 1, 2])
        if channel.recv(len(STARTED)) == STARTED:
            return channel
    except OSError:
        pass
    channel.close()
    return None


def follow(channel: socket.socket) -> int:
    """Stand in for the forked kernel: pass interrupts on, end with its exit status (its end when this one ends)."""
    signal.signal(signal.SIGINT, lambda _number, _frame: channel.sendall(INTERRUPT))
    status = b"".join(iter(lambda: channel.recv(64), b""))
    return int(status) if status.strip().lstrip(b"-").isdigit() else 1


def main(argv: list[str]) -> None:
    if len(argv) not in (2, 3):
        raise SystemExit("usage: sandbox.py UID CONNECTION_FILE [ZYGOTE_SOCKET]")
    uid, scratch, connection = int(argv[0]), Path.cwd() / "scratch", Path(argv[1])
    if uid == 0:
        raise ValueError("uid: the kernel must not run as root")
    private = scratch / "kernel.json"
    shutil.copyfile(connection, private)
    os.chown(private, uid, uid)
    home = str(scratch)
    environment = {key: value for key, value in os.environ.items() if key != "JUPYTER_RUNTIME_DIR"}
    environment.update(HOME=home, TMPDIR=home, IPYTHONDIR=f"{home}/.ipython", MPLCONFIGDIR=f"{home}/.mpl")
    request = {"uid": uid, "connection": str(private), "cwd": os.getcwd(), "env": environment}
    if len(argv) == 3 and (channel := forked_kernel(argv[2], request)):
        sys.exit(follow(channel))
    expose(Path(sys.base_prefix))
    drop_privileges(uid)
    os.execve(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", str(private)], environment)


if __name__ == "__main__":
    main(sys.argv[1:])
