"""What an alignment engine returns for a (query, reference) pair, and the engine interface.

Every engine (CPU, GPU, distributed) implements :class:`AlignmentEngine`: given encoded queries,
references and a list of pairs, it returns, per pair, the candidates that survive diagonal
suppression (spec §6), in processing order, with their tracebacks (spec §7.1). Everything after
that (reference-overlap rule, flanks, strict, energies, text) is engine-independent
(:mod:`gamut.scan.hits`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from gamut.scan.params import ScanParams

#: Alignment column kinds: both letters, a reference letter facing a query gap, a query letter
#: facing a reference gap.
OP_MATCH, OP_QGAP, OP_RGAP = 1, 2, 3

#: Candidates whose diagonals (j - i) differ by at most this are suppressed (spec §6).
DIAGONAL_WINDOW = 6


@dataclass
class PairAlignments:
    """Survivors of one pair, in processing order. Coordinates as in spec §7 (raw, 1-based ends).

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

    def as_batch(self) -> tuple[tuple, int, int]:
        """``(arrays, start, stop)``: survivor arrays (score, i_end, j_end, i_start, j_start,
        op_offsets, ops) holding this pair's survivors as rows ``start:stop``."""
        return (self.score, self.i_end, self.j_end, self.i_start, self.j_start, self.op_offsets, self.ops), 0, len(self)

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
    """Aligns many (query, reference) pairs. ``pairs`` holds (query index, reference index).

    Returns one :class:`PairAlignments` per pair, in order: a list, or a sequence that builds
    them on access (the GPU engine's).
    """

    name: str

    def align(
        self,
        queries: Sequence[EncodedSeq],
        references: Sequence[EncodedSeq],
        pairs: np.ndarray,
        params: ScanParams,
    ) -> Sequence[PairAlignments]: ...
