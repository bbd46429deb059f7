"""Whether this process's C heap maps a large buffer afresh (glibc's ``mallinfo2``): run as a task in
worker processes, to see that their heaps keep large buffers for reuse (gamut.io.heap)."""
from __future__ import annotations

import ctypes
import sys

import numpy as np

FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in FIELDS]


def mallinfo2():
    """glibc's ``mallinfo2`` (None where there is none: not Linux, not glibc, glibc before 2.33)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = MallInfo2
    return fn


def maps_afresh(_shared=None, size: int = 8 << 20) -> bool | None:
    """Whether a buffer of ``size`` bytes (NumPy's, through malloc) is served by a fresh mmap here,
    None where that cannot be seen. (The shared argument of a worker task is ignored.)"""
    info = mallinfo2()
    if info is None:
        return None
    before = info().hblkhd
    buffer = np.empty(size, np.uint8)
    mapped = info().hblkhd > before
    del buffer
    return mapped


def maps_afresh_stream(_shared, taken):
    """:func:`maps_afresh` as a GPU worker's stream (one answer per task)."""
    for key, size in taken:
        yield key, maps_afresh(None, size)
