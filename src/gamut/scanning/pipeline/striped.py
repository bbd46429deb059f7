"""The striped runner: a scan on several GPUs, one worker process per GPU, each scanning one stripe
of the references (:mod:`~gamut.scanning.pipeline.stripes`), this process writing every output.

Worker k gets its stripe once (the job with the stripe's references) and then the tiles of its
stripe, group after group; this process writes a group as soon as every stripe has delivered
its tile, the rows interleaved (:meth:`~gamut.scanning.sinks.base.Sink.write_rows`). A worker
runs at most :data:`~gamut.scanning.pipeline.gpu_workers.WINDOW_PER_WORKER` tiles ahead of the
group being written, so memory stays bounded by a few tiles whatever the size of the output.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gamut.io.atomic import atomic_outputs
from gamut.progress import progress_bar
from gamut.scanning.pipeline.gpu_workers import WorkerError, run_pinned, workers_for
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.pipeline.partitions import abandon_on_failure
from gamut.scanning.pipeline.stripes import TILE_CELLS, StripeTask, compute_tiles, stripe_tasks
from gamut.scanning.sinks.base import Sink


def single_process_chunk_stops(job: ScanJob, chunk_cells: int, chunk_pairs: int) -> np.ndarray:
    """Pair numbers ending each chunk of a single-process run of ``job`` (Parquet's row groups)."""
    lengths = [b - a for a, b in job.scan_input.spans(chunk_cells, chunk_pairs)]
    return np.cumsum(np.asarray(lengths, np.int64))


def run_striped(job: ScanJob, sinks: Sequence[Sink], make_engine: Callable[..., Any], gpus: Sequence[int]) -> None:
    """Carry out ``job`` (unrestricted) on GPU worker processes ``gpus`` (one stripe each); each of
    ``sinks`` writes its output (``job.targets``)."""
    threads = job.threads or max(1, (os.cpu_count() or 1) // len(gpus))
    worker_job = job.where(cluster=None, run_dir=None, threads=threads, gpus=None, progress=False)
    formats = job.formats
    classes = tuple(type(next(s for s, o in zip(sinks, job.targets) if o.format == fmt)) for fmt in formats)
    tasks = stripe_tasks(worker_job, classes, make_engine, len(gpus), job.partition_cells or TILE_CELLS)
    if any(sink.regroups for sink in sinks):
        from gamut.scanning.engines.gpu_plan import CHUNK_CELLS_PER_DEVICE, CHUNK_PAIRS_PER_DEVICE

        stops = single_process_chunk_stops(job, CHUNK_CELLS_PER_DEVICE, CHUNK_PAIRS_PER_DEVICE)
        for sink in sinks:
            if sink.regroups:
                sink.chunk_stops = stops
    pool, owned = workers_for(gpus)
    with contextlib.ExitStack() as stack:
        if owned:
            stack.callback(pool.close)
        outs = stack.enter_context(atomic_outputs([(o.path, s.mode) for o, s in zip(job.targets, sinks)]))
        abandon_on_failure(stack, sinks)
        label = f"scan [{len(tasks)} GPU stripes]"
        bar = stack.enter_context(progress_bar(label, job.scan_input.total_cells(), job.show_progress(), unit="cells"))
        for sink, out in zip(sinks, outs):
            sink.start(out)
        which = [formats.index(o.format) for o in job.targets]
        write_groups(tasks, pool, lambda datas, stop: _write(sinks, which, len(formats), datas, stop), bar)
        for sink in sinks:
            sink.close()


def _write(sinks: Sequence[Sink], which: list[int], formats: int, datas: list[Any], stop: int) -> None:
    """A group's tiles (one per stripe, each holding every format's data) to every sink."""
    for sink, k in zip(sinks, which):
        sink.write_rows([d if formats == 1 else d[k] for d in datas], stop)


def write_groups(tasks: list[StripeTask], pool, write: Callable[[list[Any], int], None],
                 progress: Callable[[int], None] = lambda n: None) -> None:
    """Run every tile of ``tasks`` on ``pool``'s workers (worker k: stripe k) and call
    ``write(tiles, stop)`` for each group of queries in order, once every stripe's tile of it has
    come (``stop``: the output-order number after the group)."""
    groups = tasks[0].groups if tasks else ()
    n_refs = tasks[0].n_refs if tasks else 0
    stripes = len(tasks)
    held: dict[int, dict[int, Any]] = {}
    held_by = [0] * stripes
    next_group = 0
    streams = [[((g, k), g) for g in range(len(groups))] for k in range(stripes)]
    query_lengths = tasks[0].job.scan_input.query_lengths() if tasks else np.zeros(0, np.int64)
    letters = [int(task.job.scan_input.reference_lengths().sum()) for task in tasks]
    try:
        for (group, stripe), data in run_pinned(pool, compute_tiles, tasks, streams, held=lambda k: held_by[k],
                                                label="tile"):
            held.setdefault(group, {})[stripe] = data
            held_by[stripe] += 1
            q0, q1 = groups[group]
            progress(int(query_lengths[q0:q1].sum()) * letters[stripe])
            while len(held.get(next_group, ())) == stripes:
                tiles = held.pop(next_group)
                write([tiles[k] for k in range(stripes)], groups[next_group][1] * n_refs)
                for k in range(stripes):
                    held_by[k] -= 1
                next_group += 1
    except WorkerError as exc:
        raise exc.advised("run it again (or on one GPU)") from None
    if next_group != len(groups):
        raise RuntimeError(f"groups {next_group}.. of the striped scan were not delivered")
