"""How many threads a ``parallel=True`` kernel of the output path runs on. (Numba is imported when a
kernel's threads are first set: a command that only builds its job starts without it.)"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Union


#: Whether a kernel may run on all threads: fixed, or asked before each kernel (e.g. ``Future.done``
#: of the alignment running beside it).
Parallel = Union[bool, Callable[[], bool]]

#: Work items (values formatted, strings, record pieces, hits) from which a kernel whose caller
#: allows it runs on all threads; less runs on the calling thread alone (waking threads costs more).
PARALLEL_MIN_WORK = 4096


def allowed(parallel: Parallel) -> bool:
    """The answer of ``parallel`` now (a callable is asked)."""
    return bool(parallel()) if callable(parallel) else bool(parallel)


def run_kernel(kernel: Callable, work: int, parallel: Parallel, *args: Any) -> Any:
    """``kernel(*args)`` on all of Numba's threads when ``parallel`` allows it (asked now, if it is
    a callable) and ``work`` is large, else on the calling thread alone.

    Callers allow parallel only when no alignment runs beside them (the scan's runner hands its sink
    that answer with each chunk: :func:`gamut.scanning.pipeline.scan_loop.scan_chunks`): while
    an engine keeps the cores busy (all of them on the CPU, the host passes of a GPU engine on one),
    a parallel region waits for its threads to be scheduled and slows both. Measured on the H100
    host: post-processing on all but the GPU engine's two host threads while it aligned made the
    1,921 x 20,000 CLIP scan 0.3-0.5 s slower, and the 256 x 256 x 20 kb scan no faster.
    """
    if work >= PARALLEL_MIN_WORK and allowed(parallel):
        return kernel(*args)
    with numba_threads(1):
        return kernel(*args)


@contextmanager
def numba_threads(threads: int | None) -> Iterator[int]:
    """Numba's parallel kernels called from this thread use at most ``threads`` threads inside the
    block (``None``: all of them); yields the count in force."""
    import numba

    previous = numba.get_num_threads()
    count = max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)) if threads else previous
    numba.set_num_threads(count)
    try:
        yield count
    finally:
        numba.set_num_threads(previous)


def parse_threads(value: str | int | None, option: str = "--threads") -> int | None:
    """A ``--threads`` value as a positive count (``None``: the default, all cores).

    Checked before any output is written: 0, a negative count or a non-number would otherwise
    fail inside an engine, after the output's header.
    """
    if value is None:
        return None
    from gamut.numerals import number

    return number(value, option, whole=True, at_least=1)


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; the CPU count where there is none)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class SpawnedProcesses:
    """``workers`` worker processes for work that holds Python's lock (ViennaRNA's folding), spawned
    (forking a process with threads is unsafe) on first use and kept until :meth:`close` (a ``with``
    block), so that their start-up is paid once per run."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> SpawnedProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pool(self) -> ProcessPoolExecutor:
        """The processes, started now if they are not yet."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        return self._pool

    def broken(self) -> None:
        """Forget processes that died (BrokenProcessPool): the next :meth:`pool` starts new ones."""
        self._pool = None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
