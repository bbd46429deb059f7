"""Hits as BED12 (``--format bed``), one line per reported hit in the scan's output order (not
sorted by position), no header.

With ``--annotation`` the coordinates are the genome's (:mod:`gamut.scanning.genome`): ``chrom``
the transcript's chromosome, ``strand`` its strand, the hit's span cut at exon junctions into
blocks; hits on references the annotation lacks are left out (the run's warning counts those
references). Without one, the reference coordinates: ``chrom`` the reference id, ``strand``
``+``, one block.

Columns: ``chrom``, ``chromStart``/``chromEnd`` (0-based half-open span of the hit), ``name`` the
query (miRNA) id, ``score`` the alignment score as is (not rescaled to 0-1000), ``strand``,
``thickStart``/``thickEnd`` the seed (the reference letters facing miRNA positions 2-8, clipped to
the hit; ``thickStart == thickEnd == chromStart`` when none are left), ``itemRgb`` ``0``,
``blockCount``, ``blockSizes`` and ``blockStarts`` (relative to ``chromStart``), each list ending
in a comma as UCSC writes them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gamut.io.textcols import StringColumn, TextBuilder, pick
from gamut.io.threads import Parallel
from gamut.scanning.genome import GenomeHits, block_text
from gamut.scanning.sinks.base import TextSink
from gamut.scanning.sinks.columns import (
    IdColumns,
    ReportedHits,
    hit_genome,
    output_genome_map,
)

if TYPE_CHECKING:
    from gamut.scanning.results import ChunkResult
    from gamut.scanning.sinks.spec import OutputSpec


def reference_blocks(c: ReportedHits, seed_start: np.ndarray, seed_end: np.ndarray) -> GenomeHits:
    """Hits in reference coordinates, as one-block :class:`GenomeHits` (chrom: the reference index)."""
    n = len(c)
    start = c.field("ref_start") - 1
    end = c.field("ref_end").astype(np.int64)
    has_seed = seed_end >= seed_start
    return GenomeHits(np.ones(n, bool), c.r, np.ones(n, np.int8), start, end,
                      np.where(has_seed, seed_start - 1, start), np.where(has_seed, seed_end, start),
                      np.arange(n + 1, dtype=np.int64), start, end)


class Bed12Sink(TextSink):
    """BED12 lines (no header)."""

    def __init__(self, spec: OutputSpec) -> None:
        super().__init__(spec)
        self.columns = IdColumns(self.input)
        self.genome = output_genome_map(spec)
        self.strands = StringColumn(["-", ".", "+"])
        self.chroms = self.columns.get("rid") if self.genome is None else StringColumn(self.genome.chroms)

    def build(self, result: ChunkResult, spare_cores: Parallel) -> TextBuilder:
        b = TextBuilder(spare_cores)
        c = ReportedHits(result, self.input)
        c.spare = spare_cores
        if not len(c):
            return b
        sites = c.sites()
        if self.genome is None:
            g = reference_blocks(c, sites.seed_start, sites.seed_end)
        else:
            g = hit_genome(self.genome, c, sites)
        keep = np.flatnonzero(g.mapped)
        if keep.size == 0:
            return b
        counts = g.block_counts()
        rel = g.block_start - np.repeat(g.start, counts)
        sizes = block_text(g.block_off, g.block_end - g.block_start, trailing=True)
        starts = block_text(g.block_off, rel, trailing=True)
        columns = [
            pick(b, self.chroms, g.chrom), b.integers(g.start), b.integers(g.end),
            pick(b, self.columns.get("qid"), c.q), b.integers(c.field("score")),
            pick(b, self.strands, g.strand.astype(np.int64) + 1), b.integers(g.thick_start),
            b.integers(g.thick_end), b.integers(counts), b.buffer(*sizes), b.buffer(*starts),
        ]
        columns = [b.take(column, keep) for column in columns]
        pieces: list = []
        for k, column in enumerate(columns):
            pieces += [column, "\t" if k < len(columns) - 1 else "\n"]
            if k == 7:
                pieces[-1] = "\t0\t"  # itemRgb
        b.records(c.pair[keep], 0, c.rows[keep], pieces)
        return b
