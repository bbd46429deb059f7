"""File descriptors: received from another process over a Unix socket (``SCM_RIGHTS``), written whole."""
from __future__ import annotations

import os
import socket


def receive_fds(sock: socket.socket, size: int, max_fds: int) -> tuple[bytes, list[int]]:
    """Up to ``size`` bytes and the descriptors (at most ``max_fds``) sent with them, each
    close-on-exec like Python's own, so that no process started meanwhile inherits one (Python's
    :func:`socket.recv_fds` leaves them inheritable, ``MSG_CMSG_CLOEXEC`` or not)."""
    data, fds, _, _ = socket.recv_fds(sock, size, max_fds)
    for fd in fds:
        os.set_inheritable(fd, False)
    return data, list(fds)


def write_all(fd: int, data) -> None:
    """Write every byte of ``data`` (any buffer) to ``fd`` (``os.write`` may write only some)."""
    view, written = memoryview(data).cast("B"), 0
    while written < len(view):
        written += os.write(fd, view[written:])
