"""Output writers: miRanda 3.3a's text (verbose, quiet, keyval) and tabular formats (spec §10)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import IO

from gamut.scan.fasta import SeqRecord
from gamut.scan.hits import Hit
from gamut.scan.params import ScanParams

RULE = "=-" * 31 + "=\n"

#: Columns of a hit table (API, TSV, JSONL, Parquet), in miRanda's order.
HIT_COLUMNS = (
    "query_id", "reference_id", "score", "energy", "query_start", "query_end", "ref_start",
    "ref_end", "aln_length", "identity", "similarity", "aln_mirna", "aln_map", "aln_utr",
)


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


def read_line(record: SeqRecord, length: int) -> str:
    return f"Read Sequence:{record.id} {record.description}({length} nt)\n"


def hit_block(hit: Hit, noenergy: bool) -> str:
    """The multi-line block of one hit (not -keyval)."""
    energy = 0.0 if noenergy else float(hit.energy)
    energy_line = "" if noenergy else f"   Energy:  {energy:f} kCal/Mol\n"
    return (
        f"\n   Forward:\tScore: {float(hit.score):f}  Q:{hit.query_start} to {hit.query_end}"
        f"  R:{hit.ref_start} to {hit.ref_end} Align Len ({hit.aln_length})"
        f" ({hit.identity:3.2f}%) ({hit.similarity:3.2f}%)\n\n"
        f"   Query:    3' {hit.aln_mirna} 5'\n"
        f"                {hit.aln_map}\n"
        f"   Ref:      5' {hit.aln_utr} 3'\n\n"
        f"{energy_line}\n"
        "Scores for this hit:\n"
        f">{hit.query_id}\t{hit.reference_id}\t{float(hit.score):2.2f}\t{energy:2.2f}"
        f"\t{hit.query_start} {hit.query_end}\t{hit.ref_start} {hit.ref_end}\t{hit.aln_length}"
        f"\t{hit.identity:3.2f}%\t{hit.similarity:3.2f}%\n\n"
    )


def keyval_line(hit: Hit, noenergy: bool) -> str:
    energy = 0.0 if noenergy else float(hit.energy)
    return (
        f"//hit_info\tquery_id={hit.query_id}\treference_id={hit.reference_id}"
        f"\tscore={float(hit.score):f}\tenergy={energy:f}\tquery_start={hit.query_start}"
        f"\tquery_end={hit.query_end}\tref_start={hit.ref_start}\tref_end={hit.ref_end}"
        f"\taln_length={hit.aln_length}\tidentity={hit.identity:f}\tsimilarity={hit.similarity:f}"
        f"\taln_mirna={hit.aln_mirna}\taln_map={hit.aln_map}\taln_utr={hit.aln_utr}\n"
    )


@dataclass
class PairResult:
    """The outcome of scanning one (query, reference) pair, in output order."""

    query: SeqRecord
    reference: SeqRecord
    reference_length: int  # after -trim
    counter: int  # references scanned so far in the run, this one included
    hits: list[Hit] = field(default_factory=list)  # passed the overlap rule

    @property
    def reported(self) -> list[Hit]:
        return [h for h in self.hits if h.reported]


def summary_lines(result: PairResult, hits: list[Hit], noenergy: bool) -> str:
    """The '>>' per-pair summary of the reported ``hits`` (with its header), or '' when miRanda
    prints none (spec §10.5)."""
    if not hits:
        return ""
    neg_energy = sum(-float(h.energy) for h in hits)
    if not neg_energy > 0:
        return ""
    tot_score = float(sum(h.score for h in hits))
    max_score = float(max(h.score for h in hits))
    if noenergy:
        tot_e, max_e = "0.0", "0.0"
    else:
        tot_e = f"-{neg_energy:2.2f}"
        max_e = f"{min(0.0, min(float(h.energy) for h in hits)):2.2f}"
    positions = "".join(f" {h.ref_start}" for h in hits)
    return (
        "Seq1,Seq2,Tot Score,Tot Energy,Max Score,Max Energy,Strand,Len1,Len2,Positions\n"
        f">>{result.query.id}\t{result.reference.id}\t{tot_score:2.2f}\t{tot_e}\t{max_score:2.2f}"
        f"\t{max_e}\t{result.counter}\t{len(result.query)}\t{result.reference_length}\t{positions}\n"
    )


class MirandaTextWriter:
    """Writes results in miRanda 3.3a's text layout (verbose by default; quiet; keyval)."""

    def __init__(self, out: IO[str], params: ScanParams, *, quiet: bool = False, keyval: bool = False):
        self.out = out
        self.params = params
        self.quiet = quiet
        self.keyval = keyval

    def start(self, banner: str, query_path: str, reference_path: str, n_restrict: int | None) -> None:
        self.out.write(banner + settings_block(query_path, reference_path, self.params))
        if n_restrict is not None and not self.quiet:
            self.out.write(f"Performing Restricted Scan on:{n_restrict} pairs\n")

    def query(self, record: SeqRecord) -> None:
        if not self.quiet:
            self.out.write(read_line(record, len(record)))

    def pair(self, result: PairResult) -> None:
        noenergy = self.params.noenergy
        parts: list[str] = []
        if not self.quiet:
            parts.append(read_line(result.reference, len(result.reference)))
            parts.append(RULE + f"Performing Scan: {result.query.id} vs {result.reference.id}\n" + RULE)
        reported = result.reported
        for hit in reported:
            parts.append(keyval_line(hit, noenergy) if self.keyval else hit_block(hit, noenergy))
        summary = summary_lines(result, reported, noenergy)
        if not self.quiet:
            parts.append("Score for this Scan:\n")
        if summary:
            parts.append(summary + "Complete\n\n")
        elif not self.quiet:
            parts.append("No Hits Found above Threshold\nComplete\n\n")
        self.out.write("".join(parts))

    def finish(self) -> None:
        self.out.write("Scan Complete\n\n")


def hit_record(hit: Hit, noenergy: bool) -> dict:
    """A hit as a flat dict with :data:`HIT_COLUMNS` (energy 0.0 with -noenergy, as miRanda prints)."""
    row = {name: getattr(hit, name) for name in HIT_COLUMNS}
    row["energy"] = 0.0 if noenergy else round(float(hit.energy), 2)
    return row


class TableWriter:
    """Reported hits as TSV (with a header) or JSON lines."""

    def __init__(self, out: IO[str], params: ScanParams, fmt: str):
        self.out = out
        self.params = params
        self.fmt = fmt

    def start(self, *_args) -> None:
        if self.fmt == "tsv":
            self.out.write("\t".join(HIT_COLUMNS) + "\n")

    def query(self, record: SeqRecord) -> None:
        pass

    def pair(self, result: PairResult) -> None:
        for hit in result.reported:
            row = hit_record(hit, self.params.noenergy)
            if self.fmt == "tsv":
                self.out.write("\t".join(_tsv_value(row[c]) for c in HIT_COLUMNS) + "\n")
            else:
                self.out.write(json.dumps(row) + "\n")

    def finish(self) -> None:
        pass


def _tsv_value(value) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)
