"""How many threads a ``parallel=True`` kernel of the output path runs on."""
from __future__ import annotations

from typing import Any, Callable

import numba

#: Work items (values formatted, strings, record pieces, hits) from which a kernel whose caller
#: allows it runs on all threads; less runs on the calling thread alone (waking threads costs more).
PARALLEL_MIN_WORK = 4096


def run_kernel(kernel: Callable, work: int, parallel: bool, *args: Any) -> Any:
    """``kernel(*args)`` on all of Numba's threads when ``parallel`` and ``work`` is large, else
    on the calling thread alone.

    Callers allow parallel only when no alignment runs beside them (``ChunkResult.parallel``): while
    an engine keeps the cores busy (all of them on the CPU, the host passes of a GPU engine on one),
    a parallel region waits for its threads to be scheduled and slows both.
    """
    if parallel and work >= PARALLEL_MIN_WORK:
        return kernel(*args)
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        return kernel(*args)
    finally:
        numba.set_num_threads(previous)
