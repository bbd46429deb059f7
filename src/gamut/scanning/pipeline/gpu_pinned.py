"""Worker processes of :mod:`~gamut.scanning.pipeline.gpu_workers`, each with work of its own: worker
k gets its own shared object and its own stream of tasks (one GPU's stripe of the references and
that stripe's tiles, :mod:`~gamut.scanning.pipeline.stripes`), where :func:`~.gpu_workers.run_in_order`
deals one stream of tasks to whichever worker is free."""
from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from gamut.errors import GamutError
from gamut.scanning.pipeline.gpu_workers import (
    AHEAD,
    READY_POLL_S,
    WINDOW_PER_WORKER,
    GpuWorkers,
    WorkerError,
    _Died,
    _Worker,
)
from gamut.timeline import span


def run_pinned(
    pool: GpuWorkers,
    stream: Callable[[Any, Iterable[tuple[Any, Any]]], Iterator[tuple[Any, Any]]],
    shared: Sequence[Any],
    tasks: Sequence[Iterable[tuple[Any, Any]]],
    *,
    held: Callable[[int], int] = lambda worker: 0,
    window: int = WINDOW_PER_WORKER,
    label: str = "task",
) -> Iterator[tuple[Any, Any]]:
    """Run ``stream(shared[k], taken)`` on worker k over its own tasks ``tasks[k]`` (``(key, args)``
    items; a worker without tasks only starts), and yield ``(key, result)`` as they finish, in
    each worker's order. Worker k keeps at most ``window`` of its tasks in flight or held by the
    caller (``held(k)``: its results not yet used), so a worker far ahead of the others waits.
    A task's error is raised here (every worker is stopped); a worker that dies is a one-line
    :class:`WorkerError`. A worker still starting when the run ends is left to start."""
    if len(shared) != len(tasks) or len(tasks) > len(pool.gpus):
        raise ValueError(f"{len(tasks)} task streams for {len(pool.gpus)} workers")
    pool.start()
    workers = pool.workers[:len(tasks)]
    for worker in workers:
        worker.serving = False
    results: queue.Queue = queue.Queue()
    gate = threading.Condition()
    state = {"stop": False, "running": len(workers)}
    engaged: list[_Worker] = []

    def serve(k: int, worker: _Worker) -> None:
        sent: collections.deque = collections.deque()
        todo = iter(tasks[k])
        try:
            while not worker.ready:
                if state["stop"]:
                    return
                if worker.conn.poll(READY_POLL_S):
                    worker.wait_ready()
            with gate:
                if state["stop"]:
                    return
                engaged.append(worker)
            with span("send stripe", worker=k):
                worker.request(("shared", shared[k], None))
            worker.serving = True
            worker.send(("stream", stream))
            ended = False
            while True:
                while not ended and len(sent) < AHEAD:
                    with gate:  # room for the next task: with nothing in flight, wait for the caller
                        while not sent and held(k) >= window and not state["stop"]:
                            gate.wait(0.05)
                    if state["stop"]:
                        return
                    if len(sent) + held(k) >= window:  # collect a result first
                        break
                    item = next(todo, None)
                    if item is None:
                        worker.send(("end",))
                        ended = True
                    else:
                        worker.send(("task", *item))
                        sent.append(item[0])
                kind, key, value = worker.result()
                if kind == "done":
                    break
                if key != sent[0]:
                    raise GamutError(f"a GPU worker returned {label} {key} for {label} {sent[0]}")
                results.put(("ok", sent.popleft(), value))
        except _Died:
            what = f"{label} {sent[0]}" if sent else "its start-up"
            results.put(("error", None, WorkerError(f"a GPU worker process died while running {what} on GPU "
                                                    f"{worker.gpu} (out of memory, a driver error or a crash)")))
        except BaseException as exc:  # noqa: BLE001 (raised by the caller's thread)
            results.put(("error", None, exc))
        finally:
            results.put(("ended", None, None))

    threads = [threading.Thread(target=serve, args=(k, w), name=f"gamut-gpu{w.gpu}-feed", daemon=True)
               for k, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    finished = False
    try:
        while state["running"]:
            kind, key, value = results.get()
            if kind == "error":
                raise value
            if kind == "ended":
                state["running"] -= 1
                continue
            yield key, value
            with gate:
                gate.notify_all()
        finished = True
    finally:
        with gate:
            state["stop"] = True
            gate.notify_all()
            stopped = list(pool.workers) if not finished else [w for w in engaged if not w.serving]
        for worker in stopped:
            worker.process.kill()
        for thread in threads:
            thread.join()
        if stopped:
            pool.close()
