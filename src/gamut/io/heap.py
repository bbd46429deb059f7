"""Heap settings for a streaming process: large per-chunk buffers reused rather than mapped afresh.

glibc serves each allocation above its mmap threshold (at most 32 MiB by default) with a fresh
``mmap`` and unmaps it on free, so every chunk's output text, pools and hit columns (tens of MB
each) are faulted in page by page again, chunk after chunk. Raising the threshold (and the trim
threshold, so that the freed top of the heap is kept) lets the next chunk reuse the same pages:
filling a reused buffer costs no page faults, which a fresh one pays for every page it touches.

Every process that streams chunks takes these settings: a command's (:func:`gamut.cli.run`), gamut's
own GPU workers, and Dask workers (gamut's preload, and the local cluster's workers through their
environment: Dask's nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which pins the
mmap threshold at 128 KiB, so that every larger buffer is mapped afresh). ``GAMUT_HEAP_REUSE=0``
leaves the C library's defaults (a measurement knob).
"""
from __future__ import annotations

import ctypes
import sys

from gamut.numerals import env_switch

#: mallopt parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: Buffers up to this size come from the heap; the freed heap top is returned to the system only
#: beyond twice this size.
REUSE_LIMIT = 256 << 20


def reuse_large_buffers(limit: int = REUSE_LIMIT) -> bool:
    """Let the C heap serve and keep allocations up to ``limit`` bytes (glibc on Linux); returns
    whether the settings took effect. Meant for a command's process (it is process-wide), not for
    library imports."""
    settings = _thresholds(limit)
    if not sys.platform.startswith("linux") or settings is None:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the process already uses
    except (OSError, AttributeError):  # not glibc (e.g. musl has no mallopt)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    mmap, trim = settings
    return bool(mallopt(M_MMAP_THRESHOLD, mmap)) and bool(mallopt(M_TRIM_THRESHOLD, trim))


def reuse_environ(limit: int = REUSE_LIMIT) -> dict[str, str]:
    """The same settings as environment variables, for a process about to start (glibc reads
    them as it starts; they replace those of Dask's nanny); none under ``GAMUT_HEAP_REUSE=0``."""
    settings = _thresholds(limit)
    if settings is None:
        return {}
    mmap, trim = settings
    return {"MALLOC_MMAP_THRESHOLD_": str(mmap), "MALLOC_TRIM_THRESHOLD_": str(trim)}


def _thresholds(limit: int) -> tuple[int, int] | None:
    """The mmap and trim thresholds for buffers up to ``limit`` bytes; None under ``GAMUT_HEAP_REUSE=0``."""
    return (int(limit), 2 * int(limit)) if env_switch("GAMUT_HEAP_REUSE", True) else None
