"""Reads placed on the genome by minimap2's spliced mapping (its Python binding ``mappy``, preset
``splice``, as ``minimap2 -cx splice``) on a pool of threads, batch by batch ahead of the exact DP.

One ``mappy.Aligner`` serves every thread: its index is built once (on all the threads) and only
read after; each thread maps with a ``mappy.ThreadBuffer`` of its own (minimap2's per-thread
scratch memory). ``mappy`` releases the interpreter lock while it maps a read, so the threads map
in parallel. A read's placement is its hit with the most matching letters (the first of equals,
as :func:`gamut.splicing.reads.read_placements` takes from a file), which does not depend on the
thread that maps it, and batches come back in input order: the output is the same whatever the
thread count or the batch size.
"""
from __future__ import annotations

import contextlib
import math
import os
import tempfile
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from operator import attrgetter

import numpy as np

from gamut.errors import InputError, UsageError
from gamut.splicing.read_batch import ReadSpans
from gamut.splicing.placements import ReadPlacement

#: Most reads one task of the pool maps (a batch is cut into at least 4 tasks per thread).
READS_PER_TASK = 64
#: The row of a read without a hit (:class:`ReadSpans`' fields).
_NO_HIT = (-1, 0, 0, 0, 0)
_MATCHES = attrgetter("mlen")


def spliced_aligner(genome_path: str | os.PathLike, threads: int, genome: Mapping[str, str] | None = None):
    """minimap2's index of a genome FASTA (gzip allowed) for spliced mapping, built on ``threads``
    threads (a genome read from ``-`` or a pipe is given as ``genome``, its records). Without
    ``mappy`` installed, a :class:`UsageError` says how to get it or to pass alignments instead; a
    genome minimap2 cannot read is an :class:`InputError`."""
    try:
        import mappy
    except ImportError:
        raise UsageError("placing reads needs their alignments (--alignments: PSL from BLAT, PAF or SAM from "
                         "minimap2) or minimap2's Python binding: pip install mappy") from None
    with _genome_file(genome_path, genome) as path:
        aligner = mappy.Aligner(path, preset="splice", n_threads=threads)
    if not aligner:
        raise InputError(f"{os.fspath(genome_path)}: minimap2 could not read or index the genome")
    return aligner


@contextlib.contextmanager
def _genome_file(path: str | os.PathLike, genome: Mapping[str, str] | None) -> Iterator[str]:
    """A file name of the genome for minimap2, which indexes a file by its name: ``path``, or for a
    stream (read already) a FASTA of ``genome`` in a private temporary directory, removed after."""
    from gamut.io.inputs import is_stream

    if not is_stream(path):
        yield os.fspath(path)
        return
    if genome is None:
        raise InputError(f"{os.fspath(path)}: minimap2 needs the genome as a file (or its records)")
    with tempfile.TemporaryDirectory(prefix="gamut-genome-") as directory:
        name = os.path.join(directory, "genome.fa")
        with open(name, "w") as handle:
            for record, sequence in genome.items():
                handle.write(f">{record}\n{sequence}\n")
        yield name


class ReadMapper:
    """Places reads with minimap2's spliced mapping on ``threads`` threads (default: all cores),
    batch by batch (:meth:`placed_batches`); ``reads_per_task``: the most reads a task maps."""

    def __init__(self, genome_path: str | os.PathLike, threads: int | None = None, *,
                 reads_per_task: int = READS_PER_TASK, genome: Mapping[str, str] | None = None) -> None:
        if reads_per_task < 1:
            raise ValueError(f"reads_per_task must be >= 1, got {reads_per_task}")
        self.threads = max(1, threads or os.cpu_count() or 1)
        self.reads_per_task = reads_per_task
        self.aligner = spliced_aligner(genome_path, self.threads, genome)
        self.contigs: tuple[str, ...] = tuple(self.aligner.seq_names)
        self._contig = {name: k for k, name in enumerate(self.contigs)}
        self._local = threading.local()  # each pool thread's ThreadBuffer

    def _map(self, reads: list[tuple[str, str]]) -> np.ndarray:
        """Rows ``(contig, strand, start, end, matches)`` of each read's best hit (:data:`_NO_HIT`: none)."""
        buffer = getattr(self._local, "buffer", None)
        if buffer is None:
            import mappy

            buffer = self._local.buffer = mappy.ThreadBuffer()
        aligner, contig = self.aligner, self._contig
        rows = []
        for _, sequence in reads:
            hit = max(aligner.map(sequence, buf=buffer), key=_MATCHES, default=None)
            rows.append(_NO_HIT if hit is None else (contig[hit.ctg], hit.strand, hit.r_st, hit.r_en, hit.mlen))
        return np.array(rows, np.int64).reshape(-1, 5)

    def _submit(self, pool: ThreadPoolExecutor, batch: list[tuple[str, str]]) -> list[Future]:
        step = max(1, min(self.reads_per_task, math.ceil(len(batch) / (4 * self.threads))))
        return [pool.submit(self._map, batch[i:i + step]) for i in range(0, len(batch), step)]

    def _spans(self, futures: list[Future]) -> ReadSpans:
        rows = np.concatenate([f.result() for f in futures]) if futures else np.zeros((0, 5), np.int64)
        return ReadSpans(self.contigs, *(np.ascontiguousarray(rows[:, k]) for k in range(5)))

    def placed_batches(self, batches: Iterable[list[tuple[str, str]]]) -> Iterator[tuple[list, ReadSpans]]:
        """Each batch of ``(read id, sequence)`` with where its reads aligned, in order. The pool maps
        the next batch while the caller works on this one (at most two batches in the pool); an
        error of a task is raised here, and closing the generator (or an error) cancels the tasks
        not yet started and waits for the running ones."""
        pool = ThreadPoolExecutor(self.threads, thread_name_prefix="gamut-minimap2")
        pending: deque[tuple[list, list[Future]]] = deque()
        try:
            for batch in batches:
                pending.append((batch, self._submit(pool, batch)))
                if len(pending) > 1:
                    batch, futures = pending.popleft()
                    yield batch, self._spans(futures)
            while pending:
                batch, futures = pending.popleft()
                yield batch, self._spans(futures)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def mapped_placements(genome_path: str | os.PathLike, reads: list[tuple[str, str]], threads: int | None = None,
                      genome: Mapping[str, str] | None = None) -> dict[str, ReadPlacement]:
    """Each read's best placement by minimap2's spliced mapping (:class:`ReadMapper`), by read id
    (reads without a hit left out)."""
    mapper = ReadMapper(genome_path, threads, genome=genome)
    out: dict[str, ReadPlacement] = {}
    for batch, spans in mapper.placed_batches([list(reads)]):
        rows = zip(spans.contig.tolist(), spans.strand.tolist(), spans.start.tolist(), spans.end.tolist(),
                   spans.matches.tolist())
        for (name, _), (contig, strand, start, end, matches) in zip(batch, rows):
            if contig >= 0:
                out[name] = ReadPlacement(mapper.contigs[contig], strand, start, end, matches)
    return out
