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

    Pair p's survivors are rows ``sv_start[p]:sv_stop[p]`` (in processing order, miranda-model §6);
    survivor k ends at (``i_end[k]``, ``j_end[k]``), starts at (``i_start[k]``, ``j_start[k]``)
    (raw DP coordinates, miranda-model §7) and its columns are ``ops[op_start[k]:op_end[k]]``, query 3'
    side first. Every array is int64 except ``ops`` (uint8). Rows of different pairs may
    interleave in any order (engines that finish pairs out of order need not sort).
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

    @property
    def n_pairs(self) -> int:
        return int(self.sv_start.shape[0])

    def survivor_count(self) -> int:
        return int((self.sv_stop - self.sv_start).sum())

    def pair(self, p: int) -> "PairAlignments":
        """Pair ``p``'s survivors as a :class:`PairAlignments` (for tests and the per-pair oracle)."""
        rows = np.arange(self.sv_start[p], self.sv_stop[p])
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
        zp = np.zeros(n_pairs, np.int64)
        return cls(zp, zp.copy(), z, z, z, z, z, z, z, np.zeros(0, np.uint8))

    @classmethod
    def concat(cls, parts: "Sequence[ChunkAlignments]", pair_index: "Sequence[np.ndarray]", n_pairs: int) -> "ChunkAlignments":
        """Merge results of disjoint pair subsets: ``parts[m]`` holds the pairs ``pair_index[m]`` of the
        chunk (pairs in no part have no survivors). Every engine assembles its chunk this way."""
        sv_start = np.zeros(n_pairs, np.int64)
        sv_stop = np.zeros(n_pairs, np.int64)
        rows = 0
        n_ops = 0
        for part, idx in zip(parts, pair_index):
            sv_start[idx] = part.sv_start + rows
            sv_stop[idx] = part.sv_stop + rows
            rows += part.score.shape[0]
        fields = []
        for name in ("score", "i_end", "j_end", "i_start", "j_start"):
            fields.append(np.concatenate([getattr(p, name) for p in parts]).astype(np.int64, copy=False)
                          if parts else np.zeros(0, np.int64))
        shifts = []
        for part in parts:
            shifts.append(n_ops)
            n_ops += part.ops.shape[0]
        op_start = (np.concatenate([p.op_start + s for p, s in zip(parts, shifts)]) if parts else np.zeros(0, np.int64))
        op_end = (np.concatenate([p.op_end + s for p, s in zip(parts, shifts)]) if parts else np.zeros(0, np.int64))
        ops = np.concatenate([p.ops for p in parts]) if parts else np.zeros(0, np.uint8)
        return cls(sv_start, sv_stop, *fields, op_start, op_end, ops)


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
