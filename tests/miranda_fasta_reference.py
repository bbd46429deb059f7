"""miRanda's FASTA rules (miranda-model §2) written plainly, record by record in Python: the
reference that the compiled parser (:func:`gamut.scanning.fasta.parse_miranda_fasta`) is tested
against. It was the product's parser before that one."""
from __future__ import annotations

from gamut.errors import InputError
from gamut.io.textout import header_text
from gamut.scanning.alphabet import ALLOWED_LETTERS
from gamut.scanning.fasta import SeqRecord, shown

_WHITESPACE = b" \t\r\n"
_ALLOWED = bytes(sorted({ord(c) for c in ALLOWED_LETTERS | {c.lower() for c in ALLOWED_LETTERS}}))
_DROP = bytes.maketrans(b"", b"")


def _first_illegal(sequence: bytes) -> int:
    """The first byte of ``sequence`` that is not an allowed letter (there is one)."""
    others = set(sequence.translate(None, _ALLOWED))
    return sequence[min(sequence.index(b) for b in others)]


def reference_parse(data: bytes, name: str = "<input>") -> list[SeqRecord]:
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
