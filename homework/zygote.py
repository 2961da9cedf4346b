"""Fork every sandboxed kernel from one process that has already imported what each kernel imports.

    PYTHON zygote.py SOCKET

Started by ``grade.py`` (as root, once per run, in the environment that grades).
A kernel started afresh spends about 2.5 s of CPU importing ipykernel, otter
(with nbconvert, pandas and jsonschema) and numpy before its first cell runs; a
kernel forked from here starts with them imported (the zygote of Android's apps
and of Chromium's renderers). The zygote listens on ``SOCKET``, in a directory
only root can enter, before it imports anything: a kernel asked for early waits
for the imports, never longer.

A connection comes from ``sandbox.py``, still root, and must: it sends the
kernel's uid, connection file, working directory and environment as JSON, with
its three standard streams. The zygote forks a supervisor, which makes a PID and
a mount namespace and forks the kernel into them as their PID 1. The kernel
mounts its own ``/proc``, makes the interpreter reachable, starts a session of
its own, takes the streams, drops to the uid for good and runs
``ipykernel_launcher`` as ``python -m`` would, in that directory (:func:`warm`
says how the imported modules are kept as a fresh kernel would import them).
The supervisor passes interrupts on, kills the kernel (and so its namespace)
when ``sandbox.py`` goes away, and sends ``sandbox.py`` its exit status.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib
import json
import os
import random
import runpy
import select
import signal
import socket
import struct
import sys
import tempfile
import traceback
from pathlib import Path

from sandbox import INTERRUPT, LIBC, STARTED, drop_privileges, expose, mount_own_proc

# What every grading kernel imports (torch is left out: one assignment of four uses it).
WARM = ("ipykernel.kernelapp", "otter", "numpy")
CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000
CREDENTIALS = struct.Struct("3i")  # struct ucred: pid, uid, gid


def peer_uid(connection: socket.socket) -> int:
    """The uid of the process at the other end of ``connection``."""
    _pid, uid, _gid = CREDENTIALS.unpack(connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, CREDENTIALS.size))
    return uid


def receive(connection: socket.socket) -> tuple[dict, list[int]]:
    """The request (its length in 8 bytes, then JSON) and the standard streams sent with it."""
    first, fds, _flags, _address = socket.recv_fds(connection, 1 << 16, 3)
    if len(fds) != 3 or len(first) < 8:
        raise ValueError("a request comes with its length and the kernel's three standard streams")
    length, message = int.from_bytes(first[:8], "big"), bytearray(first[8:])
    while len(message) < length and (chunk := connection.recv(length - len(message))):
        message += chunk
    return json.loads(message), fds


def run_kernel(request: dict, streams: list[int]) -> None:
    """As PID 1 of a new PID and mount namespace: become the kernel of ``request`` and run it; never returns."""
    mount_own_proc()
    expose(Path(sys.base_prefix))
    os.setsid()
    for target, stream in enumerate(streams):
        os.dup2(stream, target)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # nothing of the zygote's, as after an exec
    drop_privileges(request["uid"])
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # found again from TMPDIR
    random.seed()
    sys.modules["numpy"].random.seed()  # each kernel draws its own, as a fresh interpreter would
    sys.argv[1:] = ["-f", request["connection"]]  # argv[0] becomes the launcher's path, as with `python -m`
    sys.path[0] = os.getcwd()  # where `python -m` puts the working directory (the launcher takes it out again)
    code = 1
    try:
        runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 1
    except BaseException:
        traceback.print_exc()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def supervise(channel: socket.socket, request: dict, streams: list[int]) -> int:
    """Start the kernel of ``request`` in namespaces of its own, kill it when ``channel`` closes; its exit status."""
    if LIBC.unshare(CLONE_NEWPID | CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare failed")
    kernel = os.fork()
    if kernel == 0:
        try:
            run_kernel(request, streams)
        finally:
            os._exit(1)
    channel.sendall(STARTED)
    exited = os.pidfd_open(kernel)
    while exited not in select.select([channel, exited], [], [])[0]:
        message = channel.recv(64)
        if not message:  # sandbox.py is gone: so is the kernel (PID 1: its whole namespace with it)
            os.kill(kernel, signal.SIGKILL)
            break
        if INTERRUPT in message:
            os.kill(kernel, signal.SIGINT)
    _pid, status = os.waitpid(kernel, 0)
    return os.waitstatus_to_exitcode(status)


class CurrentStream:
    """``sys.stdout`` or ``sys.stderr`` as it is when written to, not as it was when a module took it."""

    def __init__(self, name: str):
        self.name = name

    def __getattr__(self, attribute: str):
        stream = getattr(sys, self.name)
        return getattr(getattr(sys, f"__{self.name}__") if stream is self else stream, attribute)


def warm() -> None:
    """Import :data:`WARM` into the state a fresh kernel imports them in.

    A kernel replaces ``pdb.Pdb`` (``IPKernelApp.init_pdb``) and ``sys.stdout`` and
    ``sys.stderr`` (with streams to the notebook) before the first cell runs; a
    module imported by a cell subclasses that ``Pdb`` (doctest, which otter runs
    the tests with) and logs to those streams (otter's loggers, lark's). Here the
    modules are imported after the same ``Pdb`` change, with streams that write
    to whatever ``sys.stdout`` and ``sys.stderr`` are in the kernel.
    """
    # ipykernel reads JPY_PARENT_PID when it is imported, and every kernel jupyter_client starts has one: it only
    # decides that the kernel polls for its parent's death (the poll stands down: getppid() is 0 in a namespace).
    os.environ.setdefault("JPY_PARENT_PID", str(os.getppid()))
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.init_pdb(None)  # touches no instance state
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = CurrentStream("stdout"), CurrentStream("stderr")
    try:
        for module in WARM:
            importlib.import_module(module)
    finally:
        sys.stdout, sys.stderr = streams


def serve(server: socket.socket) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the supervisors are not waited for
    while True:
        channel, _address = server.accept()
        streams: list[int] = []
        try:
            if peer_uid(channel) != 0:
                continue  # only sandbox.py, still root, may ask
            request, streams = receive(channel)
            if os.fork() == 0:
                try:
                    server.close()
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # this one waits for its kernel
                    code = supervise(channel, request, streams)
                    with contextlib.suppress(OSError):  # sandbox.py may be gone already
                        channel.sendall(f"{code}\n".encode())
                except BaseException as error:  # before "started", sandbox.py starts a kernel itself
                    print(f"zygote: {error!r}", file=sys.stderr, flush=True)
                finally:
                    os._exit(0)
        except (OSError, ValueError) as error:
            print(f"zygote: a request failed: {error!r}", file=sys.stderr, flush=True)
        finally:
            channel.close()
            for stream in streams:
                os.close(stream)


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise SystemExit("usage: zygote.py SOCKET")
    server = socket.socket(socket.AF_UNIX)
    server.bind(argv[0])
    os.chmod(argv[0], 0o600)
    server.listen(64)
    warm()
    serve(server)


if __name__ == "__main__":
    main(sys.argv[1:])
