"""The scan's pairs in miRanda's output order (every reference for the first query, then the second,
...), as int64 arrays: :class:`ScanInput` holds the sequences and cuts the pairs into chunks; a
chunk of an unrestricted scan is a :class:`PairRun`, which knows where it starts. A
:class:`Partition` is a run of the pairs that one process renders
(:mod:`gamut.scanning.pipeline.partitions` plans them)."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from gamut.scanning.fasta import SeqRecord, sequence_set_of
from gamut.scanning.hits import SequenceSet
from gamut.scanning.pair_run import PairRun, rect_of, run_of
from gamut.scanning.params import ScanParams


@dataclass
class ScanInput:
    """Queries and references as read; references are used as trimmed by -trim, if any."""

    queries: list[SeqRecord]
    references: list[SeqRecord]
    params: ScanParams

    @cached_property
    def query_set(self) -> SequenceSet:
        return sequence_set_of(self.queries)

    @cached_property
    def reference_set(self) -> SequenceSet:
        """The references as miRanda sees them (after -trim)."""
        return sequence_set_of(self.references, self.params.trim)

    def with_params(self, params: ScanParams) -> ScanInput:
        """The same scan under other ``params`` of the same ``trim`` and ``restrict`` (e.g. without
        energies), sharing the sequences as encoded and the restricted pairs."""
        if params.trim != self.params.trim or params.restrict != self.params.restrict:
            raise ValueError("with_params keeps trim and restrict")
        other = ScanInput(self.queries, self.references, params)
        for name in ("query_set", "reference_set", "restricted_pairs", "_query_lengths", "_reference_lengths"):
            if name in self.__dict__:
                other.__dict__[name] = self.__dict__[name]
        return other

    @cached_property
    def restricted_pairs(self) -> np.ndarray | None:
        """With -restrict: the allowed (query, reference) index pairs in output order; else None."""
        allowed = self.params.restrict
        if allowed is None:
            return None
        q_index: dict[str, list[int]] = {}
        r_index: dict[str, list[int]] = {}
        for k, q in enumerate(self.queries):
            q_index.setdefault(q.id, []).append(k)
        for k, r in enumerate(self.references):
            r_index.setdefault(r.id, []).append(k)
        found = [(qi, ri) for qid, rid in allowed for qi in q_index.get(qid, ()) for ri in r_index.get(rid, ())]
        pairs = np.array(sorted(found), np.int64).reshape(-1, 2)
        return pairs

    def query_lengths(self) -> np.ndarray:
        """Each query's length (int64), from the records (nothing encoded: a runner that plans
        without aligning, such as the striped one, never encodes the sequences)."""
        return self._query_lengths

    def reference_lengths(self) -> np.ndarray:
        """Each reference's length as scanned (after -trim; int64), from the records (nothing encoded)."""
        return self._reference_lengths

    @cached_property
    def _query_lengths(self) -> np.ndarray:
        return np.fromiter(map(len, self.queries), np.int64, len(self.queries))

    @cached_property
    def _reference_lengths(self) -> np.ndarray:
        lengths = np.fromiter(map(len, self.references), np.int64, len(self.references))
        return np.minimum(lengths, self.params.trim) if self.params.trim > 0 else lengths

    @property
    def n_pairs(self) -> int:
        restricted = self.restricted_pairs
        return len(self.queries) * len(self.references) if restricted is None else int(restricted.shape[0])

    def total_cells(self) -> int:
        """Cells (query x reference letters) of the whole scan."""
        ql, rl = self.query_lengths(), self.reference_lengths()
        restricted = self.restricted_pairs
        if restricted is None:
            return int(ql.sum()) * int(rl.sum())
        return int((ql[restricted[:, 0]] * rl[restricted[:, 1]]).sum())

    def pair_range(self, start: int, stop: int) -> np.ndarray:
        """Pairs ``start..stop-1`` of the output order as an int64 array (n, 2): a
        :class:`PairRun` unless the scan is restricted."""
        restricted = self.restricted_pairs
        if restricted is not None:
            return restricted[start:stop]
        if not self.references:
            return np.zeros((0, 2), np.int64)
        return PairRun.of_range(start, stop, len(self.references))

    def rect_chunks(self, q0: int, q1: int, r0: int, r1: int, chunk_cells: int) -> Iterator[np.ndarray]:
        """Queries ``q0..q1-1`` against references ``r0..r1-1`` as rectangles of whole rows (a
        query against all those references) of about ``chunk_cells`` cells each (at least a row)."""
        width = int(self._reference_cumsum[r1] - self._reference_cumsum[r0])
        for a, b in even_row_runs(self.query_lengths()[q0:q1], width, chunk_cells):
            yield PairRun.of_rect(q0 + a, q0 + b, r0, r1)

    def chunk_cells(self, chunk: np.ndarray) -> int:
        """Cells of a chunk of pairs: O(queries) for a :class:`PairRun` of this scan (a run or a
        rectangle), else a sum over its pairs."""
        rect = rect_of(chunk)
        if rect is not None:
            q0, q1, r0, r1 = rect
            rcum = self._reference_cumsum
            return int(self.query_lengths()[q0:q1].sum()) * int(rcum[r1] - rcum[r0])
        first = run_of(chunk, len(self.references))
        if first is not None and self.restricted_pairs is None:
            return self.span_cells(first, first + int(chunk.shape[0]))
        return int(self.pair_cells(np.asarray(chunk, np.int64).reshape(-1, 2)).sum())

    def pair_cells(self, pairs: np.ndarray) -> np.ndarray:
        """Cells (query x reference letters) of each pair of ``pairs``."""
        return self.query_lengths()[pairs[:, 0]] * self.reference_lengths()[pairs[:, 1]]

    def chunks(self, chunk_cells: int, chunk_pairs: int, start: int = 0,
               stop: int | None = None) -> Iterator[np.ndarray]:
        """Consecutive runs of pairs (int64 arrays (n, 2)) of about ``chunk_cells`` cells and at
        most ``chunk_pairs`` pairs, in output order (pairs ``start..stop-1`` only, if given)."""
        for a, b in self.spans(chunk_cells, chunk_pairs, start, stop):
            yield self.pair_range(a, b)

    def spans(self, chunk_cells: int, chunk_pairs: int, start: int = 0,
              stop: int | None = None) -> Iterator[tuple[int, int]]:
        """The runs of :meth:`chunks` as ``(first, last + 1)`` numbers of the output order, without
        listing their pairs (O(queries) per run of an unrestricted scan)."""
        stop = self.n_pairs if stop is None else int(stop)
        ql, rl = self.query_lengths(), self.reference_lengths()
        restricted = self.restricted_pairs
        if restricted is not None:
            listed = restricted[start:stop]
            for a, b in _cut_spans(ql[listed[:, 0]] * rl[listed[:, 1]], chunk_cells, chunk_pairs):
                yield start + a, start + b
            return
        n_ref = rl.shape[0]
        rcum = self._reference_cumsum
        k = int(start)
        while k < stop:
            first, budget = k, chunk_cells
            while k < stop and budget > 0 and k - first < chunk_pairs:
                q, r = divmod(k, n_ref)
                r_end = min(n_ref, stop - q * n_ref)  # the row's end within the range
                room = chunk_pairs - (k - first)
                if ql[q] == 0:  # an empty query: its pairs cost no cells
                    k += min(r_end - r, room)
                    continue
                rest = int(ql[q]) * int(rcum[r_end] - rcum[r])
                if rest <= budget and r_end - r <= room:  # the rest of this query's row
                    k += r_end - r
                    budget -= rest
                    continue
                # Part of the row: references r..e-1 hold at least the remaining budget.
                need = -(-budget // int(ql[q]))
                e = int(np.searchsorted(rcum, rcum[r] + need, side="left"))
                k = q * n_ref + min(max(e, r + 1), r_end, r + room)
                break
            yield first, k

    def span_cells(self, start: int, stop: int) -> int:
        """Cells of pairs ``start..stop-1`` of the output order (O(queries) when unrestricted)."""
        if stop <= start:
            return 0
        restricted = self.restricted_pairs
        if restricted is not None:
            return int(self.pair_cells(restricted[start:stop]).sum())
        ql = self.query_lengths()
        rcum = self._reference_cumsum
        n_ref = rcum.shape[0] - 1
        q0, r0 = divmod(int(start), n_ref)
        q1, r1 = divmod(int(stop) - 1, n_ref)
        if q0 == q1:
            return int(ql[q0]) * int(rcum[r1 + 1] - rcum[r0])
        middle = int(ql[q0 + 1:q1].sum()) * int(rcum[n_ref])
        return int(ql[q0]) * int(rcum[n_ref] - rcum[r0]) + middle + int(ql[q1]) * int(rcum[r1 + 1])

    def query_of(self, k: int) -> int:
        """The query of pair ``k`` of the output order."""
        restricted = self.restricted_pairs
        if restricted is not None:
            return int(restricted[k, 0])
        return int(k) // max(len(self.references), 1)

    @cached_property
    def _reference_cumsum(self) -> np.ndarray:
        rl = self.reference_lengths()
        rcum = np.zeros(rl.shape[0] + 1, np.int64)
        np.cumsum(rl, out=rcum[1:])
        return rcum


@dataclass(frozen=True)
class Partition:
    """Pairs ``start..stop-1`` of the output order; ``prev_query`` is the query of pair ``start-1``."""

    index: int
    start: int
    stop: int
    cells: int
    prev_query: int


def row_runs(query_lengths: np.ndarray, letters: int, cells: int) -> list[tuple[int, int]]:
    """Consecutive query ranges ``(a, b)`` whose rows against ``letters`` reference letters hold at
    most ``cells`` cells (a range of one query when its row alone holds more)."""
    cum = np.cumsum(np.asarray(query_lengths, np.int64)) * max(int(letters), 1)
    runs, start = [], 0
    while start < cum.shape[0]:
        base = int(cum[start - 1]) if start else 0
        stop = max(int(np.searchsorted(cum, base + cells, side="right")), start + 1)
        runs.append((start, stop))
        start = stop
    return runs


def even_row_runs(query_lengths: np.ndarray, letters: int, cells: int) -> list[tuple[int, int]]:
    """Consecutive query ranges ``(a, b)`` covering every query, as few as hold about ``cells`` cells
    each (up to an eighth more) against ``letters`` reference letters, of about equal cells: a tile's
    rectangles. Greedy ranges of at most ``cells`` (:func:`row_runs`) end a tile with a small
    remainder, and a GPU chunk's cost is nearly fixed up to its preferred size (a stripe worker ran
    205 rectangles where one GPU ran 161 chunks for the same cells, 2x H200)."""
    lengths = np.asarray(query_lengths, np.int64)
    if lengths.shape[0] == 0:
        return []
    total = int(lengths.sum()) * max(int(letters), 1)
    parts = min(len(row_runs(lengths, letters, cells)), max(1, -(-total // max(int(cells) + int(cells) // 8, 1))))
    return even_parts(lengths, parts)


def even_parts(weights: np.ndarray, parts: int) -> list[tuple[int, int]]:
    """At most ``parts`` consecutive ranges ``(a, b)`` of the items of ``weights``, none empty, each
    of about an equal share of the total weight (fewer ranges when there are fewer items)."""
    weights = np.asarray(weights, np.int64)
    n = int(weights.shape[0])
    parts = max(1, min(int(parts), n))
    cum = np.cumsum(weights)
    total = int(cum[-1]) if n else 0
    bounds = [0]
    for k in range(1, parts):
        cut = int(np.searchsorted(cum, total * k / parts, side="left")) + 1
        bounds.append(min(max(cut, bounds[-1] + 1), n - (parts - k)))
    bounds.append(n)
    return list(zip(bounds[:-1], bounds[1:]))


def _cut_spans(cells: np.ndarray, chunk_cells: int, chunk_pairs: int) -> Iterator[tuple[int, int]]:
    """Runs of listed pairs (``cells`` each) of about ``chunk_cells`` cells and at most
    ``chunk_pairs`` pairs, as (first, last + 1) indices."""
    cum = np.cumsum(cells)
    start = 0
    while start < cells.shape[0]:
        base = cum[start - 1] if start else 0
        stop = int(np.searchsorted(cum, base + chunk_cells, side="left")) + 1
        stop = min(max(stop, start + 1), start + chunk_pairs, cells.shape[0])
        yield start, stop
        start = stop
