"""General FASTA reading (plain or gzip-compressed) for folding and spliced alignment.

miRanda-exact parsing, with its own id/description/letter rules, lives in
:mod:`gamut.scan.fasta`; this reader is the everyday one, built on dnaio.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

import dnaio

from gamut.errors import InputError


@dataclass(frozen=True)
class FastaRecord:
    """One FASTA record: ``name`` is the id (up to the first whitespace), ``description`` the rest."""

    name: str
    description: str
    sequence: str


def read_fasta(path: str | os.PathLike, *, allow_empty: bool = False) -> Iterator[FastaRecord]:
    """Yield the records of a FASTA file (``.gz`` and other compressions handled by dnaio).

    Raises :class:`InputError` naming the file (and record) for a missing file, a malformed
    file, an empty file or a record without sequence.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    count = 0
    try:
        with dnaio.open(path, fileformat="fasta") as reader:
            for record in reader:
                header = record.name
                name, _, description = header.partition(" ")
                name = name.strip()
                if not name:
                    raise InputError(f"{path}: record {count + 1} has an empty name")
                sequence = record.sequence
                if not sequence and not allow_empty:
                    raise InputError(f"{path}: record '{name}' has no sequence")
                count += 1
                yield FastaRecord(name, description.strip(), sequence)
    except (dnaio.exceptions.FileFormatError, dnaio.exceptions.UnknownFileFormat) as exc:
        raise InputError(f"{path}: not valid FASTA ({exc})") from None
    if count == 0:
        raise InputError(f"{path}: no FASTA records found")
