"""Where a scan job runs: :func:`run_job` picks the runner, and every runner takes the job, its
sinks (one per output) and an engine factory.

- :func:`run_in_process`: here, chunk after chunk (:func:`~gamut.scanning.pipeline.scan_loop.scan_chunks`),
  the engine aligning the next chunk on a thread while the sinks write the current one;
- :func:`~gamut.scanning.pipeline.partitioned.run_partitioned`: in partitions, on a Dask cluster
  and/or resumable in a run directory.

Every output is written from the same chunks (the scan runs once), and the outputs appear
together (:func:`gamut.io.atomic.atomic_outputs`): all or none of them are replaced.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from gamut.io.atomic import atomic_outputs
from gamut.progress import progress_bar
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.pipeline.partitions import abandon_on_failure
from gamut.scanning.pipeline.scan_loop import scan_chunks
from gamut.scanning.sinks import sink_class
from gamut.scanning.sinks.base import Sink

#: ``make_engine(device, threads, gpus)``: the alignment engine (:func:`gamut.scanning.engines.make_engine`).
EngineFactory = Callable[..., Any]


def run_in_process(job: ScanJob, sinks: Sequence[Sink], make_engine: EngineFactory) -> None:
    """Carry out ``job`` in this process; each of ``sinks`` writes its output (``job.targets``)."""
    engine = make_engine(job.device, job.threads, job.gpus, cells=job.scan_input.total_cells())
    si = job.scan_input
    with contextlib.ExitStack() as stack:
        outs = stack.enter_context(atomic_outputs([(o.path, s.mode) for o, s in zip(job.targets, sinks)]))
        abandon_on_failure(stack, sinks)
        for sink, out in zip(sinks, outs):
            sink.start(out)
        if si.params.site_access is None:
            tracker = stack.enter_context(progress_bar(f"scan [{engine.name}]", si.total_cells(), job.show_progress(),
                                                       unit="cells"))
            results = scan_chunks(si, engine, threads=job.threads, progress=tracker)
        else:  # every hit's site folded, once per reference, after the alignment
            from gamut.scanning.pipeline.access_scan import scan_with_site_access

            results = scan_with_site_access(si, engine, threads=job.threads, show_progress=job.show_progress())
        for result, spare_cores in results:
            for sink in sinks:
                sink.write(result, spare_cores)
        for sink in sinks:
            sink.close()


def pick_runner(job: ScanJob) -> Callable[[ScanJob, Sequence[Sink], EngineFactory], None]:
    """The runner for ``job``: in partitions with a cluster or a run directory, else in this process."""
    if job.partitioned:
        from gamut.scanning.pipeline.partitioned import run_partitioned

        return run_partitioned
    return run_in_process


def make_sinks(job: ScanJob) -> list[Sink]:
    """A sink per output, each built from what the job says of that output (:meth:`ScanJob.for_output`)."""
    return [sink_class(out.format)(job.for_output(out)) for out in job.targets]


def run_job(job: ScanJob, make_engine: EngineFactory | None = None, sink: Sink | None = None) -> Sink:
    """Carry out ``job`` with engines from ``make_engine`` (default: the engine registry) and a sink
    per output (``sink``, for a job of one output: that one instead); returns the first output's
    sink, closed (the only one, but for jobs of several outputs)."""
    if make_engine is None:
        from gamut.scanning.engines import make_engine
    if sink is not None and len(job.targets) != 1:
        raise ValueError("run_job(sink=...) takes a job of one output")
    sinks = [sink] if sink is not None else make_sinks(job)
    pick_runner(job)(job, sinks, make_engine)
    return sinks[0]
