"""Partitions of a scan, and what a worker does with one.

A partition (:class:`~gamut.scanning.pipeline.pairs.Partition`) is a run of consecutive pairs of
miRanda's output order (``start..stop-1``, about ``partition_cells`` cells). Its output depends
only on its pairs, its running counter (``counter0 = start``) and the last query of the partition
before it, so any process can render it: :func:`compute_partition` runs the job's engine and a
sink of each of the job's formats, as a single process would, and returns the partition's data
(the bytes it adds to the output; with several formats, a tuple of each format's data, the scan
run once for all).
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import queue
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gamut.io.threads import numba_threads
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.pipeline.pairs import Partition, ScanInput
from gamut.scanning.pipeline.scan_loop import scan_chunks

#: Default partition sizes (cells) per device; a run directory keeps the partitioning it began with.
PARTITION_CELLS = {"cpu": 2_000_000_000, "cuda": 32_000_000_000}
PARTITION_PAIRS = 200_000

#: Partitions per process of a multi-GPU run (a late or slow GPU leaves the others at most one
#: partition's work), and the most cells and pairs in one (its data is held in memory until written).
GPU_PARTS_PER_PROCESS = 4
GPU_PARTITION_MAX = {"cells": 128_000_000_000, "pairs": 8_000_000}


def gpu_partitioning(scan_input: ScanInput, processes: int) -> dict[str, int]:
    """Partition sizes of a run on ``processes`` GPU processes: about :data:`GPU_PARTS_PER_PROCESS`
    partitions each, so that every partition is scanned in chunks the engine pipelines (the
    default partitions of a Dask cluster hold one or two GPU chunks)."""
    count = max(1, processes * GPU_PARTS_PER_PROCESS)
    cells = -(-max(scan_input.total_cells(), 1) // count)
    pairs = -(-max(scan_input.n_pairs, 1) // count)
    return {"cells": min(max(cells, PARTITION_CELLS["cuda"] // 8), GPU_PARTITION_MAX["cells"]),
            "pairs": min(max(pairs, PARTITION_PAIRS), GPU_PARTITION_MAX["pairs"])}


def plan_partitions(scan_input: ScanInput, cells: int, pairs: int) -> list[Partition]:
    """Cut the scan into partitions of about ``cells`` cells and at most ``pairs`` pairs."""
    out: list[Partition] = []
    prev = -1
    for k, (start, stop) in enumerate(scan_input.spans(int(cells), int(pairs))):
        out.append(Partition(k, start, stop, scan_input.span_cells(start, stop), prev))
        prev = scan_input.query_of(stop - 1)
    return out


@dataclass(frozen=True)
class PartitionTask:
    """What every worker needs to render partitions: the job (as the workers run it: no cluster),
    the sink class of each of its formats (``job.formats``, in that order) and the engine factory
    (``make_engine(device, threads, gpus)``)."""

    job: ScanJob
    sinks: tuple[type, ...]
    make_engine: Callable[..., Any]
    token: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)


#: Per process: engines by (factory, device, threads, gpus), and the sinks of the current task.
_ENGINES: dict[tuple, Any] = {}
_SINKS: dict[str, list] = {}


def engine_key(task: PartitionTask) -> tuple:
    """What a process keeps its engines by: the task's engine factory and its job's device, threads
    and GPUs (a stripe worker's warm-up makes the engine of this key that its scans will ask for)."""
    job = task.job
    return (task.make_engine, job.device, job.threads, str(job.gpus))


def task_engine(task: PartitionTask):
    key = engine_key(task)
    engine = _ENGINES.get(key)
    if engine is None:
        job = task.job
        engine = _ENGINES[key] = task.make_engine(job.device, job.threads, job.gpus)
    return engine


def task_sinks(task: PartitionTask) -> list:
    """The task's sinks, one per format (their id columns are built once per process and task; a
    :class:`~gamut.scanning.pipeline.stripes.StripeTask` too)."""
    sinks = _SINKS.get(task.token)
    if sinks is None:
        _SINKS.clear()
        job = task.job
        specs = [job.for_output(next(o for o in job.targets if o.format == fmt)) for fmt in job.formats]
        sinks = _SINKS[task.token] = [cls(spec) for cls, spec in zip(task.sinks, specs)]
    return sinks


def chunk_stops(scan_input: ScanInput, cells: int, pairs: int) -> np.ndarray:
    """Pair numbers ending each chunk of a single-process run in chunks of ``cells`` cells and at
    most ``pairs`` pairs (where Parquet's row groups end: :attr:`Sink.regroups`)."""
    lengths = [b - a for a, b in scan_input.spans(cells, pairs)]
    return np.cumsum(np.asarray(lengths, np.int64))


def engine_chunking(task: PartitionTask) -> tuple[int, int]:
    """The chunk sizes (cells, pairs) a single process with this task's engine uses."""
    engine = task_engine(task)
    return int(engine.preferred_chunk_cells), int(engine.preferred_chunk_pairs)


def compute_partition(task: PartitionTask, index: int, start: int, stop: int, prev_query: int) -> Any:
    """Scan partition ``index`` (pairs ``start..stop-1``) and return its data, as the task's sink
    renders it (several formats: a tuple of each one's data, in ``task.job.formats`` order)."""
    ((_, data),) = compute_partitions(task, [(index, (index, start, stop, prev_query))])
    return data


def compute_partitions(task: PartitionTask, taken: Iterable[tuple[Any, tuple[int, int, int, int]]]
                       ) -> Iterator[tuple[Any, Any]]:
    """:func:`compute_partition` of each ``(key, (index, start, stop, prev_query))`` of ``taken``,
    as ``(key, data)`` in that order, through one pipeline: the engine aligns the next partition's
    first chunks while this one's last are rendered, as in a single process's scan. (Computed one
    at a time, a partition of a few chunks leaves the engine idle while its first chunk's hits are
    found and its last chunk is written: a third of the time, for four chunks.) ``taken`` is read
    only when the pipeline needs the next partition's chunks (on the pipeline's thread); its
    ``close()``, if it has one, is called when the partitions end, or fail."""
    job = task.job
    si = job.scan_input
    engine = task_engine(task)
    cells, pairs = engine.preferred_chunk_cells, engine.preferred_chunk_pairs
    begun: deque = deque()  # (key, prev_query, chunks) of each partition whose chunks entered the pipeline

    def chunk_source() -> Iterator[tuple[np.ndarray, int | None]]:
        for key, (_index, start, stop, prev_query) in taken:
            spans = list(si.spans(cells, pairs, start, stop))
            begun.append((key, prev_query, len(spans)))
            for k, (a, b) in enumerate(spans):
                yield si.pair_range(a, b), (start if k == 0 else None)

    results = scan_chunks(si, engine, threads=job.threads, chunks=chunk_source())
    sinks = task_sinks(task)
    try:
        for first in results:
            key, prev_query, count = begun.popleft()
            rest = itertools.islice(results, count - 1)
            data = render_all(sinks, itertools.chain([first], rest), prev_query, job.threads)
            for _ in rest:  # a sink that stopped early: the partition's chunks end here all the same
                pass
            yield key, (data[0] if len(data) == 1 else data)
    finally:  # a read of ``taken`` that waits (the pipeline's thread) must end before the pipeline can
        close = getattr(taken, "close", None)
        if close is not None:
            close()
        results.close()


def abandon_on_failure(stack: contextlib.ExitStack, sinks: Sequence[Any]) -> None:
    """If the block of ``stack`` fails, close those of ``sinks`` that need a file (Parquet's
    writer) quietly first: their temporary files are being discarded, and a writer left open
    would close itself into a closed file when collected (a traceback on standard error). The
    others are left as they are (a text sink would add its footer to standard output)."""
    def abandon(kind, value, traceback) -> bool:
        if kind is not None:
            for sink in (s for s in sinks if getattr(s, "needs_file", False)):
                with contextlib.suppress(Exception):
                    sink.close()
        return False

    stack.push(abandon)


_END = object()


def render_all(sinks: Sequence[Any], chunks: Iterator, prev_query: int, threads: int | None = None,
               tile: bool = False) -> tuple:
    """Each sink's ``render`` of the same chunks (``tile``: its ``render_tile``, for a tile of a
    stripe), the chunks made once: the first sink renders in this thread, each other one on a
    thread of its own that gets every chunk as it comes. The sinks take turns (one renders while
    the others wait for the next chunk), so no two format at once, as with one sink: memory stays
    bounded by a chunk or two, and Numba's kernels are never called from two threads at once."""
    if len(sinks) == 1:
        return (_render(sinks[0], chunks, prev_query, tile),)
    feeds = [_Feed(sink, prev_query, threads, tile) for sink in sinks[1:]]

    def broadcast() -> Iterator:
        for item in chunks:
            for feed in feeds:
                feed.give(item)
            yield item

    first = None
    try:
        items = broadcast()
        first = _render(sinks[0], items, prev_query, tile)
        for _ in items:  # a sink that stopped early: the others still get every chunk
            pass
    finally:
        for feed in feeds:
            feed.finish()
    return (first, *(feed.result() for feed in feeds))


def _render(sink: Any, chunks: Iterator, prev_query: int, tile: bool) -> Any:
    return sink.render_tile(chunks) if tile else sink.render(chunks, prev_query)


class _Feed:
    """A sink rendering on its own thread the chunks :meth:`give` hands it, one at a time:
    ``give`` returns once the sink has finished the chunk and asks for the next."""

    def __init__(self, sink: Any, prev_query: int, threads: int | None, tile: bool = False) -> None:
        self.items: queue.Queue = queue.Queue(maxsize=1)
        self.asking: queue.Queue = queue.Queue()
        self.ended = False
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(sink, prev_query, threads, tile), daemon=True,
                                       name="gamut-sink")
        self.thread.start()

    def _chunks(self) -> Iterator:
        while True:
            item = self.items.get()
            if item is _END:
                self.ended = True
                return
            yield item
            self.asking.put(None)

    def _run(self, sink: Any, prev_query: int, threads: int | None, tile: bool) -> None:
        try:
            with numba_threads(threads):
                self.value = _render(sink, self._chunks(), prev_query, tile)
        except BaseException as exc:  # noqa: BLE001 (handed to the caller by result())
            self.error = exc
        finally:
            self.asking.put(None)  # a give() waiting for this sink returns
            while not self.ended:  # take what is still handed over, so that give() never blocks
                if self.items.get() is _END:
                    self.ended = True
                else:
                    self.asking.put(None)

    def give(self, item: Any) -> None:
        self.items.put(item)
        self.asking.get()

    def finish(self) -> None:
        self.items.put(_END)
        self.thread.join()

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value
