"""Transcript annotations for genome coordinates (``gamut scan --annotation FILE``).

Formats (told by the name, a compression suffix such as ``.gz`` ignored; gzip, bzip2, xz and
zstd read through :func:`gamut.io.fasta.open_input`):

- BED12 (``.bed``): one transcript per line, ``name`` its id, exons from ``blockSizes`` and
  ``blockStarts``; a line with fewer than 12 columns is one exon; ``strand`` (column 6) ``+``
  when absent. ``track``/``browser``/``#`` lines are skipped.
- GTF (``.gtf``): ``exon`` lines grouped by the ``transcript_id`` attribute.
- GFF3 (``.gff3``/``.gff``): ``exon`` lines grouped by each id of their ``Parent`` attribute; an
  Ensembl-style ``transcript:ID`` parent also answers to ``ID``.

Every transcript's exons must lie on one chromosome and strand and must not overlap; the
transcript's letters are its exons in genome order on ``+`` and reversed on ``-``. A malformed
line or transcript is an :class:`~gamut.errors.InputError` naming the file (and the line or the
transcript).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from urllib.parse import unquote

import numpy as np

from gamut.errors import InputError
from gamut.io.exons import _int, gff_rows
from gamut.io.fasta import open_input, text_lines, uncompressed_name
from gamut.io.inputs import is_stream

ANNOTATION_FORMATS = ("bed", "gtf", "gff3")
_SUFFIXES = {".bed": "bed", ".bed12": "bed", ".gtf": "gtf", ".gff3": "gff3", ".gff": "gff3"}
_GTF_TRANSCRIPT = re.compile(r'(?:^|;)\s*transcript_id\s+"?([^";]+)"?')


@dataclass(frozen=True)
class Annotation:
    """Transcripts as arrays. Transcript k: chromosome ``chroms[chrom[k]]``, ``strand[k]`` (+1/-1),
    exons ``exon_off[k]:exon_off[k+1]`` in transcript order (5'->3' of the transcript, so
    descending on ``-``), each ``exon_start``-``exon_end`` (0-based half-open genome) beginning at
    transcript offset ``exon_tx[e]`` (0-based); ``length[k]`` letters."""

    path: str
    ids: dict[str, int]
    names: list[str]
    chroms: list[str]
    chrom: np.ndarray  # int64 per transcript
    strand: np.ndarray  # int8, +1 / -1
    exon_off: np.ndarray  # int64, n + 1
    exon_start: np.ndarray  # int64 per exon
    exon_end: np.ndarray
    exon_tx: np.ndarray  # int64 per exon: transcript offset of its first letter
    length: np.ndarray  # int64 per transcript

    def __len__(self) -> int:
        return len(self.names)


def detect_annotation_format(path: str) -> str:
    name = uncompressed_name(path)
    for suffix, fmt in _SUFFIXES.items():
        if name.endswith(suffix):
            return fmt
    raise InputError(f"{path}: cannot tell the annotation format from its name (use .bed, .gtf or .gff3)")


def _strand(path: str, number: int, text: str) -> int:
    if text in ("+", "-"):
        return 1 if text == "+" else -1
    raise InputError(f"{path}: line {number}: strand '{text}' is not + or -")


def _read_bed12(path: str) -> dict[str, tuple[str, int, list[tuple[int, int]]]]:
    out: dict[str, tuple[str, int, list[tuple[int, int]]]] = {}
    for number, line in text_lines(path):
        if not line.strip() or line.startswith(("#", "track", "browser")):
            continue
        f = line.split("\t") if "\t" in line else line.split()
        if len(f) < 4:
            raise InputError(f"{path}: line {number}: a BED transcript needs chrom, start, end and name")
        start, end = _int(path, number, f[1], "start"), _int(path, number, f[2], "end")
        strand = _strand(path, number, f[5]) if len(f) >= 6 else 1
        if len(f) >= 12:
            count = _int(path, number, f[9], "blockCount")
            sizes = [_int(path, number, x, "blockSizes") for x in f[10].strip(",").split(",") if x]
            starts = [_int(path, number, x, "blockStarts") for x in f[11].strip(",").split(",") if x]
            if not (count == len(sizes) == len(starts)) or count < 1:
                raise InputError(f"{path}: line {number}: blockCount {count} does not match blockSizes/blockStarts")
            exons = [(start + s, start + s + z) for s, z in zip(starts, sizes)]
            if any(z <= 0 for z in sizes) or max(e for _, e in exons) > end or min(s for s, _ in exons) < start:
                raise InputError(f"{path}: line {number}: blocks outside {start}-{end} or empty")
        else:
            exons = [(start, end)]
        if f[3] in out:
            raise InputError(f"{path}: line {number}: transcript '{f[3]}' appears twice")
        out[f[3]] = (f[0], strand, exons)
    return out


def _read_gff(path: str, gtf: bool, features: tuple[str, ...] = ("exon",)) -> dict[str, tuple[str, int, list[tuple[int, int]]]]:
    out: dict[str, tuple[str, int, list[tuple[int, int]]]] = {}
    for number, fields, start, end in gff_rows(path, features):
        strand = _strand(path, number, fields[6])
        if gtf:
            found = _GTF_TRANSCRIPT.search(fields[8])
            parents = [found.group(1)] if found else []
        else:
            attrs = dict(part.split("=", 1) for part in fields[8].split(";") if "=" in part)
            parents = [unquote(p) for p in attrs.get("Parent", "").split(",") if p]
        if not parents:
            what = "transcript_id" if gtf else "Parent"
            raise InputError(f"{path}: line {number}: exon without a {what} attribute")
        chrom = unquote(fields[0])
        for tx in parents:
            known = out.setdefault(tx, (chrom, strand, []))
            if known[0] != chrom or known[1] != strand:
                raise InputError(f"{path}: line {number}: transcript '{tx}' has exons on two chromosomes or strands")
            known[2].append((start, end))
    if not gtf:  # Ensembl's 'transcript:ENST...' parents also answer to 'ENST...'
        for tx in [t for t in out if t.startswith("transcript:")]:
            out.setdefault(tx.removeprefix("transcript:"), out[tx])
    return out


def _build(path: str, transcripts: dict[str, tuple[str, int, list[tuple[int, int]]]]) -> Annotation:
    if not transcripts:
        raise InputError(f"{path}: no transcripts (exons) found")
    chrom_ids: dict[str, int] = {}
    chrom, strand, exon_off, starts, ends, tx_off, length = [], [], [0], [], [], [], []
    for name, (c, s, exons) in transcripts.items():
        exons = sorted(exons)
        for (a0, b0), (a1, _) in pairwise(exons):
            if a1 < b0:
                raise InputError(f"{path}: transcript '{name}' has overlapping exons ({a0}-{b0} and {a1}-...)")
        if s < 0:
            exons = exons[::-1]
        offset = 0
        for a, b in exons:
            starts.append(a)
            ends.append(b)
            tx_off.append(offset)
            offset += b - a
        chrom.append(chrom_ids.setdefault(c, len(chrom_ids)))
        strand.append(s)
        exon_off.append(len(starts))
        length.append(offset)
    i64 = lambda v: np.asarray(v, np.int64)
    names = list(transcripts)
    return Annotation(path, {n: k for k, n in enumerate(names)}, names, list(chrom_ids), i64(chrom),
                      np.asarray(strand, np.int8), i64(exon_off), i64(starts), i64(ends), i64(tx_off), i64(length))


@lru_cache(maxsize=4)
def _load(path: str, fmt: str, size: int, mtime_ns: int, features: tuple[str, ...] = ("exon",),
          file_id: tuple[int, int] = (0, 0)) -> Annotation:
    return _read(path, fmt, features)


def _read(path: str, fmt: str, features: tuple[str, ...]) -> Annotation:
    if fmt == "bed":
        return _build(path, _read_bed12(path))
    return _build(path, _read_gff(path, gtf=fmt == "gtf", features=features))


def read_annotation(path: str | os.PathLike, fmt: str | None = None, features: tuple[str, ...] = ("exon",)) -> Annotation:
    """The transcripts of a BED12, GTF or GFF3 file (format from the name unless ``fmt``), read
    once per process for the same unchanged file (a pipe or ``-``: read each time, once); GTF and
    GFF3 exons are the lines of type ``features`` (e.g. ``("CDS",)`` for an annotation of coding
    exons only)."""
    path = os.fspath(path)
    fmt = detect_annotation_format(path) if fmt is None else fmt.lower()
    if fmt not in ANNOTATION_FORMATS:
        raise InputError(f"{path}: unknown annotation format '{fmt}' (choose from {', '.join(ANNOTATION_FORMATS)})")
    if is_stream(path):
        return _read(path, fmt, tuple(features))  # a stream: no file to know again
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is None or os.path.isdir(path):
        open_input(path).close()  # raises the reader's InputError (missing file, directory...)
        raise InputError(f"{path}: cannot read the annotation")
    # The file's device and inode too: a relative path names another file from another directory
    # (commands of a `gamut serve` process run in their own directories).
    return _load(path, fmt, st.st_size, st.st_mtime_ns, tuple(features), (st.st_dev, st.st_ino))
