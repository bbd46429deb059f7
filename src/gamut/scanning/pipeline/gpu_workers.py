"""Several GPUs in one run (``--gpus 0,1``): this process scans on the first GPU, on a thread of its
own, from the start; a worker process on each other GPU, pinned to it with ``CUDA_VISIBLE_DEVICES``
before it imports CuPy (it sees its GPU as device 0), joins in as soon as it is ready, and each
drives its device under its own interpreter lock. Every one of them takes the next partition when
it is free (:func:`run_in_order`, which has the role of :func:`gamut.cluster.run_in_order`), and
the partitioned runner writes their data in partition order: the output is byte for byte that of
one process.

The command line starts the workers first (:func:`prestarted`), so that their imports and CUDA
contexts overlap this process's own start-up. A GPU id may be named twice (``--gpus 0,0``): this
process and a worker then share that GPU.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import pickle
import queue
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from gamut.errors import GamutError, UsageError

#: Tasks in flight per process (this one and each worker), plus results held out of order.
WINDOW_PER_WORKER = 2


class WorkerError(GamutError):
    """A GPU worker process died (or could not start); the message says which task it ran
    (callers add their advice: :meth:`advised`)."""

    def advised(self, advice: str) -> WorkerError:
        return WorkerError(f"{self}; {advice}")


class _Died(Exception):
    """The worker's end of the pipe closed: the process is gone."""


def _worker_main(conn, gpu: int) -> None:
    """A worker process: see only GPU ``gpu``, start what every scan needs (CuPy and the CUDA
    context on a thread, the scan's modules here), say it is ready, then serve requests:
    ``("shared", obj, warm)`` keeps ``obj`` (and runs ``warm(obj)``), ``("call", fn, args)``
    replies with ``fn(obj, *args)``; None ends it. Replies are ``("ok", value)`` or
    ``("error", exception)``."""
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is this process's parent's to handle (it stops us)
    from gamut.cuda.device import prewarm

    prewarm(0)
    import gamut.scanning.pipeline.partitions  # noqa: F401  (NumPy, Numba and the scan's code)

    conn.send(("ready", None))
    shared = None
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # this process's parent is gone
            return
        if message is None:
            return
        try:
            if message[0] == "shared":
                shared, warm = message[1], message[2]
                value = warm(shared) if warm is not None else None
            else:
                value = message[1](shared, *message[2])
            reply = ("ok", value)
        except Exception as exc:  # noqa: BLE001 (handed to the parent, which raises it)
            reply = ("error", _picklable(exc))
        conn.send(reply)


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        return GamutError(f"{type(exc).__name__}: {exc}")


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, ctx, gpu: int) -> None:
        self.gpu = gpu
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, gpu), name=f"gamut-gpu{gpu}", daemon=True)
        self.process.start()
        child.close()
        self.ready = False  # started (imports, CUDA context)
        self.serving = False  # and given its shared object: idle or running tasks

    def receive(self) -> tuple[str, Any]:
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            raise _Died() from None

    def wait_ready(self) -> None:
        self.receive()
        self.ready = True

    def request(self, message: tuple) -> Any:
        try:
            self.conn.send(message)
        except (OSError, ValueError):
            raise _Died() from None
        kind, value = self.receive()
        if kind == "error":
            raise value
        return value

    def stop(self) -> None:
        """Kill the process (its results, if any, are delivered: nothing of it needs an orderly end)."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()


class GpuWorkers:
    """Worker processes, one per entry of ``gpus`` (started by :meth:`start`, with the ``spawn``
    method, each seeing its GPU as device 0); ``close()`` stops them. Used in place of a Dask
    :class:`~gamut.cluster.Connection` by the partitioned runner."""

    def __init__(self, gpus: Sequence[int]) -> None:
        if not gpus:
            raise ValueError("GpuWorkers needs at least one GPU id")
        self.gpus = [int(g) for g in gpus]
        self.description = f"{len(self.gpus)} GPU worker{'s' if len(self.gpus) > 1 else ''} ({','.join(map(str, self.gpus))})"
        self.workers: list[_Worker] = []

    @property
    def n_workers(self) -> int:
        return len(self.gpus)

    def start(self) -> GpuWorkers:
        """Start the processes (once)."""
        if not self.workers:
            import multiprocessing

            from gamut.cluster import unguarded_main_call

            unguarded = unguarded_main_call()
            if unguarded is not None:  # spawn re-runs the main script in each worker, which would fail
                script, line = unguarded
                raise UsageError(f"{script}:{line}: a scan on several GPUs starts worker processes, which "
                                 "re-run the main script: put this call under 'if __name__ == \"__main__\":'")
            ctx = multiprocessing.get_context("spawn")
            self.workers = [_Worker(ctx, gpu) for gpu in self.gpus]
        return self

    def close(self) -> None:
        """Stop the workers."""
        workers, self.workers = self.workers, []
        for worker in workers:
            worker.stop()

    def alive(self) -> bool:
        """Whether the workers are started and none has ended."""
        return bool(self.workers) and all(w.process.is_alive() for w in self.workers)


class _Kept(dict):
    """Pools kept by GPU list, and how to start one: inside ``detached()`` (the server's own
    standard streams in place of the command's, which a process that outlives the command must
    not hold: a reader of the command's output waits for every writer to close it)."""

    def __init__(self, detached: Callable[[], contextlib.AbstractContextManager]) -> None:
        super().__init__()
        self.detached = detached


#: Workers the command line started before the job was known (:func:`prestarted`).
_PRESTARTED: contextvars.ContextVar[GpuWorkers | None] = contextvars.ContextVar("gamut_gpu_workers", default=None)
#: Inside :func:`kept_workers`: the pools kept from one command to the next, by GPU list.
_KEPT: contextvars.ContextVar[_Kept | None] = contextvars.ContextVar("gamut_kept_gpu_workers", default=None)


@contextlib.contextmanager
def kept_workers(detached: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
                 ) -> Iterator[None]:
    """While inside (a ``gamut serve`` process), the workers :func:`prestarted` starts outlive the
    command: the next command on the same GPUs finds them started, with their CUDA contexts,
    compiled code and engines. They are started inside ``detached()`` and stopped when the block
    ends."""
    kept = _Kept(detached)
    token = _KEPT.set(kept)
    try:
        yield
    finally:
        _KEPT.reset(token)
        for pool in kept.values():
            pool.close()


@contextlib.contextmanager
def prestarted(gpus: Sequence[int] | None) -> Iterator[GpuWorkers | None]:
    """Start workers on ``gpus`` (if any) now, for a run in this context to use
    (:func:`workers_for`), and stop them when the context ends (inside :func:`kept_workers`:
    reuse the kept ones, and keep them)."""
    if not gpus:
        yield None
        return
    kept = _KEPT.get()
    key = tuple(int(g) for g in gpus)
    pool = kept.get(key) if kept is not None else None
    if pool is None or not pool.alive():
        if pool is not None:
            pool.close()
        with kept.detached() if kept is not None else contextlib.nullcontext():
            pool = GpuWorkers(gpus).start()
        if kept is not None:
            kept[key] = pool
    token = _PRESTARTED.set(pool)
    try:
        yield pool
    finally:
        _PRESTARTED.reset(token)
        if kept is None:
            pool.close()


def workers_for(gpus: Sequence[int]) -> tuple[GpuWorkers, bool]:
    """Workers on ``gpus``: those started by :func:`prestarted` when they match, else new ones;
    and whether the caller owns them (must close them)."""
    pool = _PRESTARTED.get()
    if pool is not None and pool.gpus == [int(g) for g in gpus] and pool.workers:
        return pool, False
    return GpuWorkers(gpus), True


def run_in_order(
    pool: GpuWorkers,
    fn: Callable,
    shared: Any,
    tasks: Iterable[tuple[int, tuple]],
    *,
    local: Any = None,
    warm: Callable | None = None,
    held: Callable[[], int] = lambda: 0,
    label: str = "task",
) -> Iterator[tuple[int, Any]]:
    """Run ``fn(shared, *args)`` for each ``(key, args)`` of ``tasks`` on the workers (each first
    gets ``shared`` and runs ``warm(shared)``, if given) and, with ``local``, as ``fn(local, *args)``
    on a thread of this process from the first task on; yield ``(key, result)`` as tasks finish (in
    any order). Whoever is free takes the next task. Tasks in flight plus results the caller holds
    out of order (``held()``) stay within :data:`WINDOW_PER_WORKER` per process. An error a task
    raises is raised here; a worker that dies is a one-line :class:`WorkerError`."""
    pool.start()
    for worker in pool.workers:  # kept workers (gamut serve) served an earlier run
        worker.serving = False
    limit = max(1, WINDOW_PER_WORKER * (pool.n_workers + (local is not None)))
    results: queue.Queue = queue.Queue()
    gate = threading.Condition()
    state = {"inflight": 0, "exhausted": False, "stop": False}
    todo = iter(tasks)

    def take() -> tuple[int, tuple] | None:
        with gate:
            while not state["stop"]:
                if state["inflight"] + held() < limit or state["inflight"] == 0:
                    item = next(todo, None)
                    if item is None:
                        state["exhausted"] = True
                        results.put(("wake", None, None))
                        return None
                    state["inflight"] += 1
                    return item
                gate.wait()
            return None

    def serve_worker(worker: _Worker) -> None:
        key = None
        try:
            if not worker.ready:
                worker.wait_ready()
            worker.request(("shared", shared, warm))
            worker.serving = True
            while (item := take()) is not None:
                key, args = item
                results.put(("ok", key, worker.request(("call", fn, args))))
                key = None
        except _Died:
            what = "its start-up" if key is None else f"{label} {key}"
            results.put(("error", key, WorkerError(f"a GPU worker process died while running {what} on GPU "
                                                   f"{worker.gpu} (out of memory, a driver error or a crash)")))
        except BaseException as exc:  # noqa: BLE001 (raised by the caller's thread)
            results.put(("error", key, exc))

    def serve_here() -> None:
        key = None
        try:
            while (item := take()) is not None:
                key, args = item
                results.put(("ok", key, fn(local, *args)))
        except BaseException as exc:  # noqa: BLE001 (raised by the caller's thread)
            results.put(("error", key, exc))

    threads = [threading.Thread(target=serve_worker, args=(w,), name=f"gamut-gpu{w.gpu}-feed", daemon=True)
               for w in pool.workers]
    if local is not None:
        threads.append(threading.Thread(target=serve_here, name="gamut-gpu-here", daemon=True))
    for thread in threads:
        thread.start()
    finished = False
    try:
        while not (state["exhausted"] and state["inflight"] == 0):
            kind, key, value = results.get()
            if kind == "error":
                raise value
            if kind == "ok":
                yield key, value
                with gate:
                    state["inflight"] -= 1
                    gate.notify_all()
        finished = True
    finally:
        with gate:
            state["stop"] = True
            gate.notify_all()
        # Workers still starting, or busy with a task nobody waits for, are stopped, not awaited.
        stopped = [w for w in pool.workers if not finished or not w.serving]
        for worker in stopped:
            worker.process.kill()
        for thread in threads:
            thread.join()
        if stopped:
            pool.close()
