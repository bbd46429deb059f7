"""A list of spliced-alignment cases as concatenated arrays, for compiled code over whole batches.

Every per-case array (sorted exons, input order, target) is concatenated with an offset array
(``*_off``, one more entry than there are cases). Bases shared by several cases (several targets
against one genomic sequence) are stored once.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from gamut.splicing.model import SCORE_LIMIT, SpliceCase


def offsets(sizes: Sequence[int] | np.ndarray) -> np.ndarray:
    """``[0, s0, s0 + s1, ...]`` as int64."""
    sizes = np.asarray(sizes, np.int64)
    out = np.zeros(sizes.size + 1, np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


class CaseBatch:
    """Concatenated arrays of a batch of cases (exons sorted per case, as :class:`SpliceCase` keeps
    them): from :class:`SpliceCase` objects, or built as arrays (:meth:`from_arrays`) where a case
    per object would cost too much (reads mode)."""

    def __init__(self, cases: Sequence[SpliceCase]) -> None:
        cases = list(cases)
        unique: dict[int, int] = {}
        bases: list[np.ndarray] = []
        base_index = []
        for case in cases:
            index = unique.setdefault(id(case.base), len(bases))
            if index == len(bases):
                bases.append(case.base)
            base_index.append(index)
        base_start = offsets([b.size for b in bases])
        base_index = np.asarray(base_index, np.int64)
        self._set(
            base=np.concatenate(bases) if bases else np.zeros(0, np.uint8),
            base_off=base_start[base_index] if bases else np.zeros(0, np.int64),
            base_len=np.diff(base_start)[base_index] if bases else np.zeros(0, np.int64),
            n_exons=np.asarray([c.n_exons for c in cases], np.int64),
            starts=self._concat([c.starts for c in cases], np.int32),
            ends=self._concat([c.ends for c in cases], np.int32),
            order=self._concat([c.order for c in cases], np.int64),
            target_len=np.asarray([c.target.size for c in cases], np.int64),
            target=self._concat([c.target for c in cases], np.uint8),
            names=[c.name for c in cases])

    def _set(self, *, base, base_off, base_len, n_exons, starts, ends, order, target_len, target, names) -> None:
        self.base, self.base_off, self.base_len = base, base_off, base_len
        self.n_exons, self.exon_off = n_exons, offsets(n_exons)
        self.starts, self.ends, self.order = starts, ends, order
        self.target_len, self.target_off, self.target = target_len, offsets(target_len), target
        self.names = names

    @classmethod
    def from_arrays(cls, *, base: np.ndarray, base_off: np.ndarray, base_len: np.ndarray, n_exons: np.ndarray,
                    starts: np.ndarray, ends: np.ndarray, order: np.ndarray, target_len: np.ndarray,
                    target: np.ndarray, names: list[str]) -> "CaseBatch":
        """A batch from its arrays: case ``c``'s base is ``base[base_off[c]:][:base_len[c]]``, its
        sorted exons (on that base) the next ``n_exons[c]`` rows of ``starts``/``ends``/``order``,
        its target the next ``target_len[c]`` codes of ``target``. The caller checks them (as
        :func:`gamut.splicing.model.make_case` does)."""
        batch = cls.__new__(cls)
        batch._set(base=np.ascontiguousarray(base, np.uint8), base_off=np.asarray(base_off, np.int64),
                   base_len=np.asarray(base_len, np.int64), n_exons=np.asarray(n_exons, np.int64),
                   starts=np.ascontiguousarray(starts, np.int32), ends=np.ascontiguousarray(ends, np.int32),
                   order=np.asarray(order, np.int64), target_len=np.asarray(target_len, np.int64),
                   target=np.ascontiguousarray(target, np.uint8), names=list(names))
        return batch

    def slice(self, lo: int, hi: int) -> "CaseBatch":
        """Cases ``lo..hi - 1`` (the bases are shared, not copied)."""
        x0, x1 = int(self.exon_off[lo]), int(self.exon_off[hi])
        t0, t1 = int(self.target_off[lo]), int(self.target_off[hi])
        return CaseBatch.from_arrays(
            base=self.base, base_off=self.base_off[lo:hi], base_len=self.base_len[lo:hi],
            n_exons=self.n_exons[lo:hi], starts=self.starts[x0:x1], ends=self.ends[x0:x1],
            order=self.order[x0:x1], target_len=self.target_len[lo:hi], target=self.target[t0:t1],
            names=self.names[lo:hi])

    def case(self, c: int) -> SpliceCase:
        """Case ``c`` as a :class:`SpliceCase` (views of the batch's arrays)."""
        x0, x1 = self.exon_off[c], self.exon_off[c + 1]
        b0 = self.base_off[c]
        return SpliceCase(self.base[b0:b0 + self.base_len[c]], self.starts[x0:x1], self.ends[x0:x1],
                          self.order[x0:x1], self.target[self.target_off[c]:self.target_off[c + 1]], self.names[c])

    def check_score_range(self, max_abs: int) -> None:
        """:func:`gamut.splicing.model.check_score_range` of every case, at once."""
        from gamut.splicing.model import check_score_range

        span = self.base_len + self.target_len + 2
        bad = np.flatnonzero(span * max_abs >= SCORE_LIMIT)
        if bad.size:
            check_score_range(self.case(int(bad[0])), max_abs)

    @staticmethod
    def _concat(arrays: list[np.ndarray], dtype) -> np.ndarray:
        return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def exon_lengths(self) -> np.ndarray:
        return self.ends.astype(np.int64) - self.starts

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
