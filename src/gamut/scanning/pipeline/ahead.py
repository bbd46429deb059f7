"""Work sent to a Dask cluster of GPUs ahead of the client's own scan: each worker's order of its
stripe (:class:`StripeOrder`) and its first run of tiles, sent once the cluster is joined and
before the client reads its inputs, so that the workers read, plan and scan while it does.

This module imports neither Numba nor the sinks (the job, the cluster's client and the orders are
light): ``gamut scan --cluster tcp://...`` sends the orders from here (:func:`start_ahead`)
before it imports its compiled scan code, which took the client 0.3-0.4 s of its 1.0-1.1 s
before the orders went out on the H200 hosts. A worker plans its stripe from the order with the
code of :mod:`~gamut.scanning.pipeline.stripes`, imported there.
"""
from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from gamut.cluster import Connection, PendingConnection, PinnedStart, connect, on_this_machine, worker_addresses
from gamut.scanning.fasta import FileRecords
from gamut.scanning.pipeline.job import ScanJob
from gamut.timeline import span

if TYPE_CHECKING:
    from gamut.scanning.pipeline.stripes import StripeTask

#: Cluster tasks per stripe: each scans a run of groups through one pipeline, so the pipeline fills
#: and drains this often per worker, and the client holds at most a few such runs' data.
RUNS_PER_STRIPE = 8


@dataclass(frozen=True)
class StripeOrder:
    """Stripe ``index`` of a scan in at most ``count`` stripes, for a worker on this machine to plan
    itself: ``job`` (as the workers run it) holds its references unread, and its queries too when
    they are a plain file (:class:`~gamut.scanning.fasta.FileRecords`), which the worker reads and
    cuts as :func:`~gamut.scanning.pipeline.stripes.stripe_tasks` does (``tile_cells``; None: its
    :data:`~gamut.scanning.pipeline.stripes.TILE_CELLS`), while the
    client that sent it reads and plans them too: the same plan, from the same bytes (the file is
    checked to be as it was, by both). Its first cluster task takes the stripe's first ``runs``-th
    of the groups (:func:`run_size`). ``sinks``: the sink class of each of the job's formats, or
    the formats' names (the registry's classes, :func:`~gamut.scanning.sinks.sink_class`);
    ``make_engine`` None: the engine registry's (:func:`gamut.scanning.engines.make_engine`)."""

    job: ScanJob
    sinks: tuple[type | str, ...]
    make_engine: Callable[..., Any] | None
    index: int
    count: int
    tile_cells: int | None
    runs: int
    token: str

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "task"}

    @cached_property
    def task(self) -> StripeTask | None:
        """The stripe's task, planned here (None: the references fill fewer stripes)."""
        from gamut.scanning.engines import make_engine
        from gamut.scanning.pipeline.stripes import TILE_CELLS, stripe_tasks
        from gamut.scanning.sinks import sink_class

        classes = tuple(sink_class(s) if isinstance(s, str) else s for s in self.sinks)
        with span("stripe planned", stripe=self.index):
            tasks = stripe_tasks(self.job, classes, self.make_engine or make_engine, self.count,
                                 self.tile_cells or TILE_CELLS)
        if self.index >= len(tasks):
            return None
        return dataclasses.replace(tasks[self.index], token=self.token)


def run_size(groups: int, runs: int) -> int:
    """Groups per cluster task of a stripe of ``groups`` groups, in about ``runs`` tasks."""
    return max(1, -(-groups // runs))


def tile_run(shared: StripeTask | StripeOrder, groups: Sequence[int] | None,
             mailbox: str | None = None) -> tuple[tuple | None, list[tuple[int, Any]]]:
    """The cluster task of a stripe's run of tiles (:func:`~gamut.scanning.pipeline.stripes.compute_tile_run`:
    the stripe's plan and its tiles of ``groups``), named here so that the client sends it without
    importing the scan code. ``shared``: the stripe's task, or the order the worker plans it from
    (:class:`StripeOrder`: ``groups`` None is its first run; an order of no stripe gives no plan).
    ``mailbox``: the client's :class:`~gamut.io.fd_mailbox.Mailbox` address (a worker on its machine),
    where the tiles' text goes as it is, its tickets in the result (:func:`~gamut.io.fd_mailbox.post_arrays`)."""
    from gamut.scanning.pipeline.stripes import compute_tile_run

    task = shared.task if isinstance(shared, StripeOrder) else shared
    if task is None:
        return None, []
    if groups is None:
        assert isinstance(shared, StripeOrder)
        groups = range(run_size(len(task.groups), shared.runs))
    plan, tiles = compute_tile_run(task, groups)
    if mailbox is not None:
        from gamut.io.fd_mailbox import post_arrays

        tiles = post_arrays(tiles, mailbox)
    return plan, tiles


def worker_job(job: ScanJob, threads: int | None) -> ScanJob:
    """``job`` as a stripe's worker runs it: there, with ``threads`` engine threads, no progress bar."""
    return job.where(cluster=None, run_dir=None, threads=threads, gpus=None, progress=False)


@dataclass
class SentOrders:
    """A scan's head start (:func:`send_orders`): the workers' orders and first runs (``start``), and
    the sinks and engine factory they were made with (as :class:`StripeOrder` holds them)."""

    start: PinnedStart
    sinks: tuple[type | str, ...]
    make_engine: Callable[..., Any] | None

    def matches(self, classes: tuple[type, ...], make_engine: Callable[..., Any], workers: Sequence[str]) -> bool:
        """Whether these orders are those of a scan with sink ``classes``, ``make_engine`` and ``workers``."""
        from gamut.scanning.engines import make_engine as registry_engines
        from gamut.scanning.sinks import sink_class

        sinks = tuple(sink_class(s) if isinstance(s, str) else s for s in self.sinks)
        return (sinks == classes and (self.make_engine or registry_engines) is make_engine
                and self.start.workers == list(workers))


def send_orders(conn: Connection, job: ScanJob, sinks: tuple[type | str, ...], make_engine: Callable[..., Any] | None,
                workers: Sequence[str] | None = None) -> SentOrders | None:
    """The head start of ``job`` (whose stripes run on ``workers`` of ``conn``, one each; default:
    every worker, :func:`~gamut.cluster.worker_addresses`): each worker sent the order of its stripe
    and its first run, now, where every worker is on this machine and the references are a plain
    file not read yet; else None. (On 2x H200 the client had read the transcriptome set at 1.3 s,
    beside joining the cluster, where the one-GPU process aligned from 1.09 s: the workers now read
    the file themselves.)"""
    workers = list(worker_addresses(conn) if workers is None else workers)
    if not (on_this_machine(workers) and isinstance(job.references, FileRecords) and not job.references.is_read):
        return None
    order = StripeOrder(worker_job(job, job.threads), sinks, make_engine, 0, len(workers), job.partition_cells,
                        RUNS_PER_STRIPE, uuid.uuid4().hex)
    orders = [dataclasses.replace(order, index=k) for k in range(len(workers))]
    mailbox = conn.mailbox_for(workers)
    args = (None, None if mailbox is None else mailbox.address)
    start = PinnedStart(conn, tile_run, orders, [((k, 0), args) for k in range(len(workers))], workers=workers,
                        retries=job.retries, key_prefix=f"gamut-stripe-{order.token}", label="stripe run")
    return SentOrders(start, sinks, make_engine)


def start_ahead(job: ScanJob) -> ScanJob:
    """The command line's head start: for a scan in stripes on a cluster of GPUs given by its
    address (joined on a thread: :class:`~gamut.cluster.PendingConnection`), the cluster joined
    now and the orders sent (:func:`send_orders`, the sinks named by their formats, the registry's
    engines) before this process imports its scan code; the job then runs on that connection,
    which carries them (:attr:`Connection.ahead`: :func:`~gamut.scanning.pipeline.striped.run_striped`
    takes them). Any other job is returned as it is."""
    if not (isinstance(job.cluster, PendingConnection) and job.stripable and job.on_gpu_cluster):
        return job
    conn = connect(job.cluster)
    try:
        conn.ahead = send_orders(conn, job, tuple(job.formats), None)
    except BaseException:
        conn.close()
        raise
    return job.where(cluster=conn)
