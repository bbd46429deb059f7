"""FASTA reading exactly as miRanda 3.3a does it (miranda-model §2).

A hand-written parser is needed here (rather than dnaio) because miRanda's rules differ from
general FASTA: the id ends at the first space/tab/CR/LF, the description keeps a trailing CR,
a '>' anywhere in a sequence starts a new record, letters are checked against miRanda's alphabet,
and case is kept. Compressed files (gzip, bzip2, xz, zstd) are read transparently.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from gamut.errors import InputError
from gamut.io.fasta import read_input_bytes
from gamut.scanning.alphabet import ALLOWED_LETTERS

_WHITESPACE = b" \t\r\n"
_ALLOWED = bytes(sorted({ord(c) for c in ALLOWED_LETTERS | {c.lower() for c in ALLOWED_LETTERS}}))
_DROP = bytes.maketrans(b"", b"")


@dataclass(frozen=True)
class SeqRecord:
    """A miRanda sequence record: ``sequence`` is the raw bytes, case kept."""

    id: str
    description: str
    sequence: bytes

    def __len__(self) -> int:
        return len(self.sequence)


def _read_bytes(path: str | os.PathLike) -> bytes:
    """The file's bytes, decompressed when it is gzip, bzip2, xz or zstd (told by its content)."""
    try:
        return read_input_bytes(path)
    except InputError as exc:  # miRanda's wording for a file it cannot open
        raise InputError(f"cannot open file {exc}") from None


def _first_illegal(sequence: bytes) -> int:
    """The first byte of ``sequence`` that is not an allowed letter (there is one)."""
    others = set(sequence.translate(None, _ALLOWED))
    return sequence[min(sequence.index(b) for b in others)]


def parse_miranda_fasta(data: bytes, name: str = "<input>") -> list[SeqRecord]:
    """Parse FASTA bytes with miRanda's rules; errors name the file and the record."""
    records: list[SeqRecord] = []
    n = len(data)
    pos = 0
    while True:
        while pos < n and data[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            break
        if data[pos] != ord(">"):
            raise InputError(f"{name}: illegal format (record {len(records) + 1} does not start with '>')")
        pos += 1
        start = pos
        while pos < n and data[pos] not in _WHITESPACE:
            pos += 1
        ident = data[start:pos].decode("latin-1")
        while pos < n and data[pos] in b" \t\r":
            pos += 1
        eol = data.find(b"\n", pos)
        if eol < 0:
            raise InputError(f"{name}: unexpected end of file in the header of record '{ident}'")
        description = data[pos:eol].decode("latin-1")
        pos = eol + 1
        end = data.find(b">", pos)
        if end < 0:
            end = n
        sequence = data[pos:end].translate(_DROP, _WHITESPACE)
        pos = end
        if not ident:
            raise InputError(f"{name}: record {len(records) + 1} has an empty id")
        if sequence.translate(None, _ALLOWED):  # some byte is not an allowed letter
            bad = _first_illegal(sequence)
            raise InputError(f"{name}: illegal character '{chr(bad)}' in sequence of record '{ident}'")
        if not sequence:
            raise InputError(f"{name}: record '{ident}' has no sequence")
        records.append(SeqRecord(ident, description, sequence))
    return records


def read_miranda_fasta(path: str | os.PathLike) -> list[SeqRecord]:
    """Read every record of a (optionally compressed) FASTA file; an empty file is an error."""
    records = parse_miranda_fasta(_read_bytes(path), os.fspath(path))
    if not records:
        raise InputError(f"{os.fspath(path)}: no FASTA records found")
    return records
