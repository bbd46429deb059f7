"""Partitions of a scan, and what a worker does with one.

A partition is a run of consecutive pairs of miRanda's output order (``start..stop-1``, about
``partition_cells`` cells). Its output depends only on its pairs, its running counter
(``counter0 = start``) and the last query of the partition before it, so any process can
render it: :func:`compute_partition` runs the job's engine and a sink of the job's format, as a
single process would, and returns the partition's data (the bytes it adds to the output).
"""
from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.pipeline.pairs import ScanInput
from gamut.scanning.pipeline.scan_loop import scan_chunks

#: Default partition sizes (cells) per device; a run directory keeps the partitioning it began with.
PARTITION_CELLS = {"cpu": 2_000_000_000, "cuda": 32_000_000_000}
PARTITION_PAIRS = 200_000


@dataclass(frozen=True)
class Partition:
    """Pairs ``start..stop-1`` of the output order; ``prev_query`` is the query of pair ``start-1``."""

    index: int
    start: int
    stop: int
    cells: int
    prev_query: int


def plan_partitions(scan_input: ScanInput, cells: int, pairs: int) -> list[Partition]:
    """Cut the scan into partitions of about ``cells`` cells and at most ``pairs`` pairs."""
    out: list[Partition] = []
    start, prev = 0, -1
    for k, chunk in enumerate(scan_input.chunks(int(cells), int(pairs))):
        n = int(chunk.shape[0])
        out.append(Partition(k, start, start + n, int(scan_input.pair_cells(chunk).sum()), prev))
        start, prev = start + n, int(chunk[-1, 0])
    return out


def device_kind(device: str) -> str:
    """``cuda`` when the workers will scan on GPUs (as far as the client can tell), else ``cpu``."""
    if device in ("cpu", "cuda"):
        return device
    from gamut.cuda import resolve_device

    return resolve_device(device, "scan")


@dataclass(frozen=True)
class PartitionTask:
    """What every worker needs to render partitions: the job (as the workers run it: no cluster),
    the sink class of its format and the engine factory (``make_engine(device, threads, gpus)``)."""

    job: ScanJob
    sink: type
    make_engine: Callable[..., Any]
    token: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)


#: Per process: engines by (factory, device, threads, gpus), and the sink of the current task.
_ENGINES: dict[tuple, Any] = {}
_SINKS: dict[str, Any] = {}


def task_engine(task: PartitionTask):
    job = task.job
    key = (task.make_engine, job.device, job.threads, str(job.gpus))
    engine = _ENGINES.get(key)
    if engine is None:
        engine = _ENGINES[key] = task.make_engine(job.device, job.threads, job.gpus)
    return engine


def _task_sink(task: PartitionTask):
    """The task's sink (its id columns are built once per process and task)."""
    sink = _SINKS.get(task.token)
    if sink is None:
        _SINKS.clear()
        sink = _SINKS[task.token] = task.sink(task.job)
    return sink


def engine_chunking(task: PartitionTask) -> tuple[int, int]:
    """The chunk sizes (cells, pairs) a single process with this task's engine uses."""
    engine = task_engine(task)
    return int(engine.preferred_chunk_cells), int(engine.preferred_chunk_pairs)


def compute_partition(task: PartitionTask, index: int, start: int, stop: int, prev_query: int) -> Any:
    """Scan partition ``index`` (pairs ``start..stop-1``) and return its data, as the task's sink
    renders it."""
    job = task.job
    si = job.scan_input
    chunks = scan_chunks(si, task_engine(task), threads=job.threads, pairs=si.pair_range(start, stop), counter0=start)
    return _task_sink(task).render(chunks, prev_query)
