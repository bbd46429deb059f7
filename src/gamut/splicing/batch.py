"""A list of spliced-alignment cases as concatenated arrays, for compiled code over whole batches.

Every per-case array (sorted exons, input order, target) is concatenated with an offset array
(``*_off``, one more entry than there are cases). Bases shared by several cases (several targets
against one genomic sequence) are stored once.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from gamut.splicing.model import SpliceCase


def offsets(sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    """``[0, s0, s0 + s1, ...]`` as int64."""
    sizes = np.asarray(sizes, np.int64)
    out = np.zeros(sizes.size + 1, np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


class CaseBatch:
    """Concatenated arrays of ``cases`` (exons sorted per case, as :class:`SpliceCase` keeps them)."""

    def __init__(self, cases: Sequence[SpliceCase]) -> None:
        self.cases = list(cases)
        unique: dict[int, int] = {}
        bases: list[np.ndarray] = []
        base_index = []
        for case in self.cases:
            index = unique.setdefault(id(case.base), len(bases))
            if index == len(bases):
                bases.append(case.base)
            base_index.append(index)
        base_start = offsets([b.size for b in bases])
        self.base = np.concatenate(bases) if bases else np.zeros(0, np.uint8)
        self.base_off = base_start[np.asarray(base_index, np.int64)] if bases else np.zeros(0, np.int64)
        self.n_exons = np.asarray([c.n_exons for c in self.cases], np.int64)
        self.exon_off = offsets(self.n_exons)
        self.starts = self._concat([c.starts for c in self.cases], np.int32)
        self.ends = self._concat([c.ends for c in self.cases], np.int32)
        self.order = self._concat([c.order for c in self.cases], np.int64)
        self.target_len = np.asarray([c.target.size for c in self.cases], np.int64)
        self.target_off = offsets(self.target_len)
        self.target = self._concat([c.target for c in self.cases], np.uint8)

    @staticmethod
    def _concat(arrays: list[np.ndarray], dtype) -> np.ndarray:
        return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)

    def __len__(self) -> int:
        return len(self.cases)

    @property
    def exon_lengths(self) -> np.ndarray:
        return self.ends.astype(np.int64) - self.starts

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.cases]

    def per_case_sum(self, per_exon: np.ndarray) -> np.ndarray:
        """Sum of a per-exon array over each case's exons."""
        running = offsets(per_exon)
        return running[self.exon_off[1:]] - running[self.exon_off[:-1]]

    @property
    def cells(self) -> np.ndarray:
        """Target length times total exon length of every case (:attr:`SpliceCase.cells`)."""
        return self.target_len * self.per_case_sum(self.exon_lengths)

    @property
    def max_exon(self) -> np.ndarray:
        """Length of each case's longest exon."""
        return np.maximum.reduceat(self.exon_lengths, self.exon_off[:-1]) if len(self) else np.zeros(0, np.int64)

    @property
    def covered(self) -> np.ndarray:
        """Base positions covered by each case's exons (the size of their union): a bound on the
        total length of any chain, whose exons do not overlap."""
        if not len(self):
            return np.zeros(0, np.int64)
        shift = np.repeat(np.arange(len(self), dtype=np.int64) * (int(self.ends.max()) + 1), self.n_exons)
        reach = np.maximum.accumulate(self.ends + shift) - shift  # furthest end so far in the case
        before = np.empty_like(reach)
        before[1:] = reach[:-1]
        before[self.exon_off[:-1]] = 0  # nothing covered before a case's first exon
        return self.per_case_sum(np.maximum(0, self.ends - np.maximum(self.starts, before)))
