"""Pages handed over between processes of this machine without a copy: a cluster worker of the same
user sends a memfd (a tile's text, :class:`~gamut.io.memfd_array.MemfdArray`) to this process'
:class:`Mailbox`, a Unix socket in a fresh private folder, and its task's result carries a
:class:`Ticket` in its place; this process maps the pages (:meth:`Mailbox.take`).

Dask moves a task's result through its own connection, which on one H200 brought a default-mode
scan's 4.46 GB of text to the client at about 0.3 GB/s (a two-worker cluster took 21.8 s where
``--gpus 0,0`` took 12.5 s); gamut's own worker processes hand the same memfds over their pipes
(:mod:`gamut.scanning.pipeline.handoff`). A worker that cannot reach the mailbox (another user,
another machine, no memfds) keeps sending the bytes themselves (:func:`post` returns None).

Security: the folder is made by this process, readable by its user alone, and a connection is
taken only from a process of this user (``SO_PEERCRED``); nothing is read from a path.
"""
from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import socket
import tempfile
import threading
import uuid
from dataclasses import dataclass
from typing import Any

from gamut.io.descriptors import receive_fds
from gamut.serve.trust import peer_uid

KEY_BYTES = 32        # a ticket's key: uuid4's 32 hex digits
KEPT = b"K"           # the mailbox's answer once it holds a descriptor
TAKE_TIMEOUT_S = 120  # longest wait for a ticket's descriptor after its result came


@dataclass(frozen=True)
class Ticket:
    """Stands in a result for ``nbytes`` bytes of pages sent to a mailbox under ``key``."""

    key: str
    nbytes: int


def usable() -> bool:
    """Whether this system hands memfds over Unix sockets (Linux)."""
    return hasattr(os, "memfd_create") and hasattr(socket, "AF_UNIX") and hasattr(socket, "SO_PEERCRED")


class Mailbox:
    """Descriptors sent by processes of this user, kept by key until taken; :meth:`close` ends it
    (the socket, its folder and every descriptor not taken)."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="gamut-mailbox-")  # (mode 0700)
        self.address = os.path.join(self.folder, "socket")
        self._fds: dict[str, int] = {}
        self._arrived = threading.Condition()
        self._closed = False
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(self.address)
            self._listener.listen(64)
        except OSError:
            self._listener.close()
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self._thread = threading.Thread(target=self._serve, name="gamut-mailbox", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed
                return
            with conn, contextlib.suppress(OSError):
                conn.settimeout(10)
                self._receive(conn)

    def _receive(self, conn: socket.socket) -> None:
        if peer_uid(conn) != os.getuid():  # (only processes of this user, as gamut serve's server)
            return
        key, fds = receive_fds(conn, KEY_BYTES, 1)
        if len(fds) != 1 or len(key) != KEY_BYTES:
            for fd in fds:
                os.close(fd)
            return
        name = key.decode("ascii", "replace")
        with self._arrived:
            if self._closed or name in self._fds:  # (a key sent twice: the first one holds)
                os.close(fds[0])
                return
            self._fds[name] = fds[0]
            self._arrived.notify_all()
        conn.sendall(KEPT)  # the sender's ticket stands for these pages now

    def take(self, ticket: Ticket, timeout: float = TAKE_TIMEOUT_S):
        """The pages of ``ticket`` as a read-only uint8 array (mapped here, freed with the array)."""
        import numpy as np

        with self._arrived:
            if not self._arrived.wait_for(lambda: ticket.key in self._fds or self._closed, timeout):
                raise TimeoutError(f"a worker's result did not reach this process within {timeout:.0f} s")
            if self._closed:
                raise OSError("the mailbox is closed")
            fd = self._fds.pop(ticket.key)
        try:
            if os.fstat(fd).st_size < ticket.nbytes:
                raise OSError(f"a worker's result has {os.fstat(fd).st_size:,} bytes where {ticket.nbytes:,} were sent")
            if ticket.nbytes == 0:
                return np.zeros(0, np.uint8)
            pages = mmap.mmap(fd, ticket.nbytes, prot=mmap.PROT_READ)
        finally:
            os.close(fd)
        return np.frombuffer(pages, np.uint8)

    def close(self) -> None:
        with self._arrived:
            self._closed = True
            pending, self._fds = list(self._fds.values()), {}
            self._arrived.notify_all()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(timeout=5)
        for fd in pending:
            os.close(fd)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> "Mailbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def post(address: str, fd: int, nbytes: int) -> Ticket | None:
    """Send descriptor ``fd`` (``nbytes`` of pages) to the mailbox at ``address``: its ticket once the
    mailbox holds it, or None where it does not (unreachable, another user's, closed: the caller then
    sends the bytes themselves)."""
    key = uuid.uuid4().hex
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(address)
            socket.send_fds(sock, [key.encode("ascii")], [fd])
            if sock.recv(len(KEPT)) != KEPT:
                return None
    except OSError:
        return None
    return Ticket(key, int(nbytes))


def post_arrays(value: Any, address: str) -> Any:
    """``value`` (a tuple or list, nested) with each :class:`~gamut.io.memfd_array.MemfdArray` that
    holds its memfd sent to the mailbox at ``address`` and replaced by its :class:`Ticket` (an
    array that cannot be sent stays as it is)."""
    from gamut.io.memfd_array import MemfdArray

    if isinstance(value, (tuple, list)):
        return type(value)(post_arrays(item, address) for item in value)
    if isinstance(value, MemfdArray) and value.fd is not None:
        ticket = post(address, value.fd, value.nbytes)
        return value if ticket is None else ticket
    return value


def take_arrays(value: Any, mailbox: Mailbox | None) -> Any:
    """``value`` with each :class:`Ticket` replaced by its pages (:meth:`Mailbox.take`); a ticket
    without a mailbox is an error."""
    if isinstance(value, (tuple, list)):
        return type(value)(take_arrays(item, mailbox) for item in value)
    if isinstance(value, Ticket):
        if mailbox is None:
            raise OSError("a worker's result was sent to a mailbox this process does not hold")
        return mailbox.take(value)
    return value
