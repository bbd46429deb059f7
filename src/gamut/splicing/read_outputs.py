"""Outputs of read-to-chain assignment (:mod:`gamut.splicing.reads`): a table (TSV, JSON lines,
Parquet: one row per read, unplaced reads included) or the placed reads' chains for a genome
browser (BED12; GFF3 with a ``transcript`` feature per read and its ``exon`` children, unique IDs
and ``Parent`` links). The format follows the output's suffix unless given."""
from __future__ import annotations

from gamut.errors import UsageError
from gamut.io.outputs import FormatRules, format_for_output
from gamut.splicing.reads import ReadChain, chains_frame, chains_tsv
from gamut.splicing.report import gff3_value

READ_FORMATS = ("tsv", "jsonl", "parquet", "bed", "gff3")
#: How output names choose the format: by suffix, under a compression suffix (``.gz``; ``.bgz``,
#: BGZF, for BED and GFF3, which tabix indexes once sorted); Parquet compresses inside.
READ_FORMAT_RULES = FormatRules({".tsv": "tsv", ".txt": "tsv", ".jsonl": "jsonl", ".parquet": "parquet",
                                 ".bed": "bed", ".bed12": "bed", ".gff3": "gff3", ".gff": "gff3"},
                                tabix=frozenset({"bed", "gff3"}), self_compressed=frozenset({"parquet"}))


def read_output_format(path: str, fmt: str | None = None) -> str:
    """The format of an output (:func:`gamut.io.outputs.format_for_output`): the suffix's, ``fmt``
    (a suffix naming another is an error), else TSV for standard output and a name without one."""
    if fmt is not None and fmt not in READ_FORMATS:
        raise UsageError(f"unknown format '{fmt}' for read chains (choose from {', '.join(READ_FORMATS)})")
    return format_for_output(path, fmt, READ_FORMAT_RULES, "tsv")


def bed12_lines(chains: list[ReadChain]) -> list[str]:
    """One BED12 line per placed read (score: the chain's score, clamped to 0..1000)."""
    lines = []
    for c in chains:
        if not c.exons:
            continue
        start, end = c.exons[0][0], c.exons[-1][1]
        sizes = ",".join(str(b - a) for a, b in c.exons)
        starts = ",".join(str(a - start) for a, _ in c.exons)
        chrom = c.locus.rsplit(":", 1)[0]
        score = max(0, min(1000, c.score or 0))
        lines.append(f"{chrom}\t{start}\t{end}\t{c.read_id}\t{score}\t{'+' if c.strand > 0 else '-'}\t"
                     f"{start}\t{end}\t0\t{len(c.exons)}\t{sizes},\t{starts},")
    return lines


def gff3_lines(chains: list[ReadChain]) -> list[str]:
    """GFF3 (1-based, closed) of the placed reads: a ``transcript`` per read (``ID=read:<id>``,
    its assignment in ``transcript`` and ``locus``) and an ``exon`` per chain exon."""
    lines = ["##gff-version 3"]
    for c in chains:
        if not c.exons:
            continue
        chrom = gff3_value(c.locus.rsplit(":", 1)[0])
        strand = "+" if c.strand > 0 else "-"
        ident = gff3_value(f"read:{c.read_id}")
        lines.append(f"{chrom}\tgamut\ttranscript\t{c.exons[0][0] + 1}\t{c.exons[-1][1]}\t{c.score}\t{strand}\t.\t"
                     f"ID={ident};Name={gff3_value(c.read_id)};transcript={gff3_value(c.transcript)};"
                     f"locus={gff3_value(c.locus)}")
        for k, (a, b) in enumerate(c.exons, 1):
            lines.append(f"{chrom}\tgamut\texon\t{a + 1}\t{b}\t.\t{strand}\t.\tID={ident}.exon{k};Parent={ident}")
    return lines


def write_read_chains(chains: list[ReadChain], path: str, fmt: str | None = None) -> None:
    """Write ``chains`` to ``path`` (``-``: standard output) in ``fmt`` (default: by suffix),
    atomically."""
    from gamut.io import atomic_output

    fmt = read_output_format(path, fmt)
    if fmt == "parquet":
        if path == "-":
            raise UsageError("Parquet needs a file, not standard output")
        frame = chains_frame(chains)
        with atomic_output(path, "wb") as handle:
            frame.to_parquet(handle, index=False)
        return
    if fmt == "tsv":
        text = chains_tsv(chains)
    elif fmt == "jsonl":
        text = chains_frame(chains).to_json(orient="records", lines=True)
    else:
        text = "\n".join(bed12_lines(chains) if fmt == "bed" else gff3_lines(chains)) + "\n"
    with atomic_output(path) as handle:
        handle.write(text)
