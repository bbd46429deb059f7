"""What every sink formats from: a chunk's reported hits as columns, and the run's id columns.

:data:`HIT_COLUMNS` are the fields of a hit table (API, TSV, JSONL, Parquet), in miRanda's order;
:data:`CONTEXT_COLUMNS` follow them (site type and context, :mod:`gamut.scanning.sites`), then,
with an annotation, :data:`GENOME_COLUMNS` (:mod:`gamut.scanning.genome`): see
:func:`table_columns`.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from gamut.io.textcols import StringColumn, TextBuilder
from gamut.scanning.fasta import SeqRecord

if TYPE_CHECKING:
    from gamut.scanning.genome import GenomeHits, GenomeMap
    from gamut.scanning.pipeline.pairs import ScanInput
    from gamut.scanning.results import ChunkResult, SiteColumns
    from gamut.scanning.sinks.spec import OutputSpec

#: Columns of a hit table (API, TSV, JSONL, Parquet), in miRanda's order.
HIT_COLUMNS = (
    "query_id", "reference_id", "score", "energy", "query_start", "query_end", "ref_start",
    "ref_end", "aln_length", "identity", "similarity", "aln_mirna", "aln_map", "aln_utr",
)
#: Site type and context columns, after :data:`HIT_COLUMNS` (docs/scan.md gives their definitions).
CONTEXT_COLUMNS = ("site_type", "dist_to_end", "supp_pairs", "local_au")
#: With ``--accessibility`` (:mod:`gamut.scanning.site_access`), after the context columns: the
#: site's opening energy ``-RT ln P(unpaired)`` and ``ddG = energy + dG_open`` (kcal/mol, 2 decimals;
#: empty/null where undefined: a stretch longer than the window, or ddG with -noenergy).
ACCESS_COLUMNS = ("dG_open", "ddG")
#: Genome coordinates, last, with an annotation only: 0-based half-open ``genome_start``/``genome_end``,
#: ``blocks`` as ``start-end,start-end`` (ascending, 0-based half-open); empty/null for references
#: the annotation lacks.
GENOME_COLUMNS = ("chrom", "genome_start", "genome_end", "strand", "blocks")
#: The alignment strings (letters, '|', ':', ' ' and '-' only: quoted without escaping in JSON lines).
ALIGNMENT_COLUMNS = ("aln_mirna", "aln_map", "aln_utr")


def read_line(record: SeqRecord) -> str:
    """miRanda's 'Read Sequence' line of a record."""
    return f"Read Sequence:{record.id} {record.description}({len(record)} nt)\n"


class ReportedHits:
    """The reported hits of a chunk, in output order: their rows in the chunk's hit table, pair,
    query and reference indices, and any field of :class:`~gamut.scanning.hits.HitTable`. Where
    every hit is reported (default mode, most often), a field is the hit table's own array, not a
    copy (treat them as read-only)."""

    def __init__(self, result: ChunkResult, scan_input: ScanInput) -> None:
        hits = result.hits
        self.result = result
        self.rows = np.flatnonzero(hits.reported)
        self.every = self.rows.size == len(hits)
        self.pair = self.of(hits.pair)
        self.q = result.pairs[self.pair, 0]
        self.r = result.pairs[self.pair, 1]
        self.hits = hits
        self.noenergy = scan_input.params.noenergy
        self.input = scan_input
        self.spare = False

    def __len__(self) -> int:
        return int(self.rows.size)

    def of(self, column: np.ndarray) -> np.ndarray:
        """The reported rows of a column of the chunk's hits (the column itself if every hit is)."""
        return column if self.every else column[self.rows]

    def field(self, name: str) -> np.ndarray:
        return self.of(getattr(self.hits, name))

    def energy(self) -> np.ndarray:
        """Energies as reported (0 with -noenergy), float32."""
        return np.zeros(self.rows.size, np.float32) if self.noenergy else self.field("energy")

    def energy_rounded(self) -> np.ndarray:
        """Energies as the tables hold them: float64 rounded to 2 decimals (0 with -noenergy)."""
        return np.zeros(self.rows.size) if self.noenergy else np.round(self.field("energy").astype(np.float64), 2)

    def access(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``dG_open`` and ``ddG`` of each reported hit, float64 rounded to 2 decimals (NaN where
        undefined), or None without ``--accessibility``."""
        if self.result.dg_open is None:
            return None
        dg_open = self.of(self.result.dg_open)
        ddg = np.full(self.rows.size, np.nan) if self.noenergy else self.field("energy").astype(np.float64) + dg_open
        return np.round(dg_open, 2), np.round(ddg, 2)

    def sites(self) -> SiteColumns:
        """Site type and context of each reported hit."""
        from gamut.scanning.sites import chunk_sites

        sites = chunk_sites(self.result, self.input, self.spare)
        return sites if self.every else sites.take(self.rows)

    def lines(self, builder: TextBuilder, which: int) -> tuple[np.ndarray, np.ndarray]:
        """Alignment line ``which`` (0 query, 1 map, 2 reference) of each reported hit."""
        return builder.buffer(self.hits.text, self.line_starts(which), self.field("width"))

    def line_starts(self, which: int) -> np.ndarray:
        h = self.hits
        return self.of(h.text_off[:len(h)]) + which * self.field("width")


class IdColumns:
    """Run-wide string columns (ids, 'Read Sequence' lines), built once per sequence on first use."""

    def __init__(self, scan_input: ScanInput) -> None:
        self.input = scan_input
        self._cache: dict[str, StringColumn] = {}

    def get(self, name: str) -> StringColumn:
        col = self._cache.get(name)
        if col is None:
            q, r = self.input.queries, self.input.references
            texts = {
                "qid": lambda: [x.id for x in q],
                "rid": lambda: [x.id for x in r],
                "qread": lambda: [read_line(x) for x in q],
                "rread": lambda: [read_line(x) for x in r],
                "qjson": lambda: [json.dumps(x.id) for x in q],
                "rjson": lambda: [json.dumps(x.id) for x in r],
            }[name]()
            col = self._cache[name] = StringColumn(texts)
        return col


def table_columns(spec: OutputSpec) -> tuple[str, ...]:
    """The columns of a hit table for this output: hit, context, (with ``--accessibility``) access
    and (with an annotation) genome columns."""
    access = ACCESS_COLUMNS if spec.params.site_access is not None else ()
    return HIT_COLUMNS + CONTEXT_COLUMNS + access + (GENOME_COLUMNS if spec.annotation else ())


def output_genome_map(spec: OutputSpec) -> GenomeMap | None:
    """The output's annotation matched to the scan's references (None without one), built once per
    scan input."""
    path = spec.annotation
    if not path:
        return None
    scan_input = spec.scan_input
    cache = scan_input.__dict__.setdefault("_gamut_genome_maps", {})
    found = cache.get(path)
    if found is None:
        from gamut.scanning.genome import genome_map

        found = cache[path] = genome_map(path, scan_input)
    return found


def hit_genome(genome: GenomeMap, c: ReportedHits, sites: SiteColumns) -> GenomeHits:
    """Genome coordinates of a chunk's reported hits, computed once per chunk and kept on the
    result (every output of the chunk reports the same hits)."""
    cached = c.result.genome
    if cached is None or cached[0] is not genome:
        cached = c.result.genome = (genome, genome.map(c.r, c.field("ref_start"), c.field("ref_end"),
                                                       sites.seed_start, sites.seed_end))
    return cached[1]
