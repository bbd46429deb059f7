"""miRanda 3.3a's text output (miranda-model §10) in its three modes: verbose, quiet and keyval.

Text is assembled by :class:`~gamut.io.textcols.TextBuilder` (records of pieces, one compiled
copy per chunk); numbers are formatted in compiled code with exact decimal rounding
(:meth:`TextBuilder.fixed`), so the bytes are exactly those of miRanda's printf formats
(``%f``, ``%2.2f``, ``%3.2f``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from gamut.io.textcols import TextBuilder, pick
from gamut.io.threads import Parallel
from gamut.scanning.params import ScanParams
from gamut.scanning.sinks.base import Chunks, TextSink
from gamut.scanning.sinks.columns import IdColumns, ReportedHits

if TYPE_CHECKING:
    from gamut.scanning.results import ChunkResult
    from gamut.scanning.sinks.spec import OutputSpec

RULE = "=-" * 31 + "=\n"

SUMMARY_HEADER = "Seq1,Seq2,Tot Score,Tot Energy,Max Score,Max Energy,Strand,Len1,Len2,Positions\n"


def settings_block(query_path: str, reference_path: str, params: ScanParams) -> str:
    """miRanda's 'Current Settings' block (pipelines find the start of the results by it)."""
    return (
        "Current Settings:\n" + RULE
        + f"Query Filename: \t{query_path}\n"
        + f"Reference Filename:\t{reference_path}\n"
        + f"Gap Open Penalty:\t{float(params.gap_open):f}\n"
        + f"Gap Extend Penalty:\t{float(params.gap_extend):f}\n"
        + f"Score Threshold:\t{float(params.score_threshold):f}\n"
        + f"Energy Threshold:\t{float(params.energy_threshold):f} kcal/mol\n"
        + f"Scaling Parameter:\t{float(params.scale):f}\n"
        + RULE
    )


@njit(cache=True, nogil=True)
def _pair_sums(energy, starts, stops):
    """Per pair: the sum of ``-energy`` (float64, in order, as Python's ``sum``) over its rows."""
    out = np.zeros(starts.shape[0], np.float64)
    for p in range(starts.shape[0]):
        s = 0.0
        for k in range(starts[p], stops[p]):
            s += -np.float64(energy[k])
        out[p] = s
    return out


class MirandaSink(TextSink):
    """miRanda 3.3a's text layout, a chunk at a time: verbose by default, or as the output's ``quiet``
    (no lines for pairs without hits) or ``keyval`` (one key=value line per hit) asks."""

    def __init__(self, spec: OutputSpec) -> None:
        super().__init__(spec)
        self.params = spec.params
        self.quiet = spec.quiet
        self.keyval = spec.keyval
        self.columns = IdColumns(self.input)
        self.last_query = -1

    def header(self) -> str:
        text = self.spec.banner + settings_block(self.spec.query_name, self.spec.reference_name, self.params)
        if self.params.restrict is not None and not self.quiet:
            text += f"Performing Restricted Scan on:{len(self.params.restrict)} pairs\n"
        return text

    def footer(self) -> str:
        return "Scan Complete\n\n"

    def render(self, chunks: Chunks, prev_query: int) -> bytes:
        self.last_query = prev_query
        return super().render(chunks, prev_query)

    def build(self, result: ChunkResult, spare_cores: Parallel) -> TextBuilder:
        """The chunk's records (advances the sink's last query)."""
        b = TextBuilder(spare_cores)
        c = ReportedHits(result, self.input)
        cols = self.columns
        pairs = result.pairs
        n = pairs.shape[0]
        q, r = pairs[:, 0], pairs[:, 1]
        if not self.quiet and n:
            if result.layout is not None:
                new = result.layout.query_starts()
            else:
                new = np.flatnonzero(q != np.r_[self.last_query, q[:-1]])
            b.records(new, 0, 0, [pick(b, cols.get("qread"), q[new])])
            every = np.arange(n)
            b.records(every, 1, 0, [pick(b, cols.get("rread"), r), RULE + "Performing Scan: ",
                                    pick(b, cols.get("qid"), q), " vs ", pick(b, cols.get("rid"), r), "\n" + RULE])
        if n:
            self.last_query = int(q[-1])
        self._hits(b, c)
        self._footers(b, c, result)
        return b

    def _hits(self, b: TextBuilder, c: ReportedHits) -> None:
        if c.rows.size == 0:
            return
        cols = self.columns
        score, energy = c.field("score"), c.field("energy")
        qid, rid = pick(b, cols.get("qid"), c.q), pick(b, cols.get("rid"), c.r)
        qs, qe = b.integers(c.field("query_start")), b.integers(c.field("query_end"))
        rs, re = b.integers(c.field("ref_start")), b.integers(c.field("ref_end"))
        length = b.integers(c.field("aln_length"))
        mirna, amap, utr = c.lines(b, 0), c.lines(b, 1), c.lines(b, 2)
        noenergy = c.noenergy
        if self.keyval:
            e = "0.000000" if noenergy else b.fixed(energy, 6)
            pieces = ["//hit_info\tquery_id=", qid, "\treference_id=", rid, "\tscore=", b.fixed(score, 6),
                      "\tenergy=", e, "\tquery_start=", qs, "\tquery_end=", qe, "\tref_start=", rs, "\tref_end=", re,
                      "\taln_length=", length, "\tidentity=", b.fixed(c.field("identity"), 6),
                      "\tsimilarity=", b.fixed(c.field("similarity"), 6), "\taln_mirna=", mirna,
                      "\taln_map=", amap, "\taln_utr=", utr, "\n"]
        else:
            ident, sim = b.fixed(c.field("identity"), 2), b.fixed(c.field("similarity"), 2)
            energy_line = [] if noenergy else ["   Energy:  ", b.fixed(energy, 6), " kCal/Mol\n"]
            e22 = "0.00" if noenergy else b.fixed(energy, 2)
            pieces = ["\n   Forward:\tScore: ", b.fixed(score, 6), "  Q:", qs, " to ", qe, "  R:", rs, " to ", re,
                      " Align Len (", length, ") (", ident, "%) (", sim, "%)\n\n   Query:    3' ", mirna,
                      " 5'\n                ", amap, "\n   Ref:      5' ", utr, " 3'\n\n", *energy_line,
                      "\nScores for this hit:\n>", qid, "\t", rid, "\t", b.fixed(score, 2), "\t", e22, "\t",
                      qs, " ", qe, "\t", rs, " ", re, "\t", length, "\t", ident, "%\t", sim, "%\n\n"]
        b.records(c.pair, 2, c.rows, pieces)

    def _footers(self, b: TextBuilder, c: ReportedHits, result: ChunkResult) -> None:
        """'Score for this Scan', the '>>' summaries with their positions, 'Complete' (miranda-model §10.5)."""
        # Reported hits come in pair order: runs of one pair (work in hits, not pairs, but for the
        # verbose mode's line per pair without hits).
        pair = c.pair
        first = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]]) if pair.size else np.zeros(0, np.int64)
        stops = np.append(first[1:], pair.size)
        energy = c.field("energy")
        neg = _pair_sums(energy, first, stops)
        ok = neg > 0
        summary = pair[first[ok]]
        lead = "" if self.quiet else "Score for this Scan:\n"
        if not self.quiet:
            has = np.zeros(len(result), bool)
            has[summary] = True
            b.records(np.flatnonzero(~has), 3, 0, [lead + "No Hits Found above Threshold\nComplete\n\n"])
        if summary.size == 0:
            return
        cols = self.columns
        score = c.field("score")
        at = np.flatnonzero(ok)
        tot_score = np.add.reduceat(score, first)[at]
        max_score = np.maximum.reduceat(score, first)[at]
        if c.noenergy:
            tot_e: object = "0.0"
            max_e: object = "0.0"
        else:
            min_e = np.minimum.reduceat(energy.astype(np.float64), first)[at]
            tot_e = b.fixed(-neg[ok], 2)  # miRanda prints '-' and the sum of -energy
            max_e = b.fixed(np.minimum(min_e, 0.0), 2)
        pq, pr = result.pairs[summary, 0], result.pairs[summary, 1]
        q_off, r_off = self.input.query_set.offsets, self.input.reference_set.offsets
        b.records(summary, 3, 0, [
            lead + SUMMARY_HEADER + ">>", pick(b, cols.get("qid"), pq), "\t", pick(b, cols.get("rid"), pr), "\t",
            b.fixed(tot_score, 2), "\t", tot_e, "\t", b.fixed(max_score, 2), "\t", max_e, "\t",
            b.integers(result.ordinal(summary) + 1), "\t",
            b.integers(q_off[pq + 1] - q_off[pq]), "\t",
            b.integers(r_off[pr + 1] - r_off[pr]), "\t",
        ])
        # Positions: the reported hits of the summarised pairs, then the closing lines.
        mine = np.flatnonzero(np.repeat(ok, stops - first))
        b.records(c.pair[mine], 4, c.rows[mine], [" ", b.integers(c.field("ref_start")[mine])])
        b.records(summary, 5, 0, ["\nComplete\n\n"])
