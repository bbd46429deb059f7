"""A worker process's large results handed to its parent in shared memory: each bytes object of a
result (itself, or an item of a tuple) of at least a threshold is written once into a memfd, whose
descriptor follows the reply over the pipe's socket (``SCM_RIGHTS``); the parent maps it and gets
a read-only memoryview, freed with the view. A :class:`~gamut.io.memfd_array.MemfdArray` (a tile's
text, joined into a memfd's pages) is handed over as it is, without a copy.

Through the pipe, a partition's 150 MB took about 0.45 s on the H200 host (the parent's reading
thread needs the interpreter lock for every 64 KiB, which its own scan holds), during which the
worker sat idle.
"""
from __future__ import annotations

import mmap
import os
import socket
from typing import Any

from gamut.io.descriptors import receive_fds, write_all


class _Shared:
    """Stands in a reply for ``length`` bytes sent as a memfd after it (:func:`share`)."""

    __slots__ = ("length",)

    def __init__(self, length: int) -> None:
        self.length = length


def share(value: Any, fds: list[int], share_from: int) -> Any:
    """``value`` with each bytes object of at least ``share_from`` bytes (itself, or an item of a
    tuple) written into a memfd (appended to ``fds``) and replaced by a :class:`_Shared`. Where
    the system has no memfd, ``value`` as it is."""
    if isinstance(value, tuple):
        return tuple(share(item, fds, share_from) for item in value)
    from gamut.io.memfd_array import MemfdArray  # (here: a worker imports this module before NumPy and Numba)

    if isinstance(value, MemfdArray) and value.fd is not None and value.nbytes >= max(share_from, 1):
        fds.append(os.dup(value.fd))  # already in a memfd's pages: no copy (the caller closes this one)
        return _Shared(int(value.nbytes))
    if not isinstance(value, (bytes, bytearray)) or len(value) < max(share_from, 1) or not hasattr(os, "memfd_create"):
        return value
    fd = os.memfd_create("gamut-result", os.MFD_CLOEXEC)
    fds.append(fd)
    write_all(fd, value)
    return _Shared(len(value))


def unshare(value: Any, conn) -> Any:
    """A reply's value with its :class:`_Shared` items replaced by read-only views of the memfds
    that follow it on ``conn`` (mapped here, freed when the view is)."""
    lengths = _lengths(value)
    if not lengths:
        return value
    fds = _receive_fds(conn, len(lengths))
    try:
        views = [memoryview(mmap.mmap(fd, length, prot=mmap.PROT_READ)) for fd, length in zip(fds, lengths)]
    finally:
        for fd in fds:
            os.close(fd)
    views.reverse()
    return _restore(value, views)


def _restore(value: Any, views: list[memoryview]) -> Any:
    """``value`` with its :class:`_Shared` items replaced by ``views``, taken from the end (no
    reference to a view stays behind: a mapping is freed with the view the caller holds)."""
    if isinstance(value, tuple):
        return tuple(_restore(item, views) for item in value)
    return views.pop() if isinstance(value, _Shared) else value


def _lengths(value: Any) -> list[int]:
    if isinstance(value, tuple):
        return [n for item in value for n in _lengths(item)]
    return [value.length] if isinstance(value, _Shared) else []


def send_fds(conn, fds: list[int]) -> None:
    """Hand ``fds`` over the pipe's socket (the caller still closes its own)."""
    with socket.socket(fileno=os.dup(conn.fileno())) as sock:
        socket.send_fds(sock, [b"F"], fds)


def _receive_fds(conn, count: int) -> list[int]:
    with socket.socket(fileno=os.dup(conn.fileno())) as sock:
        _, fds = receive_fds(sock, 1, count)
    if len(fds) != count:
        for fd in fds:
            os.close(fd)
        raise OSError(f"{count} descriptors expected from the worker, {len(fds)} came")
    return fds
