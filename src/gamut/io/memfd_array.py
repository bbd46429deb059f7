"""Bytes in a memfd's pages (Linux): a GPU worker process joins a tile's rendered text into one, and
hands its parent the descriptor instead of a copy (:mod:`gamut.scanning.pipeline.handoff`).

A tile's text was joined with ``b"".join`` (under the interpreter lock) and then copied again into a
memfd: in default mode on 2x H200, 0.9 s and 0.55 s of each of four workers' time on the
transcriptome scan (4.46 GB of text). :func:`joined` writes the pieces once, without the lock, into
a memfd that the parent then maps.
"""
from __future__ import annotations

import mmap
import os
import weakref
from collections.abc import Sequence

import numpy as np

from gamut.io.descriptors import write_all


class MemfdArray(np.ndarray):
    """A uint8 array in a memfd's pages; ``fd``: the memfd (closed when the array is freed; None in
    any array derived from it). Pickled as a plain array: with protocol 5 and a pickler that takes
    buffers out of band (Dask's, sending a cluster worker's tiles), its pages as they are, else a
    copy of its bytes. (An ndarray subclass that gives ``__reduce__`` is pickled through it, a copy
    in the pickle itself: a Dask worker held the interpreter lock for 0.3 s of a 5 s scan copying its
    tiles so.)"""

    fd: int | None = None

    def __array_finalize__(self, obj) -> None:
        self.fd = None

    def __reduce_ex__(self, protocol: int):
        return np.asarray(self).__reduce_ex__(protocol)


def joined(pieces: Sequence[np.ndarray]) -> np.ndarray:
    """``pieces`` (uint8 arrays) end to end: a :class:`MemfdArray` (read-only) where the system has
    memfds, else a plain array. One copy, made without the interpreter lock: into the memfd by
    ``write`` (the kernel fills its pages), which is then mapped. Copying into a mapping of it
    instead faults each page in from user space: 3.8 s of each stripe worker's 17 s on 2x H200 in
    default mode (1.1 GB of text each, four workers at once), 2.8x the ``write`` on the development
    machine."""
    pieces = [np.ascontiguousarray(p, np.uint8) for p in pieces]
    size = sum(int(p.shape[0]) for p in pieces)
    if size == 0 or not hasattr(os, "memfd_create"):
        return np.concatenate(pieces) if pieces else np.zeros(0, np.uint8)
    fd = os.memfd_create("gamut-tile", os.MFD_CLOEXEC)
    try:
        for piece in pieces:
            write_all(fd, piece)
        pages = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    except OSError:
        os.close(fd)
        raise
    out = np.frombuffer(pages, np.uint8).view(MemfdArray)
    out.fd = fd
    weakref.finalize(out, os.close, fd)
    return out
