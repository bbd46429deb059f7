"""Writers for spliced-alignment results: GFF3, a per-exon table (TSV) and a text report."""
from __future__ import annotations

from typing import IO, Iterable
from urllib.parse import quote

from gamut.splicing.result import SpliceResult

TABLE_COLUMNS = ("target", "base", "score", "rank", "exon_index", "exon_name", "start", "end",
                 "length", "target_start", "target_end")


def gff3_value(value: str) -> str:
    """A GFF3 column or attribute value, its reserved characters (``;=&,`` tab, newline, ``%``) percent-encoded."""
    return quote(value, safe=" :^*$@!+_?-|.")


def write_gff3(handle: IO[str], results: Iterable[tuple[str, SpliceResult]], source: str = "gamut") -> None:
    """GFF3: per result an ``mRNA`` spanning the chain (score = alignment score) and its ``exon``s.

    ``results`` yields ``(base_seqid, result)``; coordinates are 1-based inclusive, and each exon
    carries ``Target=<target> <start> <end>`` (1-based, the aligned target segment).
    """
    handle.write("##gff-version 3\n")
    for seqid, result in results:
        parent = gff3_value(f"{result.name}")
        first = min(s for s, _ in result.exons) + 1
        last = max(e for _, e in result.exons)
        handle.write(f"{gff3_value(seqid)}\t{source}\tmRNA\t{first}\t{last}\t{result.score}\t+\t.\t"
                     f"ID={parent};Name={parent};exons={len(result.chain)}\n")
        for rank, (index, (start, end), (ts, te)) in enumerate(zip(result.chain, result.exons, result.target_spans), 1):
            target = f";Target={parent} {ts + 1} {te}" if te > ts else ""
            handle.write(f"{gff3_value(seqid)}\t{source}\texon\t{start + 1}\t{end}\t.\t+\t.\t"
                         f"ID={parent}.exon{rank};Parent={parent};candidate={index}{target}\n")


def table_rows(base_name: str, result: SpliceResult, exon_names: list[str] | None = None) -> list[tuple]:
    """Rows of the per-exon table (columns :data:`TABLE_COLUMNS`)."""
    rows = []
    for rank, (index, (start, end), (ts, te)) in enumerate(zip(result.chain, result.exons, result.target_spans), 1):
        name = exon_names[index] if exon_names else ""
        rows.append((result.name, base_name, result.score, rank, index, name, start, end, end - start, ts, te))
    return rows


def write_table(handle: IO[str], rows: Iterable[tuple]) -> None:
    """A TSV with a header line (0-based half-open coordinates)."""
    handle.write("\t".join(TABLE_COLUMNS) + "\n")
    for row in rows:
        handle.write("\t".join(str(v) for v in row) + "\n")


def format_alignment(result: SpliceResult, width: int = 60) -> str:
    """The alignment in blocks of ``width`` columns: chain exons on top, target below."""
    aln = result.alignment
    middle = "".join("|" if a == b and a not in "-N" else " " for a, b in zip(aln.base, aln.target))
    lines = []
    for lo in range(0, len(aln.base), width):
        lines.append(f"exons  {aln.base[lo:lo + width]}")
        lines.append(f"       {middle[lo:lo + width]}")
        lines.append(f"target {aln.target[lo:lo + width]}")
        lines.append("")
    return "\n".join(lines)


def format_report(base_name: str, result: SpliceResult, alignment: bool = True) -> str:
    """A text block per case: score, chain, CIGAR and (optionally) the alignment."""
    chain = ", ".join(f"{i}:{s}-{e}" for i, (s, e) in zip(result.chain, result.exons))
    aln = result.alignment
    head = [
        f"# target {result.name} vs base {base_name}",
        f"score\t{result.score}",
        f"exons\t{len(result.chain)}\t{chain}",
        f"columns\t{len(aln.base)}\tmatches\t{aln.matches}",
        f"cigar\t{aln.cigar}",
    ]
    text = "\n".join(head) + "\n"
    if alignment:
        text += "\n" + format_alignment(result) + "\n"
    return text
