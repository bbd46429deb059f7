"""Reported hits as a table (:func:`~gamut.scanning.sinks.columns.table_columns`: the hit, context
and, with an annotation, genome columns): TSV (with a header line) and JSON lines, one row per
hit, a chunk at a time."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from gamut.io.textcols import StringColumn, TextBuilder, pick
from gamut.io.threads import Parallel
from gamut.scanning.params import SITE_TYPES
from gamut.scanning.sinks.base import TextSink
from gamut.scanning.sinks.columns import (
    ALIGNMENT_COLUMNS,
    IdColumns,
    ReportedHits,
    hit_genome,
    output_genome_map,
    table_columns,
)

if TYPE_CHECKING:
    from gamut.scanning.results import ChunkResult
    from gamut.scanning.sinks.spec import OutputSpec

#: The integer columns, formatted alike in both layouts.
INTEGER_COLUMNS = ("score", "query_start", "query_end", "ref_start", "ref_end", "aln_length")


class _TableSink(TextSink):
    """The columns both layouts share; subclasses lay out a row."""

    #: The id columns (:class:`IdColumns` names) of the query and reference ids.
    ids = ("qid", "rid")

    #: JSON lines: strings quoted and missing values ``null``; TSV: as is and empty.
    as_json = False

    def __init__(self, spec: OutputSpec) -> None:
        super().__init__(spec)
        self.columns = IdColumns(self.input)
        self.names = table_columns(spec)
        self.genome = output_genome_map(spec)
        text = (lambda v: json.dumps(v)) if self.as_json else (lambda v: v)
        null = "null" if self.as_json else ""
        self.site_names = StringColumn([text(name) for name in SITE_TYPES])
        if self.genome is not None:
            self.chroms = StringColumn([text(name) for name in self.genome.chroms] + [null])
            self.strands = StringColumn([text("-"), null, text("+")])
        self.null = null

    def build(self, result: ChunkResult, spare_cores: Parallel) -> TextBuilder:
        b = TextBuilder(spare_cores)
        c = ReportedHits(result, self.input)
        c.spare = spare_cores
        if len(c):
            qid = pick(b, self.columns.get(self.ids[0]), c.q)
            rid = pick(b, self.columns.get(self.ids[1]), c.r)
            ints = {name: b.integers(c.field(name)) for name in INTEGER_COLUMNS}
            values = self.row(b, c, qid, rid, ints, [c.lines(b, w) for w in range(3)]) + self.extra(b, c)
            b.records(c.pair, 0, c.rows, self.layout(values))
        return b

    def extra(self, b: TextBuilder, c: ReportedHits) -> list:
        """The context columns and, with an annotation, the genome columns."""
        from gamut.scanning.genome import block_text

        sites = c.sites()
        au = self.decimals(b, sites.local_au)
        values = [pick(b, self.site_names, sites.site), b.integers(sites.dist_to_end),
                  b.integers(sites.supp_pairs), au]
        access = c.access()
        if access is not None:
            values += [self.decimals(b, column) for column in access]
        if self.genome is not None:
            g = hit_genome(self.genome, c, sites)
            null_pos, null_len = b.const(self.null)

            def absent(column):
                starts, lengths = column
                starts, lengths = starts.copy(), lengths.copy()
                starts[~g.mapped], lengths[~g.mapped] = null_pos, null_len
                return starts, lengths

            buf, starts, lengths = block_text(g.block_off, g.block_start, g.block_end, mid="-", quote=self.as_json)
            values += [pick(b, self.chroms, np.where(g.mapped, g.chrom, len(self.genome.chroms))),
                       absent(b.integer_column(g.start)), absent(b.integer_column(g.end)),
                       pick(b, self.strands, g.strand.astype(np.int64) + 1), absent(b.buffer(buf, starts, lengths))]
        return values

    def decimals(self, b: TextBuilder, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Numbers with 2 decimals (JSON: the number rounded to 2 decimals), empty/null where NaN."""
        return b.decimals(values, 2, self.null, json_number=self.as_json)

    def layout(self, values: list) -> list:
        raise NotImplementedError

    def row(self, b: TextBuilder, c: ReportedHits, qid, rid, ints: dict, lines: list) -> list:
        raise NotImplementedError


class TsvSink(_TableSink):
    """Tab-separated values with a header line; numbers as miRanda prints them (``%.2f``)."""

    def header(self) -> str:
        return "\t".join(self.names) + "\n"

    def row(self, b: TextBuilder, c: ReportedHits, qid, rid, ints: dict, lines: list) -> list:
        # '%.2f' of round(x, 2) has the digits of '%.2f' of x (both round the exact value).
        return [qid, rid, ints["score"], b.fixed(c.energy(), 2), ints["query_start"], ints["query_end"],
                ints["ref_start"], ints["ref_end"], ints["aln_length"], b.fixed(c.field("identity"), 2),
                b.fixed(c.field("similarity"), 2), *lines]

    def layout(self, values: list) -> list:
        pieces: list = []
        for k, value in enumerate(values):
            pieces += ([] if k == 0 else ["\t"]) + [value]
        pieces.append("\n")
        return pieces


class JsonlSink(_TableSink):
    """One JSON object per hit and line, with the TSV's values (numbers bare, strings quoted)."""

    ids = ("qjson", "rjson")
    as_json = True

    def row(self, b: TextBuilder, c: ReportedHits, qid, rid, ints: dict, lines: list) -> list:
        # JSON numbers with the TSV's values: round(x, 2) is the number '%.2f' of x prints.
        two = lambda v: json.dumps(round(float(v), 2))
        return [qid, rid, ints["score"], b.formatted(c.energy(), two), ints["query_start"], ints["query_end"],
                ints["ref_start"], ints["ref_end"], ints["aln_length"], b.formatted(c.field("identity"), two),
                b.formatted(c.field("similarity"), two), *lines]

    def layout(self, values: list) -> list:
        pieces: list = []
        for k, (name, value) in enumerate(zip(self.names, values)):
            quoted = name in ALIGNMENT_COLUMNS  # ids come JSON-encoded; numbers are bare
            pieces += [("{" if k == 0 else ", ") + json.dumps(name) + ": " + ('"' if quoted else ""), value]
            if quoted:
                pieces.append('"')
        pieces.append("}\n")
        return pieces
