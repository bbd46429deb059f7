"""The partitioned runner: a scan in partitions, on a Dask cluster of CPUs or GPUs and/or resumable
in a run directory (:mod:`~gamut.scanning.pipeline.rundir`).

Each worker renders its partitions with the job's engine and a sink of the job's format
(:func:`~gamut.scanning.pipeline.partitions.compute_partition`); the client hands their data to
its own sink in partition order. The output is byte for byte that of a single-process run, in
every format.
"""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from gamut.io.atomic import atomic_output
from gamut.progress import progress_bar
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.pipeline.partitions import (
    PARTITION_CELLS,
    PARTITION_PAIRS,
    Partition,
    PartitionTask,
    compute_partition,
    device_kind,
    engine_chunking,
    plan_partitions,
)
from gamut.scanning.pipeline.rundir import RunDir, file_fingerprint, scan_options
from gamut.scanning.sinks.base import Sink


def run_partitioned(job: ScanJob, sink: Sink, make_engine: Callable[..., Any]) -> None:
    """Carry out ``job`` in partitions: on its cluster (else here, in order), keeping finished
    partitions in its run directory (if any); ``sink`` writes the output."""
    default = {"cells": PARTITION_CELLS[device_kind(job.device)], "pairs": PARTITION_PAIRS}
    asked = None
    if job.partition_cells is not None or job.partition_pairs is not None:
        asked = {"cells": int(job.partition_cells or default["cells"]),
                 "pairs": int(job.partition_pairs or default["pairs"])}
    sizes = asked or default
    run_dir = None
    if job.run_dir is not None:
        inputs = {"query": file_fingerprint(job.query_path), "reference": file_fingerprint(job.reference_path)}
        run_dir = RunDir(job.run_dir, inputs, scan_options(job.params, job.format, job.quiet, job.keyval), asked,
                         default)
        sizes = run_dir.partitioning
    parts = plan_partitions(job.scan_input, sizes["cells"], sizes["pairs"])
    conn, threads, gpus = None, job.threads, job.gpus
    if job.cluster is not None:
        from gamut.cluster import connect, default_threads

        conn = connect(job.cluster, device=job.device, gpus=gpus, analysis="scan")
        threads = default_threads(conn, job.cluster, threads)
        if isinstance(job.cluster, str) and job.cluster.startswith("local") and device_kind(job.device) == "cuda":
            gpus = None  # each local worker sees its one GPU as device 0
    with contextlib.ExitStack() as stack:
        if conn is not None:
            stack.callback(conn.close)
        worker_job = job.where(cluster=None, run_dir=None, threads=threads, gpus=gpus, progress=False)
        task = PartitionTask(worker_job, type(sink), make_engine)
        if sink.regroups:
            sink.chunk_stops = _chunk_stops(task, conn)
        out = stack.enter_context(atomic_output(job.output, sink.mode)) if sink.mode else None
        label = f"scan [{conn.description if conn else 'partitions'}]"
        bar = stack.enter_context(progress_bar(label, job.scan_input.total_cells(), job.show_progress(), unit="cells"))
        sink.start(out)
        execute(task, parts, sink.write_part, conn=conn, run_dir=run_dir, retries=job.retries, progress=bar)
        sink.close()


def execute(
    task: PartitionTask,
    parts: list[Partition],
    write: Callable[[Partition, Any], None],
    *,
    conn=None,
    run_dir: RunDir | None = None,
    retries: int = 2,
    progress: Callable[[int], None] = lambda n: None,
) -> None:
    """Compute every partition not already in ``run_dir`` (on ``conn``'s cluster, else here, in
    order) and call ``write(partition, data)`` for all of them in partition order."""
    finished = run_dir.finished(len(parts), _say) if run_dir is not None else set()
    held: dict[int, Any] = {}
    state = {"next": 0}
    progress(sum(parts[k].cells for k in finished))

    def flush() -> None:
        k = state["next"]
        while k < len(parts) and (k in held or k in finished):
            write(parts[k], held.pop(k) if k in held else run_dir.load(k))
            k += 1
        state["next"] = k

    def deliver(index: int, data: Any) -> None:
        if run_dir is not None:
            run_dir.store(index, data)
            finished.add(index)
        held[index] = data
        progress(parts[index].cells)
        flush()

    flush()
    todo = [p for p in parts if p.index not in finished]
    if conn is None:
        for p in todo:
            deliver(p.index, compute_partition(task, p.index, p.start, p.stop, p.prev_query))
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


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _resume_advice(run_dir: RunDir | None, finished: int, total: int) -> str:
    """What to do after the cluster failed: the finished partitions are kept in a run directory."""
    if run_dir is None:
        return "check the workers' logs and run again"
    return (f"{finished} of {total} partitions are kept in {run_dir.path}; check the workers' logs and run "
            "the same command again to resume")


def _chunk_stops(task: PartitionTask, conn) -> np.ndarray:
    """Pair numbers ending each chunk of a single-process run with this task's engine."""
    if conn is None:
        cells, pairs = engine_chunking(task)
    else:
        from gamut.cluster import run_one

        cells, pairs = run_one(conn, engine_chunking, task, label="the chunk-size task")
    lengths = [c.shape[0] for c in task.job.scan_input.chunks(cells, pairs)]
    return np.cumsum(np.asarray(lengths, np.int64))
