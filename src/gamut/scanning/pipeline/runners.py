"""Where a scan job runs: :func:`run_job` picks the runner, and every runner takes the job, an
engine factory and a sink.

- :func:`run_in_process`: here, chunk after chunk (:func:`~gamut.scanning.pipeline.scan_loop.scan_chunks`),
  the engine aligning the next chunk on a thread while the sink writes the current one;
- :func:`~gamut.scanning.pipeline.partitioned.run_partitioned`: in partitions, on a Dask cluster
  and/or resumable in a run directory.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from gamut.io.atomic import atomic_output
from gamut.progress import progress_bar
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.pipeline.scan_loop import scan_chunks
from gamut.scanning.sinks import sink_class
from gamut.scanning.sinks.base import Sink

#: ``make_engine(device, threads, gpus)``: the alignment engine (:func:`gamut.scanning.engines.make_engine`).
EngineFactory = Callable[..., Any]


def run_in_process(job: ScanJob, sink: Sink, make_engine: EngineFactory) -> None:
    """Carry out ``job`` in this process; ``sink`` writes the output."""
    engine = make_engine(job.device, job.threads, job.gpus)
    si = job.scan_input
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(atomic_output(job.output, sink.mode)) if sink.mode else None
        tracker = stack.enter_context(progress_bar(f"scan [{engine.name}]", si.total_cells(), job.show_progress(),
                                                   unit="cells"))
        sink.start(out)
        for result, spare_cores in scan_chunks(si, engine, threads=job.threads, progress=tracker):
            sink.write(result, spare_cores)
        sink.close()


def pick_runner(job: ScanJob) -> Callable[[ScanJob, Sink, EngineFactory], None]:
    """The runner for ``job``: in partitions with a cluster or a run directory, else in this process."""
    if job.partitioned:
        from gamut.scanning.pipeline.partitioned import run_partitioned

        return run_partitioned
    return run_in_process


def run_job(job: ScanJob, make_engine: EngineFactory | None = None, sink: Sink | None = None) -> Sink:
    """Carry out ``job`` with engines from ``make_engine`` (default: the engine registry) and
    ``sink`` (default: one of the job's format); returns the sink, closed."""
    if make_engine is None:
        from gamut.scanning.engines import make_engine
    if sink is None:
        sink = sink_class(job.format)(job)
    pick_runner(job)(job, sink, make_engine)
    return sink
