"""The striped runner: a scan on several GPUs, worker processes on the GPUs (two per GPU by default:
:func:`~gamut.scanning.pipeline.lanes.worker_lanes`; or the workers of a Dask cluster of GPUs), each scanning
one stripe of the references (:mod:`~gamut.scanning.pipeline.stripes`), this process writing
every output.

Worker k gets its stripe once (the job with the stripe's references) and then the tiles of its
stripe, group after group; this process writes a group as soon as every stripe has delivered
its tile, the rows interleaved (:meth:`~gamut.scanning.sinks.base.Sink.write_rows`). A worker
runs at most :data:`~gamut.scanning.pipeline.gpu_workers.WINDOW_PER_WORKER` tiles ahead of the
group being written, so memory stays bounded by a few tiles whatever the size of the output. On a
Dask cluster, each task scans a run of consecutive groups of its worker's stripe
(:func:`~gamut.scanning.pipeline.stripes.compute_tile_run`; :data:`~gamut.scanning.pipeline.ahead.RUNS_PER_STRIPE`
per stripe).
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from typing import Any

from gamut.cluster import PinnedStart, on_this_machine, worker_addresses
from gamut.errors import InputError
from gamut.io.atomic import atomic_outputs
from gamut.progress import progress_bar
from gamut.scanning.pipeline import ahead
from gamut.scanning.pipeline.ahead import run_size, send_orders, tile_run, worker_job
from gamut.scanning.pipeline.gpu_pinned import run_pinned
from gamut.scanning.pipeline.gpu_workers import WorkerError, workers_for
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.pipeline.pairs import ScanInput
from gamut.scanning.pipeline.partitions import abandon_on_failure, chunk_stops
from gamut.scanning.pipeline.stripes import TILE_CELLS, StripeTask, compute_tiles, read_stripe, stripe_plan, stripe_tasks
from gamut.scanning.sinks.base import Sink
from gamut.timeline import span


def run_striped(job: ScanJob, sinks: Sequence[Sink], make_engine: Callable[..., Any], gpus: Sequence[int] = (),
                conn=None) -> None:
    """Carry out ``job`` (unrestricted) in stripes: on GPU worker processes ``gpus`` (one stripe
    each), or on the workers of the Dask cluster ``conn`` (one stripe per worker); each of
    ``sinks`` writes its output (``job.targets``)."""
    lanes = worker_addresses(conn) if conn is not None else list(gpus)
    here = conn is None or on_this_machine(lanes)
    threads = job.threads
    if threads is None and conn is None:  # gamut's workers (two per GPU) share this machine's cores
        threads = max(1, (os.cpu_count() or 1) // len(lanes))
    # A cluster's GPU worker (one per GPU) keeps every core of its machine unless --threads is given: two
    # Dask workers of 32 threads ended the scan 0.5-0.8 s sooner than of 16 on 2x H200, where gamut's own
    # four workers were fastest with their share (docs/scan_gpu.md, "A Dask worker's threads").
    formats = job.formats
    classes = tuple(type(next(s for s, o in zip(sinks, job.targets) if o.format == fmt)) for fmt in formats)
    head = None if conn is None else _ahead(conn, job, classes, make_engine, lanes)
    try:
        with span("plan stripes"):
            tasks = stripe_tasks(worker_job(job, threads), classes, make_engine, len(lanes),
                                 job.partition_cells or TILE_CELLS, from_file=here)
        _run_stripes(job, sinks, tasks, gpus, conn, lanes, head)
    except BaseException:
        if head is not None:
            head.let_go()
        raise


def _run_stripes(job: ScanJob, sinks: Sequence[Sink], tasks: list[StripeTask], gpus: Sequence[int], conn,
                 lanes: list, head: PinnedStart | None) -> None:
    """:func:`run_striped` once its stripes are planned (``head``: the cluster's head start, if any)."""
    formats = job.formats
    if any(sink.regroups for sink in sinks):
        from gamut.scanning.engines.gpu_plan import chunk_sizes

        stops = chunk_stops(job.scan_input, *chunk_sizes())
        for sink in sinks:
            if sink.regroups:
                sink.chunk_stops = stops
    with contextlib.ExitStack() as stack:
        if conn is None:
            pool, owned = workers_for(gpus)
            if owned:
                stack.callback(pool.close)
        outs = stack.enter_context(atomic_outputs([(o.path, s.mode) for o, s in zip(job.targets, sinks)]))
        abandon_on_failure(stack, sinks)
        where = (f"{len(tasks)} stripes on {conn.description}" if conn is not None
                 else f"{len(tasks)} stripes on GPUs {','.join(map(str, sorted(set(gpus))))}")
        bar = stack.enter_context(progress_bar(f"scan [{where}]", job.scan_input.total_cells(), job.show_progress(),
                                               unit="cells"))
        for sink, out in zip(sinks, outs):
            sink.start(out)
        which = [formats.index(o.format) for o in job.targets]
        writer = GroupWriter(tasks, job.scan_input, lambda datas, stop: _write(sinks, which, len(formats), datas, stop),
                             bar)
        if conn is None:
            _on_gpu_workers(tasks, pool, writer)
        else:
            _on_cluster(tasks, conn, lanes, writer, job.retries, head)
        writer.check_done()
        with span("sinks close"):
            for sink in sinks:
                sink.close()


def _write(sinks: Sequence[Sink], which: list[int], formats: int, datas: list[Any], stop: int) -> None:
    """A group's tiles (one per stripe, each holding every format's data) to every sink."""
    for sink, k in zip(sinks, which):
        sink.write_rows([d if formats == 1 else d[k] for d in datas], stop)


class GroupWriter:
    """Takes the tiles of ``tasks``' stripes (of the scan ``whole``) as they come (:meth:`deliver`)
    and calls ``write(tiles, stop)`` for each group of queries in order once every stripe's tile
    of it has come (``stop``: the output-order number after the group); :meth:`held` is how many
    of a stripe's tiles wait to be written. The sizes come from ``whole``, never from the tasks'
    own jobs: a stripe a worker reads from the file is not read here."""

    def __init__(self, tasks: list[StripeTask], whole: ScanInput, write: Callable[[list[Any], int], None],
                 progress: Callable[[int], None] = lambda n: None) -> None:
        self.groups = tasks[0].groups if tasks else ()
        self.n_refs = tasks[0].n_refs if tasks else 0
        self.stripes = len(tasks)
        self.write = write
        self.progress = progress
        self.pending: dict[int, dict[int, Any]] = {}
        self.held_by = [0] * self.stripes
        self.next_group = 0
        self.query_lengths = whole.query_lengths()
        lengths = whole.reference_lengths()
        self.letters = [int(lengths[task.stripe.r0:task.stripe.r1].sum()) for task in tasks]

    def held(self, stripe: int) -> int:
        return self.held_by[stripe]

    def deliver(self, group: int, stripe: int, data: Any) -> None:
        self.pending.setdefault(group, {})[stripe] = data
        self.held_by[stripe] += 1
        q0, q1 = self.groups[group]
        self.progress(int(self.query_lengths[q0:q1].sum()) * self.letters[stripe])
        while len(self.pending.get(self.next_group, ())) == self.stripes:
            tiles = self.pending.pop(self.next_group)
            with span("write group", group=self.next_group):
                self.write([tiles[k] for k in range(self.stripes)], self.groups[self.next_group][1] * self.n_refs)
            for k in range(self.stripes):
                self.held_by[k] -= 1
            self.next_group += 1

    def check_done(self) -> None:
        if self.next_group != len(self.groups):
            raise RuntimeError(f"groups {self.next_group}.. of the striped scan were not delivered")


def _on_gpu_workers(tasks: list[StripeTask], pool, writer: GroupWriter) -> None:
    """Worker k scans stripe k, its tiles one after the other through one pipeline."""
    streams = [[((g, k), g) for g in range(len(writer.groups))] for k in range(len(tasks))]
    try:
        for (group, stripe), data in run_pinned(pool, compute_tiles, tasks, streams, held=writer.held, label="tile",
                                                     prepare=read_stripe):
            writer.deliver(group, stripe, data)
    except WorkerError as exc:
        raise exc.advised("run it again (or on one GPU)") from None


def _ahead(conn, job: ScanJob, classes: tuple[type, ...], make_engine: Callable[..., Any],
           workers: list[str]) -> PinnedStart | None:
    """The head start of ``job`` on ``workers`` of ``conn``: the one sent before this process imported
    its scan code (:func:`~gamut.scanning.pipeline.ahead.start_ahead`), where it is this scan's (the
    same sinks, engines and workers), else one sent now (:func:`~gamut.scanning.pipeline.ahead.send_orders`;
    None where there is none to give)."""
    sent, conn.ahead = conn.ahead, None
    if sent is not None:
        if sent.matches(classes, make_engine, workers):
            return sent.start
        sent.start.let_go()
    fresh = send_orders(conn, job, classes, make_engine, workers)
    return None if fresh is None else fresh.start


def _on_cluster(tasks: list[StripeTask], conn, workers: list[str], writer: GroupWriter, retries: int,
                head: PinnedStart | None = None) -> None:
    """Worker k of the cluster scans stripe k (sent to it once, or planned there from its
    :class:`~gamut.scanning.pipeline.ahead.StripeOrder` sent by ``head``, which submitted its first
    run), in runs of consecutive groups; every run's plan is checked against this process'."""
    from gamut.cluster import run_pinned as run_on_cluster
    from gamut.io.fd_mailbox import take_arrays

    count = len(writer.groups)
    size = run_size(count, ahead.RUNS_PER_STRIPE)
    skip = size if head is not None else 0
    mailbox = conn.mailbox_for(workers[:len(tasks)])  # (workers here hand their tiles' pages over as they are)
    address = None if mailbox is None else mailbox.address
    runs = [[((k, a), (list(range(a, min(a + size, count))), address)) for a in range(skip, count, size)]
            for k in range(len(tasks))]
    token = tasks[0].token if tasks else "none"
    plans = [stripe_plan(task) for task in tasks]
    for (stripe, _), (plan, tiles) in run_on_cluster(conn, tile_run, tasks, runs, workers=workers[:len(tasks)],
                                                     held=lambda k: writer.held(k) // size, retries=retries,
                                                     key_prefix=f"gamut-stripe-{token}", label="stripe run",
                                                     start=head):
        if plan != plans[stripe]:
            raise InputError(f"{tasks[stripe].job.reference_name}: a worker planned stripe {stripe} otherwise (it "
                             "read another file there); run the scan again")
        for group, data in tiles:
            writer.deliver(group, stripe, take_arrays(data, mailbox))
