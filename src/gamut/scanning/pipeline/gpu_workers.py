"""One worker process per GPU (``--gpus 0,1``): a local pool of processes, each pinned to its GPU
with ``CUDA_VISIBLE_DEVICES`` before it imports CuPy, so that each drives its device (as device 0)
under its own interpreter lock. The partitioned runner hands them its partitions, as it would to
a Dask cluster (:func:`run_in_order` has the role of :func:`gamut.cluster.run_in_order`), and
writes their data in partition order: the output is byte for byte that of one process.

A GPU id may be named twice (``--gpus 0,0``): two workers then share that GPU.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import queue
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from gamut.errors import GamutError, UsageError

#: Tasks in flight per worker (one computing, one waiting), plus results held out of order.
WINDOW_PER_WORKER = 2
#: Seconds a starting worker waits for its GPU id (they are all queued before the first starts).
GPU_ID_WAIT_S = 60


class WorkerError(GamutError):
    """A GPU worker process died (or could not start); the message says which task it ran
    (callers add their advice: :meth:`advised`)."""

    def advised(self, advice: str) -> WorkerError:
        return WorkerError(f"{self}; {advice}")


#: In a worker: what :class:`GpuWorkers` shares with every task (the partition task).
_SHARED: list[Any] = [None]


def _start_worker(ids, shared: Any) -> None:
    """A worker's first step: take a GPU id and see only that GPU (before anything imports CuPy)."""
    try:
        gpu = ids.get(timeout=GPU_ID_WAIT_S)
    except queue.Empty:
        raise SystemExit("gamut: no GPU id for this worker") from None
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    _SHARED[0] = shared


def _call(fn: Callable, *args: Any) -> Any:
    return fn(_SHARED[0], *args)


class GpuWorkers:
    """A pool of worker processes, one per entry of ``gpus`` (started with the ``spawn`` method on
    first use, each seeing its GPU as device 0); ``close()`` stops them. Used in place of a Dask
    :class:`~gamut.cluster.Connection` by the partitioned runner."""

    def __init__(self, gpus: Sequence[int]) -> None:
        if not gpus:
            raise ValueError("GpuWorkers needs at least one GPU id")
        self.gpus = [int(g) for g in gpus]
        self.description = f"{len(self.gpus)} GPU workers ({','.join(map(str, self.gpus))})"
        self._executor: cf.ProcessPoolExecutor | None = None
        self._shared: Any = None

    @property
    def n_workers(self) -> int:
        return len(self.gpus)

    def executor(self, shared: Any) -> cf.ProcessPoolExecutor:
        """The pool, started on first use with ``shared`` (every later use must share the same)."""
        if self._executor is None:
            from gamut.cluster import unguarded_main_call

            unguarded = unguarded_main_call()
            if unguarded is not None:  # spawn re-runs the main script in each worker, which would fail
                script, line = unguarded
                raise UsageError(f"{script}:{line}: a scan on several GPUs starts worker processes, which "
                                 "re-run the main script: put this call under 'if __name__ == \"__main__\":'")
            ctx = multiprocessing.get_context("spawn")
            ids = ctx.Queue()
            for gpu in self.gpus:
                ids.put(gpu)
            self._shared = shared
            self._executor = cf.ProcessPoolExecutor(len(self.gpus), mp_context=ctx, initializer=_start_worker,
                                                    initargs=(ids, shared))
        elif shared is not self._shared:
            raise ValueError("GpuWorkers: every task shares the same object")
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            executor, self._executor = self._executor, None
            executor.shutdown(wait=True, cancel_futures=True)


def _result(future: cf.Future, what: str) -> Any:
    try:
        return future.result()
    except BrokenProcessPool:
        raise WorkerError(f"a GPU worker process died while running {what} (out of memory, a "
                          "driver error or a crash)") from None


def run_one(pool: GpuWorkers, fn: Callable, shared: Any, *args: Any, label: str = "a task") -> Any:
    """``fn(shared, *args)`` on one of the workers."""
    return _result(pool.executor(shared).submit(_call, fn, *args), label)


def run_in_order(
    pool: GpuWorkers,
    fn: Callable,
    shared: Any,
    tasks: Iterable[tuple[int, tuple]],
    *,
    held: Callable[[], int] = lambda: 0,
    label: str = "task",
) -> Iterator[tuple[int, Any]]:
    """Run ``fn(shared, *args)`` for each ``(key, args)`` of ``tasks`` on the workers; yield
    ``(key, result)`` as tasks finish (in any order). Tasks in flight plus results the caller
    holds out of order (``held()``) stay within :data:`WINDOW_PER_WORKER` per worker. An error a
    task raises is raised here; a worker that dies is a one-line :class:`WorkerError`."""
    executor = pool.executor(shared)
    limit = max(1, WINDOW_PER_WORKER * pool.n_workers)
    inflight: dict[cf.Future, int] = {}
    todo = iter(tasks)

    def refill() -> None:
        while len(inflight) + held() < limit or not inflight:
            item = next(todo, None)
            if item is None:
                return
            key, args = item
            try:
                inflight[executor.submit(_call, fn, *args)] = key
            except BrokenProcessPool:
                raise WorkerError(f"a GPU worker process died before {label} {key} could start") from None

    try:
        refill()
        while inflight:
            done, _ = cf.wait(inflight, return_when=cf.FIRST_COMPLETED)
            for future in sorted(done, key=inflight.__getitem__):
                key = inflight.pop(future)
                yield key, _result(future, f"{label} {key}")
            refill()
    finally:
        for future in inflight:
            future.cancel()
