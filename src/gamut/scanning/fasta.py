"""FASTA reading exactly as miRanda 3.3a does it (miranda-model §2).

A hand-written parser is needed here (rather than dnaio) because miRanda's rules differ from
general FASTA: the id ends at the first space/tab/CR/LF, the description keeps a trailing CR,
a '>' anywhere in a sequence starts a new record, letters are checked against miRanda's alphabet,
and case is kept. Compressed files (gzip, bzip2, xz, zstd) are read transparently, and so are
standard input (``-``) and pipes (:func:`gamut.io.inputs.open_input`).

Ids and descriptions are kept as the bytes of the file: they are decoded as UTF-8 with
``surrogateescape`` (:func:`gamut.io.textout.header_text`), so that a byte that is not UTF-8 (0xE9
of a Latin-1 file) survives as a lone surrogate and the text outputs write it back unchanged, as
miRanda copies them.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

from gamut.errors import InputError
from gamut.io.fasta import read_input_bytes
from gamut.io.textout import header_text, raw_text
from gamut.scanning.alphabet import ALLOWED_LETTERS

_WHITESPACE = b" \t\r\n"
_ALLOWED = bytes(sorted({ord(c) for c in ALLOWED_LETTERS | {c.lower() for c in ALLOWED_LETTERS}}))
_DROP = bytes.maketrans(b"", b"")


def is_utf8(text: str) -> bool:
    """Whether the header text came from UTF-8 bytes (holds no byte kept as a lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(text: str) -> str:
    """Header text for a message: bytes that are not UTF-8 written as ``\\xNN``."""
    return raw_text(text).decode("utf-8", "backslashreplace")


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
        ident = header_text(data[start:pos])
        while pos < n and data[pos] in b" \t\r":
            pos += 1
        eol = data.find(b"\n", pos)
        if eol < 0:
            raise InputError(f"{name}: unexpected end of file in the header of record '{shown(ident)}'")
        description = header_text(data[pos:eol])
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
            raise InputError(f"{name}: illegal character '{chr(bad)}' in sequence of record '{shown(ident)}'")
        if not sequence:
            raise InputError(f"{name}: record '{shown(ident)}' has no sequence")
        records.append(SeqRecord(ident, description, sequence))
    return records


def read_miranda_fasta(path: str | os.PathLike) -> list[SeqRecord]:
    """Read every record of a (optionally compressed) FASTA file, ``-`` or a pipe; an empty file is an
    error. Records with the same id are scanned each, as miRanda does: a one-line warning names the
    first such id."""
    shown_path = os.fspath(path)
    records = parse_miranda_fasta(_read_bytes(path), shown_path)
    if not records:
        raise InputError(f"{shown_path}: no FASTA records found")
    warn_duplicate_ids(records, shown_path)
    return records


def warn_duplicate_ids(records: list[SeqRecord], name: str) -> None:
    """A one-line warning naming the first id that two records of ``name`` share (and both record
    numbers): miRanda scans both, and every output shows them under the one name."""
    seen: dict[str, int] = {}
    for number, record in enumerate(records, 1):
        first = seen.setdefault(record.id, number)
        if first != number:
            warnings.warn(f"{name}: duplicate record name '{shown(record.id)}' (records {first} and {number}); "
                          "both are scanned, as miRanda does, and the outputs name both alike", stacklevel=2)
            return
