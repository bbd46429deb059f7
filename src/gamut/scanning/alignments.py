"""What an alignment engine returns for a chunk of (query, reference) pairs, and the engine interface.

Every engine (CPU, GPU, distributed) implements :class:`AlignmentEngine`: given the query and
reference sets and a chunk of pairs, it returns, for every pair, the candidates that survive
diagonal suppression (miranda-model §6), in processing order, with their tracebacks (miranda-model §7.1), as one
:class:`ChunkAlignments` (columns; :class:`PairAlignments` is one pair's view, for tests). Everything after
that (reference-overlap rule, flanks, strict, energies, text) is engine-independent
(:mod:`gamut.scanning.hits`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Sequence

import numpy as np

from gamut.scanning.params import ScanParams

if TYPE_CHECKING:
    from gamut.scanning.sequences import SequenceSet

#: Alignment column kinds: both letters, a reference letter facing a query gap, a query letter
#: facing a reference gap.
OP_MATCH, OP_QGAP, OP_RGAP = 1, 2, 3

#: Candidates whose diagonals (j - i) differ by at most this are suppressed (miranda-model §6).
DIAGONAL_WINDOW = 6


@dataclass
class ChunkAlignments:
    """What an engine returns for a chunk of pairs: the survivors of every pair, as columns.

    Survivor k ends at (``i_end[k]``, ``j_end[k]``), starts at (``i_start[k]``, ``j_start[k]``)
    (raw DP coordinates, miranda-model §7) and its columns are ``ops[op_start[k]:op_end[k]]``,
    query 3' side first. Every array is int64 except ``ops`` (uint8). Rows of different pairs may
    interleave in any order (engines that finish pairs out of order need not sort).

    Which rows are whose, in one of two forms (:meth:`survivor_ranges` reads either):

    - dense (``pairs_with`` None): pair p's survivors are rows ``sv_start[p]:sv_stop[p]``, for
      every pair of the chunk;
    - sparse (what :meth:`concat` gives): ``pairs_with`` lists pairs (ascending, none twice),
      ``sv_start[k]:sv_stop[k]`` are pair ``pairs_with[k]``'s rows, the chunk's other pairs have
      none, and ``size`` is the chunk's number of pairs. Nothing is stored per pair of the chunk.
    """

    sv_start: np.ndarray
    sv_stop: np.ndarray
    score: np.ndarray
    i_end: np.ndarray
    j_end: np.ndarray
    i_start: np.ndarray
    j_start: np.ndarray
    op_start: np.ndarray
    op_end: np.ndarray
    ops: np.ndarray
    pairs_with: np.ndarray | None = None
    size: int = 0

    @property
    def n_pairs(self) -> int:
        return int(self.sv_start.shape[0]) if self.pairs_with is None else int(self.size)

    def survivor_count(self) -> int:
        return int((self.sv_stop - self.sv_start).sum())

    def survivor_ranges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pairs with at least one survivor (ascending int64) and their rows ``start:stop``."""
        if self.pairs_with is None:
            pairs = np.flatnonzero(self.sv_stop > self.sv_start)
            return pairs, self.sv_start[pairs], self.sv_stop[pairs]
        some = self.sv_stop > self.sv_start
        return self.pairs_with[some], self.sv_start[some], self.sv_stop[some]

    def dense_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """``(sv_start, sv_stop)`` per pair of the chunk (O(pairs): for tests and small chunks)."""
        if self.pairs_with is None:
            return self.sv_start, self.sv_stop
        start = np.zeros(self.n_pairs, np.int64)
        stop = np.zeros(self.n_pairs, np.int64)
        start[self.pairs_with] = self.sv_start
        stop[self.pairs_with] = self.sv_stop
        return start, stop

    def pair(self, p: int) -> "PairAlignments":
        """Pair ``p``'s survivors as a :class:`PairAlignments` (for tests and the per-pair oracle;
        O(1) in the dense form, a binary search in the sparse one)."""
        if self.pairs_with is None:
            at, found = p, True
        else:
            at = int(np.searchsorted(self.pairs_with, p))
            found = at < self.pairs_with.shape[0] and self.pairs_with[at] == p
        rows = np.arange(self.sv_start[at], self.sv_stop[at]) if found else np.zeros(0, np.int64)
        counts = self.op_end[rows] - self.op_start[rows]
        offsets = np.zeros(rows.shape[0] + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        ops = (np.concatenate([self.ops[a:b] for a, b in zip(self.op_start[rows], self.op_end[rows])])
               if rows.size else np.zeros(0, np.uint8))
        return PairAlignments(*(np.asarray(f[rows], np.int32) for f in
                                (self.score, self.i_end, self.j_end, self.i_start, self.j_start)), offsets, ops)

    @classmethod
    def empty(cls, n_pairs: int) -> "ChunkAlignments":
        z = np.zeros(0, np.int64)
        return cls(z, z, z, z, z, z, z, z, z, np.zeros(0, np.uint8), pairs_with=z, size=n_pairs)

    @classmethod
    def concat(cls, parts: "Sequence[ChunkAlignments]", pair_index: "Sequence[np.ndarray]", n_pairs: int) -> "ChunkAlignments":
        """Merge results of disjoint pair subsets: ``parts[m]`` holds the pairs ``pair_index[m]`` of the
        chunk (pairs in no part have no survivors). Every engine assembles its chunk this way, in
        the sparse form: O(pairs with survivors), nothing per pair of the chunk."""
        owners, starts, stops = [], [], []
        rows = 0
        for part, idx in zip(parts, pair_index):
            pairs, start, stop = part.survivor_ranges()
            owners.append(np.asarray(idx, np.int64)[pairs])
            starts.append(start + rows)
            stops.append(stop + rows)
            rows += part.score.shape[0]
        z = np.zeros(0, np.int64)
        owner = np.concatenate(owners) if owners else z
        order = np.argsort(owner, kind="stable")
        sv_start = np.concatenate(starts)[order] if starts else z
        sv_stop = np.concatenate(stops)[order] if stops else z
        fields = []
        for name in ("score", "i_end", "j_end", "i_start", "j_start"):
            fields.append(np.concatenate([getattr(p, name) for p in parts]).astype(np.int64, copy=False)
                          if parts else np.zeros(0, np.int64))
        shifts = []
        n_ops = 0
        for part in parts:
            shifts.append(n_ops)
            n_ops += part.ops.shape[0]
        op_start = (np.concatenate([p.op_start + s for p, s in zip(parts, shifts)]) if parts else np.zeros(0, np.int64))
        op_end = (np.concatenate([p.op_end + s for p, s in zip(parts, shifts)]) if parts else np.zeros(0, np.int64))
        ops = np.concatenate([p.ops for p in parts]) if parts else np.zeros(0, np.uint8)
        return cls(sv_start, sv_stop, *fields, op_start, op_end, ops, pairs_with=owner[order], size=int(n_pairs))


@dataclass
class PairAlignments:
    """Survivors of one pair, in processing order. Coordinates as in miranda-model §7 (raw, 1-based ends).

    ``ops[op_offsets[k]:op_offsets[k+1]]`` are survivor k's columns, query 3' side first.
    """

    score: np.ndarray
    i_end: np.ndarray
    j_end: np.ndarray
    i_start: np.ndarray
    j_start: np.ndarray
    op_offsets: np.ndarray
    ops: np.ndarray

    def __len__(self) -> int:
        return int(self.score.shape[0])

    def columns(self, k: int) -> np.ndarray:
        return self.ops[self.op_offsets[k] : self.op_offsets[k + 1]]

    @classmethod
    def empty(cls) -> "PairAlignments":
        z = np.zeros(0, np.int32)
        return cls(z, z, z, z, z, np.zeros(1, np.int64), np.zeros(0, np.uint8))


@dataclass(frozen=True)
class EncodedSeq:
    """A sequence as the engines see it: class codes (0..4), plus its length."""

    codes: np.ndarray  # int8

    def __len__(self) -> int:
        return int(self.codes.shape[0])


class AlignmentEngine(Protocol):
    r"""Aligns a chunk of (query, reference) pairs. ``pairs`` (int64, shape (n, 2)) holds (query
    index, reference index) into the two :class:`~gamut.scanning.sequences.SequenceSet`\ s.

    Returns the survivors of every pair as one :class:`ChunkAlignments` (no object per pair).
    """

    #: The engine's name (``simd``, ``cuda``; test engines have their own).
    name: str
    #: Where the hits' energies are best folded beside this engine: ``cpu``, or ``auto`` (the GPU
    #: when one is usable) for an engine that runs on a GPU.
    energy_device: str
    #: Whether ``align`` keeps every CPU core busy (a CPU engine): post-processing beside it then
    #: runs on one thread; beside an engine that does not (a GPU's), it takes every core.
    occupies_cores: bool
    #: The chunk size (cells and pairs) that keeps this engine busy and memory bounded.
    preferred_chunk_cells: int
    preferred_chunk_pairs: int

    def align(
        self,
        queries: "SequenceSet",
        references: "SequenceSet",
        pairs: np.ndarray,
        params: ScanParams,
    ) -> ChunkAlignments: ...
