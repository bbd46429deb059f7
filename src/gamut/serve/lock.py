"""One server per socket: a lock (``flock``) on ``serve-TAG.lock`` beside the socket, held by the
server for its whole life, from before its warm-up to its end.

A second ``gamut serve`` on the same socket fails at once, naming the first one's pid (which the
lock file holds), instead of warming up for nothing. ``gamut serve --detach`` takes the lock
itself before it starts the server and hands it over (the server process inherits the locked
descriptor), so of two started at once exactly one starts a server. The file lives in the
server's checked directory (:mod:`gamut.serve.trust`) and is never removed: removing a lock
file lets two processes hold "the" lock on two files.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path


class Held(Exception):
    """Another process holds the lock: its pid where the file names one."""

    def __init__(self, pid: int | None) -> None:
        super().__init__(pid)
        self.pid = pid


def lock_path(sock: Path) -> Path:
    return sock.with_suffix(".lock")


def _open(sock: Path) -> int:
    return os.open(lock_path(sock), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def holder(sock: Path) -> int | None:
    """The pid written in ``sock``'s lock file, if any."""
    with contextlib.suppress(OSError, ValueError):
        return int(lock_path(sock).read_text().strip() or "x")
    return None


def wait_holder(sock: Path, timeout: float) -> int | None:
    """The holder's pid, waiting up to ``timeout`` seconds for it to be written (``--detach``
    writes its server's once it has started it)."""
    deadline = time.monotonic() + timeout
    while (pid := holder(sock)) is None and time.monotonic() < deadline and is_held(sock):
        time.sleep(0.02)
    return pid


def holder_of(fd: int) -> int | None:
    """The pid written in the lock file open as ``fd``, if any."""
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).decode().strip() or "x")
    return None


def take(sock: Path, server: bool = True) -> int:
    """The locked descriptor of ``sock``'s lock file, with this process's pid in it where it is the
    ``server`` (else empty until :func:`record` names the server); :class:`Held` if another
    process holds it."""
    fd = _open(sock)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise Held(holder(sock)) from None
    except BaseException:
        os.close(fd)
        raise
    if server:
        record(fd, os.getpid())
    else:
        os.ftruncate(fd, 0)
    return fd


def adopt(fd: int) -> int:
    """The lock a parent took and handed down as descriptor ``fd`` (checked: still locked by this
    open file, which ``flock`` grants again at once); this process's pid written in it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise Held(holder_of(fd)) from None
    os.set_inheritable(fd, False)
    record(fd, os.getpid())
    return fd


def record(fd: int, pid: int) -> None:
    """Write ``pid`` as the lock's holder."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{pid}\n".encode(), 0)


def is_held(sock: Path) -> bool:
    """Whether a process holds ``sock``'s lock (a server starting or running)."""
    try:
        fd = os.open(lock_path(sock), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def wait_free(sock: Path, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds until no process holds the lock; whether none does."""
    deadline = time.monotonic() + timeout
    while is_held(sock):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
