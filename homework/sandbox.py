"""Start a submission's Jupyter kernel as an unprivileged user, inside its own PID namespace.

    unshare --pid --fork --kill-child --mount-proc PYTHON sandbox.py UID CONNECTION_FILE

The grader writes this command into a kernelspec, so ``jupyter_client`` starts it
for every submission it grades. ``unshare`` (util-linux) gives the kernel a PID
namespace of its own: inside it, this script is PID 1, ``/proc`` lists only the
submission's own processes, no other process (the grader, other submissions)
can be seen or signalled, and when PID 1 ends every process it left behind is
killed. ``--kill-child`` ends PID 1 when ``unshare`` itself is killed, which is
how the grader's timeout takes the whole submission down.

Still root inside the namespace, this script copies the connection file (written
by the grader, readable by root only) into ``scratch/`` of its working directory
(the kernel's current directory, the only place the submission may write),
makes the interpreter reachable (:func:`expose`), then drops to ``UID`` (its own group, no supplementary groups, no new
privileges) and replaces itself with ``python -m ipykernel_launcher``, with
``HOME`` and ``TMPDIR`` in that scratch directory.
Standard library only: it runs in whatever environment grades.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
from pathlib import Path

PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
MS_BIND, MS_REC = 4096, 16384
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


def drop_privileges(uid: int) -> None:
    """Become ``uid`` (group ``uid``, no supplementary groups) for good."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    # Changing user clears the parent-death signal ``unshare --kill-child`` set: set it again.
    for option, value in ((PR_SET_NO_NEW_PRIVS, 1), (PR_SET_PDEATHSIG, signal.SIGKILL)):
        if LIBC.prctl(option, int(value), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"prctl({option}) failed")
    if os.getuid() != uid or os.geteuid() != uid:
        raise PermissionError(f"could not drop to uid {uid}")


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        raise SystemExit("usage: sandbox.py UID CONNECTION_FILE")
    uid, scratch, connection = int(argv[0]), Path.cwd() / "scratch", Path(argv[1])
    if uid == 0:
        raise ValueError("uid: the kernel must not run as root")
    private = scratch / "kernel.json"
    shutil.copyfile(connection, private)
    os.chown(private, uid, uid)
    expose(Path(sys.base_prefix))
    drop_privileges(uid)
    home = str(scratch)
    os.environ.update(HOME=home, TMPDIR=home, IPYTHONDIR=f"{home}/.ipython", MPLCONFIGDIR=f"{home}/.mpl")
    os.environ.pop("JUPYTER_RUNTIME_DIR", None)
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", str(private)])


if __name__ == "__main__":
    main(sys.argv[1:])
