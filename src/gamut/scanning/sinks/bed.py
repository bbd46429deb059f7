"""Hits as BED6 (``--format bed6``, or an output named ``*.bed6``; ``bed`` is BED12:
:mod:`gamut.scanning.sinks.bed12`), in reference coordinates: one line per reported hit, in the scan's output order
(every reference for the first query, then the second, ...; not sorted by position).

Columns: ``chrom`` the reference id, ``chromStart`` ``ref_start - 1`` and ``chromEnd``
``ref_end`` (BED's 0-based, half-open interval of miRanda's 1-based, inclusive ``R:`` range),
``name`` the query (miRNA) id, ``score`` the alignment score as miRanda computes it, an integer
written as is (BED nominally limits ``score`` to 0-1000; scan scores are usually 140-200 but
are not rescaled), and ``strand`` ``+`` (miRanda scans the reference as given).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from gamut.io.textcols import TextBuilder, pick
from gamut.io.threads import Parallel
from gamut.scanning.sinks.base import TextSink
from gamut.scanning.sinks.columns import IdColumns, ReportedHits

if TYPE_CHECKING:
    from gamut.scanning.results import ChunkResult
    from gamut.scanning.sinks.spec import OutputSpec


class BedSink(TextSink):
    """BED6 lines (no header)."""

    def __init__(self, spec: OutputSpec) -> None:
        super().__init__(spec)
        self.columns = IdColumns(self.input)

    def build(self, result: ChunkResult, spare_cores: Parallel) -> TextBuilder:
        b = TextBuilder(spare_cores)
        c = ReportedHits(result, self.input)
        if len(c):
            b.records(c.pair, 0, c.rows, [
                pick(b, self.columns.get("rid"), c.r), "\t", b.integers(c.field("ref_start") - 1), "\t",
                b.integers(c.field("ref_end")), "\t", pick(b, self.columns.get("qid"), c.q), "\t",
                b.integers(c.field("score")), "\t+\n"])
        return b
