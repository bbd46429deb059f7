"""Candidate-exon readers: BED, GFF3 and a simple TSV, all returned as 0-based half-open intervals.

- BED: ``chrom start end [name ...]`` (0-based half-open); ``track``/``browser``/``#`` lines skipped.
- GFF3: features whose type is in ``feature_types`` (default ``exon`` and ``CDS``), 1-based
  inclusive ``start``/``end`` converted to 0-based half-open; ``name`` from ``ID``/``Name``.
- TSV: ``seqid start end [name]`` or just ``start end`` (0-based half-open); ``#`` comments and a
  header line (first field ``seqid``/``chrom``/``start``) are skipped.

Strand columns are ignored: exons are taken on the base as given. Every malformed line raises
:class:`~gamut.errors.InputError` naming the file and line.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote

from gamut.errors import InputError
from gamut.io.fasta import text_lines, uncompressed_name

FORMATS = ("bed", "gff3", "tsv")
_EXTENSIONS = {".bed": "bed", ".gff": "gff3", ".gff3": "gff3", ".tsv": "tsv", ".txt": "tsv", ".tab": "tsv"}


@dataclass(frozen=True)
class ExonRecord:
    """One candidate exon: ``seqid`` ('' when the file has none), 0-based half-open interval, name."""

    seqid: str
    start: int
    end: int
    name: str = ""


def detect_format(path: str | os.PathLike) -> str:
    """``bed``, ``gff3`` or ``tsv`` from the file name (a compression suffix such as ``.gz`` ignored)."""
    name = uncompressed_name(path)
    for ext, fmt in _EXTENSIONS.items():
        if name.endswith(ext):
            return fmt
    raise InputError(f"{os.fspath(path)}: cannot tell the exon file format from its name (use .bed, .gff3 or .tsv, or give the format)")


def _int(path: str, number: int, text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InputError(f"{path}: line {number}: {what} '{text}' is not an integer") from None


def _check(path: str, number: int, start: int, end: int) -> None:
    if start < 0 or end <= start:
        raise InputError(f"{path}: line {number}: exon {start}-{end} is empty or negative (0-based half-open)")


def _read_bed(path: str) -> list[ExonRecord]:
    out = []
    for number, line in text_lines(path):
        if not line.strip() or line.startswith(("#", "track", "browser")):
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        if len(fields) < 3:
            raise InputError(f"{path}: line {number}: BED needs chrom, start and end")
        start = _int(path, number, fields[1], "start")
        end = _int(path, number, fields[2], "end")
        _check(path, number, start, end)
        out.append(ExonRecord(fields[0], start, end, fields[3] if len(fields) > 3 else ""))
    return out


def _gff_name(attributes: str) -> str:
    pairs = dict(part.split("=", 1) for part in attributes.split(";") if "=" in part)
    return unquote(pairs.get("ID", pairs.get("Name", "")))


def gff_rows(path: str, feature_types: tuple[str, ...] | None = None) -> Iterator[tuple[int, list[str], int, int]]:
    """``(line number, the 9 fields, start, end)`` of each feature line of a GFF3 or GTF file whose type
    is in ``feature_types`` (case ignored; None: every type), start and end as 0-based half-open;
    comments and blank lines skipped, reading stops at ``##FASTA``; a malformed line is an
    :class:`InputError` naming the file and line."""
    wanted = None if feature_types is None else {t.lower() for t in feature_types}
    for number, line in text_lines(path):
        if line.startswith("##FASTA"):
            break
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 9:
            raise InputError(f"{path}: line {number}: GFF3 needs 9 tab-separated columns, found {len(fields)}")
        if wanted is not None and fields[2].lower() not in wanted:
            continue
        start = _int(path, number, fields[3], "start") - 1
        end = _int(path, number, fields[4], "end")
        _check(path, number, start, end)
        yield number, fields, start, end


def _read_gff3(path: str, feature_types: tuple[str, ...]) -> list[ExonRecord]:
    return [ExonRecord(unquote(fields[0]), start, end, _gff_name(fields[8]))
            for _, fields, start, end in gff_rows(path, feature_types)]


def _read_tsv(path: str) -> list[ExonRecord]:
    out = []
    for number, line in text_lines(path):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        if not out and fields[0].lower() in ("seqid", "chrom", "start", "sequence"):
            continue
        if len(fields) == 2:
            seqid, s, e, name = "", fields[0], fields[1], ""
        elif len(fields) >= 3:
            seqid, s, e = fields[:3]
            name = fields[3] if len(fields) > 3 else ""
        else:
            raise InputError(f"{path}: line {number}: TSV needs 'start end' or 'seqid start end [name]'")
        start = _int(path, number, s, "start")
        end = _int(path, number, e, "end")
        _check(path, number, start, end)
        out.append(ExonRecord(seqid, start, end, name))
    return out


def read_exons(
    path: str | os.PathLike,
    fmt: str | None = None,
    feature_types: tuple[str, ...] = ("exon", "CDS"),
) -> list[ExonRecord]:
    """All candidate exons of a BED/GFF3/TSV file (format from the name unless ``fmt`` is given)."""
    path = os.fspath(path)
    fmt = (fmt or "auto").lower()
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt == "gff":
        fmt = "gff3"
    if fmt not in FORMATS:
        raise InputError(f"{path}: unknown exon format '{fmt}' (choose from {', '.join(FORMATS)})")
    records = _read_bed(path) if fmt == "bed" else _read_gff3(path, feature_types) if fmt == "gff3" else _read_tsv(path)
    if not records:
        kinds = f" of type {'/'.join(feature_types)}" if fmt == "gff3" else ""
        raise InputError(f"{path}: no candidate exons{kinds} found")
    return records
