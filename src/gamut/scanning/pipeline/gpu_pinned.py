"""Worker processes of :mod:`~gamut.scanning.pipeline.gpu_workers`, each with work of its own: worker
k gets its own shared object and its own stream of tasks (one GPU's stripe of the references and
that stripe's tiles, :mod:`~gamut.scanning.pipeline.stripes`), where :func:`~.gpu_workers.run_in_order`
deals one stream of tasks to whichever worker is free."""
from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from gamut.scanning.pipeline.gpu_workers import AHEAD, WINDOW_PER_WORKER, GpuWorkers, _Run, _Worker
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
    prepare: Callable[[Any], Any] | None = None,
) -> Iterator[tuple[Any, Any]]:
    """Run ``stream(shared[k], taken)`` on worker k over its own tasks ``tasks[k]`` (``(key, args)``
    items; a worker without tasks only starts), and yield ``(key, result)`` as they finish, in
    each worker's order. Worker k keeps at most ``window`` of its tasks in flight or held by the
    caller (``held(k)``: its results not yet used), so a worker far ahead of the others waits.
    ``prepare(shared[k])`` runs on worker k as its shared object arrives (beside its warm-up).
    A task's error is raised here (every worker is stopped); a worker that dies is a one-line
    :class:`WorkerError`. A worker still starting when the run ends is left to start."""
    if len(shared) != len(tasks) or len(tasks) > len(pool.gpus):
        raise ValueError(f"{len(tasks)} task streams for {len(pool.gpus)} workers")
    pool.start()
    workers = pool.workers[:len(tasks)]
    for worker in workers:
        worker.serving = False
    run = _Run(label)
    running = [len(workers)]

    def serve(k: int, worker: _Worker) -> None:
        sent: collections.deque = collections.deque()
        todo = iter(tasks[k])
        try:
            with span("send stripe", worker=k):
                if not run.engage(worker, shared[k], prepare, stream):
                    return
            ended = False
            while True:
                while not ended and len(sent) < AHEAD:
                    with run.gate:  # room for the next task: with nothing in flight, wait for the caller
                        while not sent and held(k) >= window and not run.stop:
                            run.gate.wait(0.05)
                    if run.stop:
                        return
                    if len(sent) + held(k) >= window:  # collect a result first
                        break
                    ended = run.hand(worker, next(todo, None), sent)
                if not run.collect(worker, sent):
                    break
        except BaseException as exc:  # noqa: BLE001 (raised by the caller's thread)
            run.failed(worker, sent, exc)
        finally:
            run.results.put(("ended", None, None))

    threads = [threading.Thread(target=serve, args=(k, w), name=f"gamut-gpu{w.gpu}-feed", daemon=True)
               for k, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    finished = False
    try:
        while running[0]:
            kind, key, value = run.results.get()
            if kind == "error":
                raise value
            if kind == "ended":
                running[0] -= 1
                continue
            yield key, value
            with run.gate:
                run.gate.notify_all()
        finished = True
    finally:
        run.end(pool, threads, finished)
