"""Build spliced-alignment cases from files: base FASTA, candidate exons (BED/GFF3/TSV), targets.

Pairing: with one base record every target is aligned to it; with several, a pairs file
(``target_name base_name`` per line) says which base each target goes with. Exons belong to the
base record named by their seqid (a TSV without seqids needs a single-record base).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from gamut.errors import InputError, UsageError
from gamut.io import read_fasta
from gamut.io.exons import ExonRecord, read_exons
from gamut.io.fasta import text_lines
from gamut.splicing.model import ScoreParams, SpliceCase, encode, make_case


@dataclass(frozen=True)
class FileCase:
    """A case read from files, with the base record's name and the names of its candidate exons."""

    base_name: str
    case: SpliceCase
    exon_names: list[str]


def _read_pairs(path: str) -> list[tuple[str, str]]:
    pairs = []
    for number, line in text_lines(path):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) < 2:
            raise InputError(f"{path}: line {number} needs a target name and a base name")
        pairs.append((fields[0], fields[1]))
    if not pairs:
        raise InputError(f"{path}: no target/base pairs")
    return pairs


def load_cases(
    base_path: str | os.PathLike,
    exons_path: str | os.PathLike,
    target_path: str | os.PathLike,
    params: ScoreParams,
    *,
    exon_format: str | None = None,
    feature_types: tuple[str, ...] = ("exon", "CDS"),
    pairs_path: str | os.PathLike | None = None,
) -> list[FileCase]:
    """All cases described by the three files (and the optional pairs file), validated."""
    base_path, exons_path, target_path = os.fspath(base_path), os.fspath(exons_path), os.fspath(target_path)
    bases = {}
    for record in read_fasta(base_path, unique=True):
        bases[record.name] = record.sequence
    exons: list[ExonRecord] = read_exons(exons_path, exon_format, feature_types)
    by_seqid: dict[str, list[ExonRecord]] = {}
    for rec in exons:
        seqid = rec.seqid
        if seqid == "":
            if len(bases) != 1:
                raise InputError(f"{exons_path}: exons without a sequence name need a base FASTA with one record")
            seqid = next(iter(bases))
        if seqid not in bases:
            raise InputError(f"{exons_path}: exon {rec.start}-{rec.end} is on '{seqid}', which is not in {base_path}")
        by_seqid.setdefault(seqid, []).append(rec)
    # unique: a target name is the ID of its chain in the GFF3 and the key of the pairs file
    targets = list(read_fasta(target_path, allow_empty=True, unique=True))
    if pairs_path is not None:
        wanted = _read_pairs(os.fspath(pairs_path))
        names = {t.name: t for t in targets}
        plan = []
        for target_name, base_name in wanted:
            if target_name not in names:
                raise InputError(f"{os.fspath(pairs_path)}: target '{target_name}' is not in {target_path}")
            if base_name not in bases:
                raise InputError(f"{os.fspath(pairs_path)}: base '{base_name}' is not in {base_path}")
            plan.append((names[target_name], base_name))
    elif len(bases) == 1:
        plan = [(t, next(iter(bases))) for t in targets]
    else:
        raise UsageError(f"{base_path} has {len(bases)} records: give --pairs to say which base each target uses")
    encoded = {}
    out = []
    for target, base_name in plan:
        if not target.sequence:
            raise InputError(f"{target_path}: target '{target.name}' is empty")
        recs = by_seqid.get(base_name)
        if not recs:
            raise InputError(f"{exons_path}: no candidate exons on base '{base_name}'")
        base_len = len(bases[base_name])
        for rec in recs:
            if rec.end > base_len:
                raise InputError(
                    f"{exons_path}: exon {rec.start}-{rec.end} (0-based half-open) runs past the end of "
                    f"'{base_name}' ({base_len} nt)")
        if base_name not in encoded:
            encoded[base_name] = encode(bases[base_name], f"{base_path}: record '{base_name}'")
        target_codes = encode(target.sequence, f"{target_path}: record '{target.name}'")
        case = make_case(encoded[base_name], [(r.start, r.end) for r in recs], target_codes, params,
                         name=target.name)
        out.append(FileCase(base_name, case, [r.name for r in recs]))
    return out
