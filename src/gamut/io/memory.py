"""How much host memory a new allocation can have: checked before work that needs a lot of it."""
from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager


def available_memory() -> int | None:
    """Bytes of host memory available to a new allocation (Linux's ``MemAvailable``, else free
    pages), or None where neither is known."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off inside the block (as it was after): for a burst of
    many small objects that hold no cycles, whose allocations would otherwise start collections
    that walk every object of the process (a Dask worker's are many)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
