"""The SIMD CPU alignment engine: miRanda's DP (miranda-model §5-7.1) over lanes of independent pairs.

The production CPU engine; the same results (survivors, order, scores, coordinates, ops) as the
full-matrix reference engine of the tests, computed in three steps per *block* of up to
:data:`~.simd_score.LANES` pairs that share one reference (or, for references with few pairs in
the chunk, one query):

1. **Score-only pass** (:mod:`.simd_score`): all lanes at once, vectorised, with checkpoints of
   the exact DP state; candidates come from an exact scalar recomputation of the rare columns
   that reach the threshold.
2. **Diagonal suppression** per pair (:func:`~gamut.scanning.engines.common.order_and_suppress`).
3. **Traceback of survivors only** (:mod:`.simd_traceback`), in windows that start at a
   checkpoint.

:class:`SimdEngine` sorts pairs into blocks (:func:`~.simd_blocks.make_blocks`) and runs
contiguous runs of blocks on a thread pool, one compiled call (:func:`~.simd_blocks.align_blocks`)
per run.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from gamut.scanning.alignments import ChunkAlignments
from gamut.scanning.engines.common import QueryCache
from gamut.scanning.engines.simd_blocks import align_blocks, make_blocks, split_runs
from gamut.scanning.params import (
    ScanParams,
    exact_int_type,
    gap_rise,
    row_scheme,
    score_bound,
)


@dataclass
class QueryArrays:
    """Every query's DP rows (miranda-model §4), concatenated: query q's rows 0..L are ``qrow[q]:qrow[q+1]``.

    ``prof[row, c]``: score against reference class c (the transposed
    :attr:`~gamut.scanning.params.QueryTables.profile`); ``go``, ``ge``, ``seed`` per row; and per
    query the bounds that choose the lane type (:meth:`lane_dtype`).
    """

    qlen: np.ndarray
    qrow: np.ndarray
    prof: np.ndarray  # int64 (rows, 5)
    go: np.ndarray
    ge: np.ndarray
    seed: np.ndarray  # uint8
    top: np.ndarray  # sum of the rows' best positive scores
    high: np.ndarray  # largest score
    low: np.ndarray  # smallest score or gap cost, at most -1
    rise: int = 0  # the most a gap step adds (see gap_rise)
    cast: dict = field(default_factory=dict)

    @classmethod
    def build(cls, queries, params: ScanParams) -> "QueryArrays":
        """Tables of all queries of a :class:`~gamut.scanning.hits.SequenceSet`, one
        :func:`~gamut.scanning.params.row_scheme` per distinct length (same values as
        :func:`~gamut.scanning.params.query_tables`)."""
        offsets = np.asarray(queries.offsets, np.int64)
        qlen = np.diff(offsets)
        qrow = np.zeros(qlen.shape[0] + 1, np.int64)
        np.cumsum(qlen + 1, out=qrow[1:])
        rows = int(qrow[-1])
        prof = np.zeros((rows, 5), np.int64)
        go = np.zeros(rows, np.int64)
        ge = np.zeros(rows, np.int64)
        seed = np.zeros(rows, np.uint8)
        codes = np.asarray(queries.codes, np.int64)
        for L in np.unique(qlen):
            L = int(L)
            scheme = row_scheme(L, params)
            members = np.flatnonzero(qlen == L)
            # reversed query: row i (1..L) holds letter L - i of the query
            letters = codes[offsets[members][:, None] + (L - np.arange(1, L + 1))[None, :]]
            at = qrow[members][:, None] + np.arange(1, L + 1)[None, :]
            prof[at] = scheme.scores[np.arange(1, L + 1)[None, :], letters]
            go[qrow[members][:, None] + np.arange(L + 1)] = scheme.gap_open
            ge[qrow[members][:, None] + np.arange(L + 1)] = scheme.gap_extend
            seed[qrow[members][:, None] + np.arange(L + 1)] = scheme.seed_row
        starts = qrow[:-1]
        top = np.add.reduceat(np.maximum(prof.max(axis=1), 0), starts) if rows else np.zeros(0, np.int64)
        high = np.maximum.reduceat(prof.max(axis=1), starts) if rows else np.zeros(0, np.int64)
        lows = np.minimum(np.minimum(prof.min(axis=1), go), ge)
        low = np.minimum(np.minimum.reduceat(lows, starts), -1) if rows else np.zeros(0, np.int64)
        return cls(qlen, qrow, prof, go, ge, seed, top, high, low, gap_rise(params))

    def bound(self, used: np.ndarray, ref_length: int) -> int:
        """The largest value a cell can hold for queries ``used`` against references of at most
        ``ref_length`` letters (:func:`~gamut.scanning.params.score_bound`)."""
        return score_bound(int(self.top[used].max()), self.rise, ref_length)

    def lane_dtype(self, used: np.ndarray, ref_length: int = 0) -> type:
        """The narrowest lane type in which the score-only pass is exact for queries ``used``
        against references of at most ``ref_length`` letters.

        Cells hold D in [0, bound] and A, B, C in [low, bound] (bound: :meth:`bound`, low: the most
        negative score or gap cost, or -1); the pass also forms D + score, A + open and
        C + extend, so bound + max(high, rise) and 2 * low must fit.
        """
        high = max(int(self.high[used].max()), self.rise)
        return exact_int_type(self.bound(used, ref_length) + high, 2 * int(self.low[used].min()))

    def tables(self, dtype: type) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(prof, go, ge) in the lane type (cached)."""
        if dtype not in self.cast:
            self.cast[dtype] = (self.prof.astype(dtype), self.go.astype(dtype), self.ge.astype(dtype))
        return self.cast[dtype]


class SimdEngine:
    """Multicore SIMD CPU engine (see the module docstring). ``threads``: None = all cores;
    ``checkpoint_bytes``: checkpoint memory per thread (results never depend on it)."""

    name = "simd"
    energy_device = "cpu"
    occupies_cores = True
    #: Larger chunks give the blocking more queries per reference to fill its lanes.
    preferred_chunk_cells = 1 << 30
    preferred_chunk_pairs = 200_000

    def __init__(self, threads: int | None = None, checkpoint_bytes: int = 32 << 20) -> None:
        self.threads = max(1, threads or os.cpu_count() or 1)
        self.checkpoint_bytes = checkpoint_bytes  # per thread
        self._query_arrays: QueryCache[QueryArrays] = QueryCache(QueryArrays.build)

    def query_arrays(self, queries, params: ScanParams) -> QueryArrays:
        """:class:`QueryArrays` of ``queries``, reused while the same set and parameters come back."""
        return self._query_arrays.get(queries, params)

    def align(self, queries, references, pairs: np.ndarray, params: ScanParams) -> ChunkAlignments:
        """Survivors of every pair (see :class:`~gamut.scanning.alignments.AlignmentEngine`).

        ``queries`` and ``references`` are :class:`~gamut.scanning.hits.SequenceSet` objects.
        """
        pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
        n = pairs.shape[0]
        if n == 0:
            return ChunkAlignments.empty(0)
        qa = self.query_arrays(queries, params)
        r_off = np.asarray(references.offsets, np.int64)
        ref_codes = np.ascontiguousarray(references.codes).view(np.uint8)
        pair_query = np.ascontiguousarray(pairs[:, 0])
        used = np.zeros(qa.qlen.shape[0], bool)
        used[pair_query] = True
        longest = int(np.diff(r_off)[pairs[:, 1]].max())
        dtype = qa.lane_dtype(used, longest)
        qprof, qgo, qge = qa.tables(dtype)
        threshold = params.score_cutoff
        lane_threshold = dtype(min(max(threshold, 0), int(np.iinfo(dtype).max) - 2))
        pad_score = -qa.bound(used, longest) - 1  # D + pad_score < 0: A stays 0 past a lane's end

        pair_ref = np.ascontiguousarray(pairs[:, 1])
        block_ref, block_lanes, block_lm, block_new = make_blocks(pair_ref, np.diff(r_off), qa.qlen, pair_query)
        rlen = np.diff(r_off)[pair_ref]
        block_r = np.where(block_lanes >= 0, rlen[np.maximum(block_lanes, 0)], 0).max(axis=1)
        runs = split_runs(block_lm * (block_r + 1), self.threads)
        args = (pair_query, pair_ref, ref_codes, r_off, qa.qlen, qa.qrow, qprof, qgo, qge, qa.seed, threshold,
                lane_threshold, pad_score, self.checkpoint_bytes)

        sv_start = np.zeros(n, np.int64)
        sv_stop = np.zeros(n, np.int64)

        def run(span: tuple[int, int]):
            a, b = span
            new = block_new[a:b].copy()
            new[0] = True
            return align_blocks(block_ref[a:b], block_lanes[a:b], block_lm[a:b], new, *args, sv_start, sv_stop)

        if self.threads == 1 or len(runs) == 1:
            results = [run(s) for s in runs]
        else:
            with ThreadPoolExecutor(self.threads) as pool:
                results = list(pool.map(run, runs))
        return merge_runs(results, runs, block_lanes, sv_start, sv_stop)


def merge_runs(results: list, runs: list, block_lanes: np.ndarray, sv_start: np.ndarray,
               sv_stop: np.ndarray) -> ChunkAlignments:
    """One :class:`ChunkAlignments` from the runs' outputs (``sv_*`` hold rows of each run's own
    output, for the pairs in the run's blocks)."""
    parts, pair_index = [], []
    for (a, b), (cols, ops) in zip(runs, results):
        lanes = block_lanes[a:b].ravel()
        pairs = lanes[lanes >= 0]
        parts.append(ChunkAlignments(sv_start[pairs], sv_stop[pairs], cols[:, 0], cols[:, 1], cols[:, 2],
                                     cols[:, 3], cols[:, 4], cols[:, 5], cols[:, 6], ops))
        pair_index.append(pairs)
    return ChunkAlignments.concat(parts, pair_index, sv_start.shape[0])

