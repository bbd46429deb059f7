"""Output writers (miranda-model §10): miRanda 3.3a's text (verbose, quiet, keyval), TSV, JSON lines,
Parquet and the API's table, each formatting a whole chunk from columns.

Every writer takes :class:`~gamut.scanning.pipeline.runner.ChunkResult`\\ s in order. Text is assembled by
:class:`~gamut.io.textcols.TextBuilder` (records of pieces, one compiled copy per chunk); numbers
are formatted in compiled code with exact decimal rounding (:meth:`TextBuilder.fixed`), so the
bytes are exactly those of miRanda's printf formats (``%f``, ``%2.2f``, ``%3.2f``).
"""
from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING, Sequence

import numpy as np
from numba import njit

from gamut.io.textcols import StringColumn, TextBuilder, gather, pick
from gamut.io.textout import write_bytes
from gamut.scanning.fasta import SeqRecord
from gamut.scanning.params import ScanParams

if TYPE_CHECKING:
    from gamut.scanning.pipeline.runner import ChunkResult, ScanInput

RULE = "=-" * 31 + "=\n"

#: Columns of a hit table (API, TSV, JSONL, Parquet), in miRanda's order.
HIT_COLUMNS = (
    "query_id", "reference_id", "score", "energy", "query_start", "query_end", "ref_start",
    "ref_end", "aln_length", "identity", "similarity", "aln_mirna", "aln_map", "aln_utr",
)
#: The alignment strings (letters, '|', ':', ' ' and '-' only: quoted without escaping in JSON lines).
ALIGNMENT_COLUMNS = ("aln_mirna", "aln_map", "aln_utr")
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


def read_line(record: SeqRecord) -> str:
    return f"Read Sequence:{record.id} {record.description}({len(record)} nt)\n"


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


class _Chunk:
    """The reported hits of a chunk and the columns every writer formats from them."""

    def __init__(self, result: "ChunkResult", scan_input: "ScanInput") -> None:
        hits = result.hits
        self.result = result
        self.rows = np.flatnonzero(hits.reported)  # reported hits, in output order
        self.pair = hits.pair[self.rows]
        self.q = result.pairs[self.pair, 0]
        self.r = result.pairs[self.pair, 1]
        self.hits = hits
        self.noenergy = scan_input.params.noenergy

    def field(self, name: str) -> np.ndarray:
        return getattr(self.hits, name)[self.rows]

    def lines(self, builder: TextBuilder, which: int) -> tuple[np.ndarray, np.ndarray]:
        """Alignment line ``which`` (0 query, 1 map, 2 reference) of each reported hit."""
        h = self.hits
        return builder.buffer(h.text, self.line_starts(which), h.width[self.rows])

    def line_starts(self, which: int) -> np.ndarray:
        h = self.hits
        return h.text_off[self.rows] + which * h.width[self.rows]


class _Columns:
    """Run-wide string columns (ids, 'Read Sequence' lines), built once per sequence on first use."""

    def __init__(self, scan_input: "ScanInput") -> None:
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


class MirandaTextWriter:
    """miRanda 3.3a's text layout (verbose by default; quiet; keyval), a chunk at a time."""

    def __init__(self, out: IO[str], scan_input: "ScanInput", *, quiet: bool = False, keyval: bool = False):
        self.out = out
        self.input = scan_input
        self.params = scan_input.params
        self.quiet = quiet
        self.keyval = keyval
        self.columns = _Columns(scan_input)
        self.last_query = -1

    def start(self, banner: str, query_path: str, reference_path: str) -> None:
        self.out.write(banner + settings_block(query_path, reference_path, self.params))
        if self.params.restrict is not None and not self.quiet:
            self.out.write(f"Performing Restricted Scan on:{len(self.params.restrict)} pairs\n")

    def chunk(self, result: "ChunkResult") -> None:
        write_bytes(self.out, self.build(result).render_array())

    def render(self, result: "ChunkResult") -> bytes:
        """The chunk's text as bytes (latin-1)."""
        return self.build(result).render()

    def build(self, result: "ChunkResult") -> TextBuilder:
        """The chunk's records (advances the writer's last query)."""
        b = TextBuilder(result.parallel)
        c = _Chunk(result, self.input)
        cols = self.columns
        pairs = result.pairs
        n = pairs.shape[0]
        q, r = pairs[:, 0], pairs[:, 1]
        if not self.quiet and n:
            previous = np.r_[self.last_query, q[:-1]]
            new = np.flatnonzero(q != previous)
            b.records(new, 0, 0, [pick(b, cols.get("qread"), q[new])])
            every = np.arange(n)
            b.records(every, 1, 0, [pick(b, cols.get("rread"), r), RULE + "Performing Scan: ",
                                    pick(b, cols.get("qid"), q), " vs ", pick(b, cols.get("rid"), r), "\n" + RULE])
        if n:
            self.last_query = int(q[-1])
        self._hits(b, c)
        self._footers(b, c, result)
        return b

    def _hits(self, b: TextBuilder, c: _Chunk) -> None:
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

    def _footers(self, b: TextBuilder, c: _Chunk, result: "ChunkResult") -> None:
        """'Score for this Scan', the '>>' summaries with their positions, 'Complete' (miranda-model §10.5)."""
        n = len(result)
        counts = np.bincount(c.pair, minlength=n)
        stops = np.cumsum(counts)
        starts = stops - counts
        energy = c.field("energy")
        neg = _pair_sums(energy, starts, stops)
        summary = np.flatnonzero((counts > 0) & (neg > 0))
        has = np.zeros(n, bool)
        has[summary] = True
        lead = "" if self.quiet else "Score for this Scan:\n"
        if not self.quiet:
            b.records(np.flatnonzero(~has), 3, 0, [lead + "No Hits Found above Threshold\nComplete\n\n"])
        if summary.size == 0:
            return
        cols = self.columns
        score = c.field("score")
        with_hits = np.flatnonzero(counts > 0)
        first, at = starts[with_hits], np.searchsorted(with_hits, summary)
        tot_score = np.add.reduceat(score, first)[at]
        max_score = np.maximum.reduceat(score, first)[at]
        if c.noenergy:
            tot_e: object = "0.0"
            max_e: object = "0.0"
        else:
            min_e = np.minimum.reduceat(energy.astype(np.float64), first)[at]
            tot_e = b.fixed(-neg[summary], 2)  # miRanda prints '-' and the sum of -energy
            max_e = b.fixed(np.minimum(min_e, 0.0), 2)
        pq, pr = result.pairs[summary, 0], result.pairs[summary, 1]
        q_off, r_off = self.input.query_set.offsets, self.input.reference_set.offsets
        b.records(summary, 3, 0, [
            lead + SUMMARY_HEADER + ">>", pick(b, cols.get("qid"), pq), "\t", pick(b, cols.get("rid"), pr), "\t",
            b.fixed(tot_score, 2), "\t", tot_e, "\t", b.fixed(max_score, 2), "\t", max_e, "\t",
            b.integers(result.counter0 + summary + 1), "\t",
            b.integers(q_off[pq + 1] - q_off[pq]), "\t",
            b.integers(r_off[pr + 1] - r_off[pr]), "\t",
        ])
        # Positions: the reported hits of the summarised pairs, then the closing lines.
        mine = np.flatnonzero(has[c.pair])
        b.records(c.pair[mine], 4, c.rows[mine], [" ", b.integers(c.field("ref_start")[mine])])
        b.records(summary, 5, 0, ["\nComplete\n\n"])

    def finish(self) -> None:
        self.out.write("Scan Complete\n\n")


class TableWriter:
    """Reported hits as TSV (with a header) or JSON lines, a chunk at a time."""

    def __init__(self, out: IO[str], scan_input: "ScanInput", fmt: str):
        self.out = out
        self.input = scan_input
        self.fmt = fmt
        self.columns = _Columns(scan_input)

    def start(self, *_args) -> None:
        if self.fmt == "tsv":
            self.out.write("\t".join(HIT_COLUMNS) + "\n")

    def chunk(self, result: "ChunkResult") -> None:
        write_bytes(self.out, self.build(result).render_array())

    def render(self, result: "ChunkResult") -> bytes:
        """The chunk's rows as bytes (latin-1)."""
        return self.build(result).render()

    def build(self, result: "ChunkResult") -> TextBuilder:
        """The chunk's rows as records."""
        b = TextBuilder(result.parallel)
        c = _Chunk(result, self.input)
        if c.rows.size == 0:
            return b
        json_mode = self.fmt == "jsonl"
        qid = pick(b, self.columns.get("qjson" if json_mode else "qid"), c.q)
        rid = pick(b, self.columns.get("rjson" if json_mode else "rid"), c.r)
        ints = {name: b.integers(c.field(name)) for name in
                ("score", "query_start", "query_end", "ref_start", "ref_end", "aln_length")}
        lines = [c.lines(b, w) for w in range(3)]
        energy = np.zeros(c.rows.size, np.float32) if c.noenergy else c.field("energy")
        if json_mode:
            # JSON numbers with the TSV's values: round(x, 2) is the number '%.2f' of x prints.
            two = lambda v: json.dumps(round(float(v), 2))  # noqa: E731
            e = b.formatted(energy, two)
            ident = b.formatted(c.field("identity"), two)
            sim = b.formatted(c.field("similarity"), two)
            values = [qid, rid, ints["score"], e, ints["query_start"], ints["query_end"], ints["ref_start"],
                      ints["ref_end"], ints["aln_length"], ident, sim, *lines]
            pieces: list = []
            for k, (name, value) in enumerate(zip(HIT_COLUMNS, values)):
                quoted = name in ALIGNMENT_COLUMNS  # ids come JSON-encoded; numbers are bare
                pieces += [("{" if k == 0 else ", ") + json.dumps(name) + ": " + ('"' if quoted else ""), value]
                if quoted:
                    pieces.append('"')
            pieces.append("}\n")
        else:
            # '%.2f' of round(x, 2) has the digits of '%.2f' of x (both round the exact value).
            values = [qid, rid, ints["score"], b.fixed(energy, 2), ints["query_start"], ints["query_end"],
                      ints["ref_start"], ints["ref_end"], ints["aln_length"], b.fixed(c.field("identity"), 2),
                      b.fixed(c.field("similarity"), 2), *lines]
            pieces = []
            for k, value in enumerate(values):
                pieces += ([] if k == 0 else ["\t"]) + [value]
            pieces.append("\n")
        b.records(c.pair, 0, c.rows, pieces)
        return b

    def finish(self) -> None:
        pass


def arrow_schema():
    """The Parquet/Arrow schema of a hit table."""
    import pyarrow as pa

    types = {"query_id": pa.string(), "reference_id": pa.string(), "energy": pa.float64(), "identity": pa.float64(),
             "similarity": pa.float64(), "aln_mirna": pa.string(), "aln_map": pa.string(), "aln_utr": pa.string()}
    return pa.schema([(name, types.get(name, pa.int64())) for name in HIT_COLUMNS])


class ArrowBatches:
    """The reported hits of a run's chunks as Arrow record batches with :data:`HIT_COLUMNS`;
    the query and reference id arrays are built once per run (not per chunk)."""

    def __init__(self, scan_input: "ScanInput") -> None:
        import pyarrow as pa

        self.input = scan_input
        self.schema = arrow_schema()
        self.ids = (pa.array([x.id for x in scan_input.queries], pa.string()),
                    pa.array([x.id for x in scan_input.references], pa.string()))

    def batch(self, result: "ChunkResult"):
        """The chunk's reported hits."""
        import pyarrow as pa

        c = _Chunk(result, self.input)

        def text(which: int) -> "pa.Array":
            lengths = c.hits.width[c.rows]
            data, _ = gather(c.hits.text, c.line_starts(which), lengths, result.parallel)
            offsets = np.zeros(lengths.shape[0] + 1, np.int32)
            np.cumsum(lengths, out=offsets[1:])
            return pa.StringArray.from_buffers(lengths.shape[0], pa.py_buffer(offsets), pa.py_buffer(data))

        qids, rids = self.ids
        energy = np.zeros(c.rows.size) if c.noenergy else np.round(c.field("energy").astype(np.float64), 2)
        arrays = [qids.take(pa.array(c.q)), rids.take(pa.array(c.r)), pa.array(c.field("score")), pa.array(energy),
                  *(pa.array(c.field(n)) for n in ("query_start", "query_end", "ref_start", "ref_end", "aln_length")),
                  pa.array(c.field("identity")), pa.array(c.field("similarity")), text(0), text(1), text(2)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def hit_frame(results: Sequence["ChunkResult"], scan_input: "ScanInput"):
    """The reported hits of whole results as a pandas DataFrame with :data:`HIT_COLUMNS`."""
    import pandas as pd

    frames = []
    qids = np.array([x.id for x in scan_input.queries], dtype=object)
    rids = np.array([x.id for x in scan_input.references], dtype=object)
    for result in results:
        c = _Chunk(result, scan_input)
        if c.rows.size == 0:
            continue
        lines = [c.hits.strings(w) for w in range(3)]
        rows = c.rows.tolist()
        energy = np.zeros(c.rows.size) if c.noenergy else np.round(c.field("energy").astype(np.float64), 2)
        frames.append(pd.DataFrame({
            "query_id": qids[c.q], "reference_id": rids[c.r], "score": c.field("score"), "energy": energy,
            **{n: c.field(n) for n in ("query_start", "query_end", "ref_start", "ref_end", "aln_length",
                                        "identity", "similarity")},
            "aln_mirna": [lines[0][k] for k in rows], "aln_map": [lines[1][k] for k in rows],
            "aln_utr": [lines[2][k] for k in rows],
        }))
    if not frames:
        return pd.DataFrame({name: [] for name in HIT_COLUMNS})
    return pd.concat(frames, ignore_index=True)
