"""Several GPUs in one run (``--gpus 0,1``): worker processes on the GPUs
(:func:`~gamut.scanning.pipeline.lanes.worker_lanes`: two on each of several distinct GPUs, or the
list as given when it names a GPU twice, ``0,0``), each pinned to its GPU with
``CUDA_VISIBLE_DEVICES`` before it imports CuPy (it sees its GPU as device 0) and driving it under
its own interpreter lock, while this process writes. The striped runner gives each worker one
stripe of the references (:mod:`~gamut.scanning.pipeline.striped`); with ``--run-dir`` or
``-restrict``, each takes the next partition when it is free (:func:`run_in_order`, which has the
role of :func:`gamut.cluster.run_in_order`) and the partitioned runner writes their data in
partition order. Either way the output is byte for byte that of one process.

A worker's large results (a tile's or partition's rendered bytes) come back in shared memory, not
through the pipe (:mod:`~gamut.scanning.pipeline.handoff`).

The command line starts the workers first (:func:`prestarted`), so that their imports and CUDA
contexts overlap this process's own start-up.
"""
from __future__ import annotations

import collections
import contextlib
import contextvars
import itertools
import multiprocessing.process
import os
import pickle
import queue
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from gamut.errors import GamutError, UsageError
from gamut.scanning.pipeline.handoff import send_fds, share, unshare
from gamut.timeline import span

#: Tasks in flight per process (this one and each worker), plus results held out of order.
WINDOW_PER_WORKER = 2


#: Results (bytes, or bytes in a tuple) of at least this size come back in shared memory.
SHARED_MIN_BYTES = 1 << 20


class WorkerError(GamutError):
    """A GPU worker process died (or could not start); the message says which task it ran
    (callers add their advice: :meth:`advised`)."""

    def advised(self, advice: str) -> WorkerError:
        return WorkerError(f"{self}; {advice}")


class _Died(Exception):
    """The worker's end of the pipe closed: the process is gone."""


def _worker_main(conn, gpu: int, share_from: int) -> None:
    """A worker process: see only GPU ``gpu``, take the command's heap settings, start what every scan needs (CuPy and the CUDA
    context on a thread, the scan's modules here), say it is ready, then serve requests:
    ``("shared", obj, warm)`` keeps ``obj`` (and runs ``warm(obj)``), replying ``("ok", value)``;
    ``("stream", fn)`` replies ``("ok", key, value)`` for each ``(key, value)`` of
    ``fn(obj, tasks)``, where ``tasks`` are the ``("task", key, args)`` messages up to ``("end",)``,
    then ``("done", None, None)``. A failure replies ``("error", ..., exception)``; None ends the
    process. Results of ``share_from`` bytes or more come back in shared memory."""
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is this process's parent's to handle (it stops us)
    from gamut.io.heap import reuse_large_buffers
    from gamut.timeline import mark

    mark("worker starts", gpu=gpu)
    reuse_large_buffers()  # a streaming process of its own, as the command's (see gamut.io.heap)
    from gamut.cuda.device import prewarm

    context = prewarm(0)
    import gamut.scanning.pipeline.partitions  # noqa: F401  (NumPy, Numba and the scan's code)

    mark("worker ready", gpu=gpu)
    conn.send(("ready", None))
    from gamut.scanning.pipeline.stripes import warm_worker

    # The warm-up runs while this process' parent reads the inputs, and while this thread takes
    # its shared object (a stripe: its references are read meanwhile); a stream waits for its end.
    warming = threading.Thread(target=warm_worker, args=(context,), name="gamut-warm-up", daemon=True)
    warming.start()
    shared = None
    while True:
        try:
            conn.poll(None)  # (idle until the next request; its transfer and unpickling timed below)
            with span("worker receives"):
                message = conn.recv()
        except (EOFError, OSError):  # this process's parent is gone
            return
        if message is None:
            return
        try:
            if message[0] == "shared":
                shared, warm = message[1], message[2]
                _reply(conn, ("ok", warm(shared) if warm is not None else None))
            else:
                warming.join()
                inbox = _Inbox(conn)
                for key, value in message[1](shared, inbox):
                    fds: list[int] = []
                    try:
                        _reply(conn, ("ok", key, share(value, fds, share_from)), fds)
                    finally:
                        for fd in fds:
                            os.close(fd)
                _reply(conn, ("done", None, None))
        except _ParentGone:
            return
        except Exception as exc:  # noqa: BLE001 (handed to the parent, which raises it and stops us)
            try:
                _reply(conn, ("error", None, _picklable(exc)))
            except _ParentGone:
                return


class _ParentGone(Exception):
    """A worker's pipe to its parent is closed."""


def _reply(conn, message: tuple, fds: list[int] | None = None) -> None:
    try:
        conn.send(message)
        if fds:
            send_fds(conn, fds)
    except OSError:
        raise _ParentGone() from None


class _Inbox:
    """The tasks of a stream, as ``(key, args)``: read from the parent's ``("task", key, args)``
    messages until ``("end",)``; :meth:`close` (the stream failed) makes a read that waits end."""

    def __init__(self, conn) -> None:
        self.conn = conn
        self.closed = False

    def __iter__(self) -> _Inbox:
        return self

    def __next__(self) -> tuple[Any, tuple]:
        try:
            while not self.closed and not self.conn.poll(0.05):
                pass
            if self.closed:
                raise StopIteration
            message = self.conn.recv()
        except (EOFError, OSError):
            raise _ParentGone() from None
        if message[0] != "task":
            self.closed = True
            raise StopIteration
        return message[1], message[2]

    def close(self) -> None:
        self.closed = True


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        return GamutError(f"{type(exc).__name__}: {exc}")


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, ctx, gpu: int, share_from: int) -> None:
        self.gpu = gpu
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, gpu, share_from), name=f"gamut-gpu{gpu}", daemon=True)
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

    def send(self, message: tuple) -> None:
        try:
            self.conn.send(message)
        except (OSError, ValueError):
            raise _Died() from None

    def request(self, message: tuple) -> Any:
        """Send ``message`` and return the value of the reply (raising the worker's error)."""
        self.send(message)
        reply = self.receive()
        if reply[0] == "error":
            raise reply[-1]
        return reply[-1]

    def result(self) -> tuple[str, Any, Any]:
        """The next reply of a stream, ``(kind, key, value)``, its shared memory mapped here (an
        error the worker reports is raised)."""
        kind, key, value = self.receive()
        if kind == "error":
            raise value
        try:
            return kind, key, unshare(value, self.conn)
        except OSError:
            raise _Died() from None

    def kill(self) -> None:
        """Send the process SIGKILL (its results, if any, are delivered: nothing of it needs an
        orderly end)."""
        if self.process.is_alive():
            self.process.kill()

    def stop(self) -> None:
        """Kill the process and wait for it to end."""
        self.kill()
        self.process.join()
        self.conn.close()

    def leave(self) -> None:
        """Kill the process and leave it to the system: this process' exit does not wait for it
        (multiprocessing's exit handler joins every child it knows), and the process left ends
        after this one, its parent then being the system's."""
        self.kill()
        self.conn.close()
        children = getattr(multiprocessing.process, "_children", None)
        if isinstance(children, set):
            children.discard(self.process)


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
        self.share_from = SHARED_MIN_BYTES

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
            self.workers = [_Worker(ctx, gpu, self.share_from) for gpu in self.gpus]
        return self

    def close(self, wait: bool = True) -> None:
        """Stop the workers: every one is killed before any is waited for (one after the other,
        that was 0.5 s of a 4-worker scan's end on 2x H200). ``wait=False`` (a command whose
        process ends next): none is waited for, the system takes them down while this process
        exits (0.39 s for four workers' CUDA contexts on 2x H200, after every output was complete)."""
        workers, self.workers = self.workers, []
        with span("stop workers"):
            for worker in workers:
                worker.kill()
            for worker in workers:
                worker.stop() if wait else worker.leave()

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
def prestarted(gpus: Sequence[int] | None, ending: bool = False) -> Iterator[GpuWorkers | None]:
    """Start workers on ``gpus`` (if any) now, for a run in this context to use
    (:func:`workers_for`), and stop them when the context ends (``ending``: this process ends
    next, and does not wait for them: :meth:`GpuWorkers.close`; inside :func:`kept_workers`:
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
            pool.close(wait=not ending)


def workers_for(gpus: Sequence[int]) -> tuple[GpuWorkers, bool]:
    """Workers on ``gpus``: those started by :func:`prestarted` when they match, else new ones;
    and whether the caller owns them (must close them)."""
    pool = _PRESTARTED.get()
    if pool is not None and pool.gpus == [int(g) for g in gpus] and pool.workers:
        return pool, False
    return GpuWorkers(gpus), True


#: How often a worker's feed looks whether the run has ended while the worker starts, in seconds.
READY_POLL_S = 0.05

#: Tasks sent ahead to a worker: the one it computes and the next, which its pipeline begins
#: before the first is written.
AHEAD = 2


class OneAtATime:
    """A :func:`run_in_order` stream of ``fn(obj, *args)`` for each task, one at a time (for a
    task function that has no pipeline to keep full)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, obj: Any, taken: Iterable[tuple[Any, tuple]]) -> Iterator[tuple[Any, Any]]:
        for key, args in taken:
            yield key, self.fn(obj, *args)


_BUSY = object()


class _Run:
    """What a run's feeder threads (one per worker) and its caller share: the results queue, the
    gate and stop flag, and the workers engaged. :meth:`engage` takes a worker past its start-up and
    gives it its shared object and stream function; :meth:`collect` takes one of its results;
    :meth:`failed` reports a feeder's error; :meth:`end` stops what must stop when the run ends."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.results: queue.Queue = queue.Queue()
        self.gate = threading.Condition()
        self.stop = False
        self.engaged: list[_Worker] = []

    def engage(self, worker: _Worker, shared: Any, warm: Callable | None, stream: Callable) -> bool:
        """Wait for ``worker``'s start-up (a run that ends first leaves it starting: a kept one serves
        the next), give it ``shared`` (running ``warm``) and the stream; False if the run stopped."""
        while not worker.ready:
            if self.stop:
                return False
            if worker.conn.poll(READY_POLL_S):
                worker.wait_ready()
        with self.gate:
            if self.stop:
                return False
            self.engaged.append(worker)
        worker.request(("shared", shared, warm))
        worker.serving = True
        worker.send(("stream", stream))
        return True

    @staticmethod
    def hand(worker: _Worker, item: tuple | None, sent: collections.deque) -> bool:
        """Send the worker its next task ``(key, args)`` (noted in ``sent``), or the end of its
        stream when ``item`` is None; True once the end is sent."""
        if item is None:
            worker.send(("end",))
            return True
        worker.send(("task", *item))
        sent.append(item[0])
        return False

    def collect(self, worker: _Worker, sent: collections.deque) -> bool:
        """The worker's next result, for the first of ``sent`` (queued); False once its stream is done."""
        kind, key, value = worker.result()
        if kind == "done":
            return False
        if key != sent[0]:
            raise GamutError(f"a GPU worker returned {self.label} {key} for {self.label} {sent[0]}")
        self.results.put(("ok", sent.popleft(), value))
        return True

    def failed(self, worker: _Worker, sent: collections.deque, exc: BaseException) -> None:
        if isinstance(exc, _Died):
            what = f"{self.label} {sent[0]}" if sent else "its start-up"
            exc = WorkerError(f"a GPU worker process died while running {what} on GPU {worker.gpu} "
                              "(out of memory, a driver error or a crash)")
        self.results.put(("error", None, exc))

    def end(self, pool: GpuWorkers, threads: list[threading.Thread], finished: bool) -> None:
        """After a failure every worker stops; after a success, those still busy with their shared
        object (not awaited). A worker still starting is left to start (a kept one serves the next run)."""
        with self.gate:
            self.stop = True
            self.gate.notify_all()
            stopped = list(pool.workers) if not finished else [w for w in self.engaged if not w.serving]
        for worker in stopped:
            worker.process.kill()
        for thread in threads:
            thread.join()
        if stopped:
            pool.close()


def run_in_order(
    pool: GpuWorkers,
    stream: Callable[[Any, Iterable[tuple[Any, tuple]]], Iterator[tuple[Any, Any]]],
    shared: Any,
    tasks: Iterable[tuple[int, tuple]],
    *,
    warm: Callable | None = None,
    held: Callable[[], int] = lambda: 0,
    label: str = "task",
) -> Iterator[tuple[int, Any]]:
    """Run the ``(key, args)`` of ``tasks`` through ``stream`` on the workers (each first gets
    ``shared`` and runs ``warm(shared)``, if given, then runs ``stream(shared, taken)``); yield
    ``(key, result)`` as tasks finish (in any order). ``stream(obj, taken)`` yields ``(key,
    result)`` for each ``(key, args)`` of ``taken``, in order, reading the next task only when it
    is ready for it (so that it may begin it before the last one's result is out): a worker gets
    its next task before it finishes one (:class:`OneAtATime` makes a stream of a task function).
    Whoever is free takes the next task. Tasks in flight plus results the caller holds
    out of order (``held()``) stay within :data:`WINDOW_PER_WORKER` per process. An error a task
    raises is raised here (and every worker is stopped); a worker that dies is a one-line
    :class:`WorkerError`. A worker still starting when the run ends is left to start: whoever owns
    the pool stops it, or (kept by ``gamut serve``) it serves the next run."""
    pool.start()
    for worker in pool.workers:  # kept workers (gamut serve) served an earlier run
        worker.serving = False
    todo = iter(tasks)
    first = next(todo, None)
    if first is None:  # nothing to run: no waiting for the workers (those still starting go on)
        return
    todo = itertools.chain([first], todo)
    limit = max(1, WINDOW_PER_WORKER * pool.n_workers)
    run = _Run(label)
    state = {"inflight": 0, "exhausted": False}

    def take(wait: bool) -> Any:
        """The next task; None when there are no more (or the run stops); when the window is full,
        ``_BUSY`` (unless ``wait``: then wait for room)."""
        with run.gate:
            while not run.stop:
                if state["inflight"] + held() < limit or state["inflight"] == 0:
                    item = next(todo, None)
                    if item is None:
                        state["exhausted"] = True
                        run.results.put(("wake", None, None))
                        return None
                    state["inflight"] += 1
                    return item
                if not wait:
                    return _BUSY
                run.gate.wait()
            return None

    def serve_worker(worker: _Worker) -> None:
        sent: collections.deque = collections.deque()
        try:
            if not run.engage(worker, shared, warm, stream):
                return
            ended = False
            while True:
                while not ended and len(sent) < AHEAD:
                    # Wait for room only with nothing of ours in flight: our results must come in.
                    item = take(not sent)
                    if item is _BUSY:
                        break
                    ended = run.hand(worker, item, sent)
                if not run.collect(worker, sent):
                    break
        except BaseException as exc:  # noqa: BLE001 (raised by the caller's thread)
            run.failed(worker, sent, exc)

    threads = [threading.Thread(target=serve_worker, args=(w,), name=f"gamut-gpu{w.gpu}-feed", daemon=True)
               for w in pool.workers]
    for thread in threads:
        thread.start()
    finished = False
    try:
        while not (state["exhausted"] and state["inflight"] == 0):
            kind, key, value = run.results.get()
            if kind == "error":
                raise value
            if kind == "ok":
                yield key, value
                with run.gate:
                    state["inflight"] -= 1
                    run.gate.notify_all()
        finished = True
    finally:
        run.end(pool, threads, finished)
