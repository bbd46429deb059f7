"""The partitioned runner: a scan in partitions, on a Dask cluster of CPUs or GPUs and/or resumable
in a run directory (:mod:`~gamut.scanning.pipeline.rundir`).

Each worker renders its partitions with the job's engine and a sink of each of the job's formats
(:func:`~gamut.scanning.pipeline.partitions.compute_partition`); the client hands their data to
its own sinks (one per output) in partition order. Every output is byte for byte that of a
single-process run, in every format. A run directory stores a partition's data for all formats in
one part (:func:`pack_formats`).
"""
from __future__ import annotations

import contextlib
import os
import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gamut.errors import GamutError
from gamut.io.atomic import atomic_outputs
from gamut.progress import progress_bar
from gamut.scanning.pipeline.job import ScanJob, device_kind
from gamut.scanning.pipeline.pairs import Partition
from gamut.scanning.pipeline.partitions import (
    PARTITION_CELLS,
    PARTITION_PAIRS,
    PartitionTask,
    abandon_on_failure,
    chunk_stops,
    compute_partition,
    compute_partitions,
    engine_chunking,
    gpu_partitioning,
    plan_partitions,
)
from gamut.scanning.pipeline.rundir import RunDir, file_fingerprint, input_fingerprint, scan_options
from gamut.scanning.sinks.base import Sink


def run_partitioned(job: ScanJob, sinks: Sequence[Sink], make_engine: Callable[..., Any], *,
                    gpu_workers: Sequence[int] | None = None) -> None:
    """Carry out ``job`` in partitions: on its cluster, or on the GPUs of ``gpu_workers`` (default:
    :attr:`ScanJob.gpu_workers`: a worker process on each), else here, in order, keeping finished
    partitions in its run directory (if any); each of ``sinks`` writes its output (``job.targets``).
    On several GPUs, here or on a Dask cluster of GPUs, an unrestricted scan without a run directory
    runs in stripes of the references instead (:func:`~gamut.scanning.pipeline.striped.run_striped`)."""
    if gpu_workers is None:
        gpu_workers = job.gpu_workers
    if job.stripable and (gpu_workers or job.on_gpu_cluster):
        from gamut.scanning.pipeline.striped import run_striped

        if gpu_workers:
            run_striped(job, sinks, make_engine, gpu_workers)
            return
        conn, _, gpus = _connect(job)
        try:  # a GPU cluster: a stripe of the references per worker, as on several GPUs here (threads: run_striped)
            run_striped(job.where(gpus=gpus), sinks, make_engine, conn=conn)
        finally:
            conn.close()
        return
    if gpu_workers:
        default = gpu_partitioning(job.scan_input, len(gpu_workers))
    else:
        default = {"cells": PARTITION_CELLS[device_kind(job.device)], "pairs": PARTITION_PAIRS}
    asked = None
    if job.partition_cells is not None or job.partition_pairs is not None:
        asked = {"cells": int(job.partition_cells or default["cells"]),
                 "pairs": int(job.partition_pairs or default["pairs"])}
    sizes = asked or default
    run_dir = None
    if job.run_dir is not None:
        inputs = {"query": input_fingerprint(job.query_path, job.queries),
                  "reference": input_fingerprint(job.reference_path, job.references)}
        options = scan_options(job.params, job.formats, job.quiet, job.keyval,
                               None if job.annotation is None else file_fingerprint(job.annotation))
        run_dir = RunDir(job.run_dir, inputs, options, asked, default)
        sizes = run_dir.partitioning
    parts = plan_partitions(job.scan_input, sizes["cells"], sizes["pairs"])
    conn, threads, gpus, owned = None, job.threads, job.gpus, True
    if job.cluster is not None:
        conn, threads, gpus = _connect(job)
    elif gpu_workers:
        from gamut.scanning.pipeline.gpu_workers import workers_for

        # A worker process on each GPU (seeing it as device 0).
        (conn, owned), gpus = workers_for(gpu_workers), None
        if threads is None:  # the cores shared among the processes
            threads = max(1, (os.cpu_count() or 1) // len(gpu_workers))
    with contextlib.ExitStack() as stack:
        if conn is not None and owned:
            stack.callback(conn.close)
        worker_job = job.where(cluster=None, run_dir=None, threads=threads, gpus=gpus, progress=False)
        formats = job.formats
        classes = tuple(type(next(s for s, o in zip(sinks, job.targets) if o.format == fmt)) for fmt in formats)
        task = PartitionTask(worker_job, classes, make_engine)
        if any(sink.regroups for sink in sinks):
            stops = _chunk_stops(task, conn)
            for sink in sinks:
                if sink.regroups:
                    sink.chunk_stops = stops
        outs = stack.enter_context(atomic_outputs([(o.path, s.mode) for o, s in zip(job.targets, sinks)]))
        abandon_on_failure(stack, sinks)
        label = f"scan [{conn.description if conn else 'partitions'}]"
        bar = stack.enter_context(progress_bar(label, job.scan_input.total_cells(), job.show_progress(), unit="cells"))
        for sink, out in zip(sinks, outs):
            sink.start(out)
        which = [formats.index(o.format) for o in job.targets]

        def write(part: Partition, data: Any) -> None:
            datas = (data,) if len(formats) == 1 else data
            for sink, k in zip(sinks, which):
                sink.write_part(part, datas[k])

        execute(task, parts, write, conn=conn, run_dir=run_dir, retries=job.retries, progress=bar,
                formats=len(formats))
        for sink in sinks:
            sink.close()


def _connect(job: ScanJob) -> tuple[Any, int | None, Any]:
    """The job's cluster, the engine threads of its workers and the GPUs they name (none: a local
    GPU worker sees its one GPU as device 0)."""
    from gamut.cluster import connect, default_threads

    conn = connect(job.cluster, device=job.device, gpus=job.gpus, analysis="scan")
    gpus = job.gpus
    if isinstance(job.cluster, str) and job.cluster.startswith("local") and job.on_gpu_cluster:
        gpus = None
    return conn, default_threads(conn, job.cluster, job.threads), gpus


def execute(
    task: PartitionTask,
    parts: list[Partition],
    write: Callable[[Partition, Any], None],
    *,
    conn=None,
    run_dir: RunDir | None = None,
    retries: int = 2,
    progress: Callable[[int], None] = lambda n: None,
    formats: int = 1,
) -> None:
    """Compute every partition not already in ``run_dir`` (on ``conn``'s cluster, else here, in
    order) and call ``write(partition, data)`` for all of them in partition order. A partition's
    data is a tuple of ``formats`` items when there are several (one part in ``run_dir``)."""
    finished = run_dir.finished(len(parts), _say) if run_dir is not None else set()
    held: dict[int, Any] = {}
    state = {"next": 0}
    progress(sum(parts[k].cells for k in finished))

    def flush() -> None:
        k = state["next"]
        while k < len(parts) and (k in held or k in finished):
            write(parts[k], held.pop(k) if k in held else _load(run_dir, k, formats))
            k += 1
        state["next"] = k

    def deliver(index: int, data: Any) -> None:
        if run_dir is not None:
            run_dir.store(index, data if formats == 1 else pack_formats(data))
            finished.add(index)
        held[index] = data
        progress(parts[index].cells)
        flush()

    flush()
    todo = [p for p in parts if p.index not in finished]
    if not todo:  # every partition read back from the run directory: no worker to start
        conn = None
    if conn is None:
        for p in todo:
            deliver(p.index, compute_partition(task, p.index, p.start, p.stop, p.prev_query))
    elif _is_gpu_workers(conn):
        from gamut.scanning.pipeline.gpu_workers import WorkerError, run_in_order

        tasks = ((p.index, (p.index, p.start, p.stop, p.prev_query)) for p in todo)
        try:
            for index, data in run_in_order(conn, compute_partitions, task, tasks, warm=engine_chunking,
                                            held=lambda: len(held), label="partition"):
                deliver(index, data)
        except WorkerError as exc:
            raise exc.advised(_resume_advice(run_dir, len(finished), len(parts))) from None
    else:
        from gamut.cluster import ClusterError, run_in_order

        tasks = ((p.index, (p.index, p.start, p.stop, p.prev_query)) for p in todo)
        try:
            for index, data in run_in_order(conn, compute_partition, task, tasks, retries=retries,
                                            held=lambda: len(held), key_prefix=f"gamut-scan-{task.token}",
                                            label="partition"):
                deliver(index, data)
        except ClusterError as exc:
            raise ClusterError(exc.reason, _resume_advice(run_dir, len(finished), len(parts))) from None
    if state["next"] != len(parts):
        raise RuntimeError(f"partitions {state['next']}.. were not delivered")


#: A part holding several formats' data: this tag, their count (4 bytes) and lengths (8 bytes
#: each, little-endian), then the data one after the other.
PACKED_TAG = b"gamut-formats\n"


def pack_formats(datas: Sequence[bytes]) -> bytes:
    """One part of several formats' data (a run directory stores one file per partition)."""
    head = PACKED_TAG + struct.pack(f"<I{len(datas)}Q", len(datas), *(len(d) for d in datas))
    return b"".join((head, *datas))


def unpack_formats(data: bytes, count: int) -> tuple[bytes, ...]:
    """The ``count`` formats' data of a part made by :func:`pack_formats` (ValueError if it is not one)."""
    start = len(PACKED_TAG) + 4 + 8 * count
    if data[:len(PACKED_TAG)] != PACKED_TAG or len(data) < start:
        raise ValueError("not a part of several formats")
    found, *lengths = struct.unpack_from(f"<I{count}Q", data, len(PACKED_TAG))
    if found != count or start + sum(lengths) != len(data):
        raise ValueError(f"a part of {found} formats, not {count}")
    out = []
    for length in lengths:
        out.append(data[start:start + length])
        start += length
    return tuple(out)


def _load(run_dir: RunDir, index: int, formats: int) -> Any:
    data = run_dir.load(index)
    if formats == 1:
        return data
    try:
        return unpack_formats(data, formats)
    except ValueError as exc:
        raise GamutError(f"--run-dir {run_dir.path}: partition {index} cannot be read back ({exc}); "
                         "run the same command again to recompute it") from None


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _is_gpu_workers(conn) -> bool:
    from gamut.scanning.pipeline.gpu_workers import GpuWorkers

    return isinstance(conn, GpuWorkers)


def _resume_advice(run_dir: RunDir | None, finished: int, total: int) -> str:
    """What to do after the cluster failed: the finished partitions are kept in a run directory."""
    if run_dir is None:
        return "check the workers' logs and run again"
    return (f"{finished} of {total} partitions are kept in {run_dir.path}; check the workers' logs and run "
            "the same command again to resume")


def _chunk_stops(task: PartitionTask, conn) -> np.ndarray:
    """Pair numbers ending each chunk of a single-process run with this task's engine (GPU workers:
    one GPU's chunks, without making an engine here)."""
    if conn is None:
        cells, pairs = engine_chunking(task)
    elif _is_gpu_workers(conn):
        from gamut.scanning.engines.gpu_plan import chunk_sizes

        cells, pairs = chunk_sizes()
    else:
        from gamut.cluster import run_one

        cells, pairs = run_one(conn, engine_chunking, task, label="the chunk-size task")
    return chunk_stops(task.job.scan_input, cells, pairs)
