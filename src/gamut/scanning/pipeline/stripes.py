"""A scan on several GPUs, split by references: each GPU gets one **stripe**, a contiguous run of
references holding about an equal share of the letters (as CUDASW++ 4.0 splits its database by
residues), and scans every query against it.

The output (every reference for the first query, then the second, ...) is cut the other way: a
**group** of consecutive queries is written once every stripe has scanned it, a query's row from
each stripe in turn. A **tile** is a group's queries against a stripe's references; a worker
scans its stripe's tiles one after the other through one pipeline, each tile in rectangles of
whole rows (:meth:`~gamut.scanning.pipeline.pairs.ScanInput.rect_chunks`), and renders each
tile's rows with every output format (:meth:`~gamut.scanning.sinks.base.Sink.render_tile`). The
writer interleaves the rows (:meth:`~gamut.scanning.sinks.base.Sink.write_rows`), so every output
is byte for byte that of one GPU. A worker holds its stripe's references alone, and no work waits
for every GPU but the writing of a group.
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gamut.io.descriptors import write_all
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.pair_run import rect_of
from gamut.scanning.pipeline.pairs import ScanInput, even_parts, row_runs
from gamut.scanning.pipeline.partitions import render_all, task_engine, task_sinks
from gamut.scanning.pipeline.scan_loop import scan_chunks
from gamut.timeline import mark, span
from gamut.scanning.results import RectLayout

#: Cells of one tile (a group's queries against one stripe): the unit a worker renders and hands
#: over. About 64 G cells keep a worker's pipeline full between tiles while a tile's text (the
#: transcriptome scan's 5.8 GB in default mode over ~80 tiles: 70 MB) stays small in memory.
TILE_CELLS = 64_000_000_000


@dataclass(frozen=True)
class Stripe:
    """References ``r0..r1-1`` of the scan: stripe ``index``."""

    index: int
    r0: int
    r1: int


def plan_stripes(lengths: np.ndarray, count: int) -> list[Stripe]:
    """At most ``count`` stripes of consecutive references with about equal letters each (none
    empty: fewer when there are fewer references)."""
    return [Stripe(k, a, b) for k, (a, b) in enumerate(even_parts(lengths, count))]


def plan_groups(query_lengths: np.ndarray, stripe_letters: int, tile_cells: int = TILE_CELLS) -> list[tuple[int, int]]:
    """Consecutive query ranges ``(q0, q1)`` of about ``tile_cells`` cells against a stripe of
    ``stripe_letters`` letters (at least one query each)."""
    return row_runs(query_lengths, stripe_letters, tile_cells)


@dataclass(frozen=True)
class StripeTask:
    """What a worker needs to scan one stripe: the job as it runs there (the stripe's references
    alone, indexed from 0), the sink class of each of the job's formats (``job.formats`` order),
    the engine factory, the stripe, the references of the whole scan (``n_refs``: output-order
    numbers) and the query groups."""

    job: ScanJob
    sinks: tuple[type, ...]
    make_engine: Callable[..., Any]
    stripe: Stripe
    n_refs: int
    groups: tuple[tuple[int, int], ...]
    token: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)


def stripe_plan(task: StripeTask) -> tuple:
    """What a stripe's tiles depend on of its plan: its references, the scan's and the query groups."""
    return (task.stripe.r0, task.stripe.r1, task.n_refs, task.groups)


def stripe_tasks(job: ScanJob, sinks: tuple[type, ...], make_engine: Callable[..., Any], count: int,
                 tile_cells: int = TILE_CELLS, from_file: bool = False) -> list[StripeTask]:
    """The stripes of ``job`` (at most ``count``) as tasks for the workers (``job``: as the workers
    run it, no cluster; ``from_file``: workers of this machine, which read their stripe from a
    plain reference file themselves: :meth:`~gamut.scanning.pipeline.job.ScanJob.of_references`)."""
    si = job.scan_input
    lengths = si.reference_lengths()
    stripes = plan_stripes(lengths, count)
    widest = max((int(lengths[s.r0:s.r1].sum()) for s in stripes), default=0)
    groups = tuple(plan_groups(si.query_lengths(), widest, tile_cells))
    return [StripeTask(job.of_references(s.r0, s.r1, from_file), sinks, make_engine, s, len(si.references), groups)
            for s in stripes]


def rect_layout(pairs: np.ndarray, r0: int, n_refs: int) -> RectLayout:
    """Where a rectangle of a stripe starting at reference ``r0`` (``pairs``: a
    :meth:`~gamut.scanning.pair_run.PairRun.of_rect` of local reference indices) sits in the output
    order of a scan of ``n_refs`` references."""
    q0, q1, a, b = rect_of(pairs)
    return RectLayout(q0, q1 - q0, r0 + a, b - a, n_refs)


def read_stripe(task: StripeTask) -> None:
    """Read and encode the stripe's references: a worker does it as its task arrives, while it
    still warms up (:func:`warm_worker`), so that its first tile starts as the warm-up ends."""
    with span("stripe read", stripe=task.stripe.index):
        task.job.scan_input.reference_set  # noqa: B018  (kept by the job's scan input)


def compute_tiles(task: StripeTask, taken: Iterable[tuple[Any, int]]) -> Iterator[tuple[Any, Any]]:
    """The data of each tile ``(key, group index)`` of ``taken`` (this worker's stripe), as ``(key,
    data)`` in that order, through one pipeline (the next tile's first rectangles align while
    this one's last are rendered). A tile's data is each format's
    :meth:`~gamut.scanning.sinks.base.Sink.render_tile` (a tuple of them when there are several).
    ``taken`` is read when the pipeline needs the next tile; its ``close()``, if any, is called at the end."""
    job, stripe = task.job, task.stripe
    si: ScanInput = job.scan_input
    with span("engine and stripe ready", stripe=stripe.index):
        engine = task_engine(task)
        si.reference_set  # noqa: B018  (encoded here, not on the pipeline's first chunk)
    begun: deque = deque()  # (key, rectangles) of each tile whose rectangles entered the pipeline

    def rectangles() -> Iterator[np.ndarray]:
        for key, group in taken:
            q0, q1 = task.groups[group]
            rects = list(si.rect_chunks(q0, q1, 0, len(si.references), int(engine.preferred_chunk_cells)))
            begun.append((key, len(rects)))
            yield from rects

    results = scan_chunks(si, engine, threads=job.threads, chunks=rectangles())
    sinks = task_sinks(task)

    def laid_out(items):
        for result, spare in items:
            result.layout = rect_layout(result.pairs, stripe.r0, task.n_refs)
            yield result, spare

    try:
        for first in results:
            key, count = begun.popleft()
            rest = itertools.islice(results, count - 1)
            data = render_all(sinks, laid_out(itertools.chain([first], rest)), -1, job.threads, tile=True)
            for _ in rest:  # a sink that stopped early: the tile's rectangles end here all the same
                pass
            mark("tile rendered", stripe=stripe.index, key=str(key))
            yield key, (data[0] if len(data) == 1 else data)
    finally:
        close = getattr(taken, "close", None)
        if close is not None:
            close()
        results.close()


#: The warm-up scan of a stripe worker (:func:`warm_worker`): miRNA-like queries of three row
#: buckets of the GPU kernels (16, 24 and 32 rows: most miRNAs), and a reference holding a site of each.
WARM_QUERIES = ("UGAGGUAGUAGGUUG", "UGAGGUAGUAGGUUGUAUAGUU", "UAGCAGCACGUAAAUAUUGGCGUUAA")


def warm_worker(context: threading.Thread | None = None) -> None:
    """Scan a few pairs through a stripe worker's whole path once (hits, energies, the TSV and miRanda
    text of a tile), before the worker's stripe comes: what a process pays on its first chunk
    (Numba's functions loaded from its cache and its target context made, the kernels' modules
    loaded) is paid while the main process still reads the inputs, and not by the first tile (0.5 s
    of the interpreter lock per worker on 2x H200). First on the CPU engine, while the CUDA context
    is still being made (on a thread, without the interpreter lock: those starts do not overlap
    across processes, and took until 2.4-3.9 s on 4x H200), then on the GPU engine. The CPU pass
    computes no energies (the GPU engine's are the GPU's), and runs only where the CPU engine's
    aligner is in Numba's cache (:func:`_cpu_aligner_cached`): where only the GPU path was ever
    compiled, it compiled that aligner, holding the interpreter lock for tens of seconds (a first
    ``--gpus`` scan took 49-63 s instead of 11 s on H200). The reference is
    read back from a file, as a worker on this machine reads its stripe, and the GPU engine is made
    for a cluster worker's default threads (every core), so that a cluster's first scan finds it
    made (engines are kept per process): there, that scan's workers began 0.45 s after the client
    had sent their stripes, against 0.12 s for the next scan (2x H200). ``context``: the thread
    making the CUDA context (:func:`gamut.cuda.device.prewarm`); where it has ended already, the CPU
    pass is skipped (it has nothing to overlap, and the GPU pass loads what the two share). Best
    effort: a failure here (no GPU) leaves it to the scan itself, which meets it again and reports it."""
    for device in ("cpu", "cuda"):
        if device == "cpu" and context is not None and not context.is_alive():
            continue
        try:
            with span("worker warms up", device=device):
                _warm_scan(device)
        except Exception:  # noqa: BLE001 (see above)
            pass


def _warm_scan(device: str) -> None:
    """The warm-up scan of :func:`warm_worker` on ``device``'s engine."""
    from gamut.scanning.engines import make_engine
    from gamut.scanning.fasta import SeqRecord, read_miranda_fasta
    from gamut.scanning.params import ScanParams
    from gamut.scanning.sinks import sink_class

    pair = str.maketrans("ACGU", "UGCA")
    site = "".join("AAGCUACGAU" + q.translate(pair)[::-1] for q in WARM_QUERIES) + "AAGCUACGAU"
    queries = [SeqRecord(f"warm{k}", "", q.encode()) for k, q in enumerate(WARM_QUERIES)]
    with _warm_file(b">site\n" + site.encode() + b"\n") as sites:
        formats = ("tsv", "miranda")  # (nothing is written: a tile is rendered in memory)
        references = read_miranda_fasta(sites)
        if device == "cpu" and not _cpu_aligner_cached(queries, references):
            return
        job = ScanJob(queries, references, ScanParams(noenergy=device == "cpu"), device=device,
                      threads=None if device == "cuda" else 1, progress=False,
                      outputs=[(f"warm.{fmt}", fmt) for fmt in formats])
        job = job.of_references(0, 1, from_file=True)  # read again at first use, as a stripe is
        task = StripeTask(job, tuple(sink_class(fmt) for fmt in formats), make_engine, Stripe(0, 0, 1), 1,
                          ((0, len(queries)),))
        for _ in compute_tiles(task, iter([(0, 0)])):
            pass


@contextlib.contextmanager
def _warm_file(data: bytes) -> Iterator[str]:
    """The path of a file holding ``data`` while the block runs. On Linux a memfd's
    (``/proc/self/fd/N``), so that nothing is left behind when the process ends in its warm-up (a
    worker that its parent stops while it warms up: the warm-up runs on a daemon thread, and a
    folder in ``/tmp`` was left at each such stop); elsewhere a fresh private folder's file."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fd = os.memfd_create("gamut-warm", os.MFD_CLOEXEC)
        try:
            write_all(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gamut-warm-") as folder:  # (made for this process alone)
        path = os.path.join(folder, "site.fa")
        with open(path, "xb") as handle:
            handle.write(data)
        yield path


def _cpu_aligner_cached(queries: Sequence[Any], references: Sequence[Any]) -> bool:
    """True when the CPU engine aligns a pair with only what Numba has cached (or loaded): one
    pair aligned on this thread under :func:`gamut.compiles.cached_only`, which refuses a compile
    before it starts."""
    from gamut.compiles import WouldCompile, cached_only
    from gamut.scanning.engines import make_engine
    from gamut.scanning.fasta import sequence_set_of
    from gamut.scanning.params import ScanParams

    try:
        with cached_only():
            make_engine("cpu", 1).align(sequence_set_of(queries), sequence_set_of(references),
                                        np.zeros((1, 2), np.int64), ScanParams())
    except WouldCompile:
        return False
    return True


def compute_tile_run(task: StripeTask, groups: Sequence[int]) -> tuple[tuple, list[tuple[int, Any]]]:
    """The stripe's plan (:func:`stripe_plan`) and the tiles of ``groups`` (consecutive groups of the
    stripe), as ``(group, data)``: a cluster task (:func:`gamut.cluster.run_pinned`, through
    :func:`gamut.scanning.pipeline.ahead.tile_run`) of several tiles. The client checks the plan
    against its own. The stripe's pipeline is kept
    in this worker process between its tasks (:class:`StripeStream`): the GPU aligns the next run's
    first rectangles while this run's last ones are rendered, where a pipeline per task filled and
    drained at every run (2x H200: 0.06-0.14 s without alignment at each of a stripe's seven run
    boundaries). A run that is not the next of the kept pipeline (a retry, another worker's
    task) starts a pipeline of its own from its first group."""
    groups = list(groups)
    if not groups:
        return stripe_plan(task), []
    mark("stripe run starts", stripe=task.stripe.index, group=groups[0])
    stream = _STREAMS.take(task, groups[0])
    try:
        got = [stream.next(g) for g in groups]
    except BaseException:
        stream.close()
        raise
    _STREAMS.keep(task, stream)
    return stripe_plan(task), got


class StripeStream:
    """One pipeline over a stripe's tiles from group ``first`` on (:func:`compute_tiles`), taken
    tile by tile across cluster tasks."""

    def __init__(self, task: StripeTask, first: int) -> None:
        self.next_group = first
        self.last = len(task.groups) - 1
        self._tiles = compute_tiles(task, ((g, g) for g in range(first, len(task.groups))))

    def next(self, group: int) -> tuple[int, Any]:
        if group != self.next_group:
            raise RuntimeError(f"tile {group} asked of a stripe pipeline at tile {self.next_group}")
        key, data = next(self._tiles)
        self.next_group = key + 1
        return key, data

    @property
    def done(self) -> bool:
        return self.next_group > self.last

    def close(self) -> None:
        self._tiles.close()


class _Streams:
    """This worker process' kept stripe pipelines (at most one per stripe, of the latest scan); a
    pipeline in use is out of it (:meth:`take`) until it is kept again (:meth:`keep`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[tuple[str, int], StripeStream] = {}

    def take(self, task: StripeTask, first: int) -> StripeStream:
        key = (task.token, task.stripe.index)
        with self._lock:
            stale = [k for k in self._kept if k[0] != task.token]  # an earlier scan's: done with
            old = [self._kept.pop(k) for k in stale]
            stream = self._kept.pop(key, None)
        for s in old:
            s.close()
        if stream is not None and stream.next_group != first:
            stream.close()
            stream = None
        return stream if stream is not None else StripeStream(task, first)

    def keep(self, task: StripeTask, stream: StripeStream) -> None:
        if stream.done:
            stream.close()
            return
        with self._lock:
            replaced = self._kept.pop((task.token, task.stripe.index), None)
            self._kept[(task.token, task.stripe.index)] = stream
        if replaced is not None:
            replaced.close()


#: The stripe pipelines a Dask worker process keeps between the tasks of a scan
#: (:func:`compute_tile_run`): process state by necessity, as a GPU engine's is.
_STREAMS = _Streams()
