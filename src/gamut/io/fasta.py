"""General FASTA reading (plain or compressed, from files, standard input or pipes) for folding
and spliced alignment. The opening of inputs, which every reader shares, is :mod:`gamut.io.inputs`
(its names are importable from here too).

miRanda-exact parsing, with its own id/description/letter rules, lives in
:mod:`gamut.scanning.fasta`; this reader is the everyday one, built on dnaio.
"""
from __future__ import annotations

import os
from typing import BinaryIO, Iterable, Iterator, NamedTuple

import dnaio

from gamut.errors import InputError, UsageError
from gamut.io.inputs import READ_ERRORS, STDIN, open_input, read_input_bytes, reason, text_lines
from gamut.io.outputs import COMPRESSIONS

__all__ = ["FastaRecord", "is_inline_sequence", "named_records", "open_input", "read_fasta", "read_fasta_stream", "read_input_bytes", "records_or_sequence",
           "sequence_file_format", "text_lines", "uncompressed_name"]


class FastaRecord(NamedTuple):
    """One FASTA record: ``name`` is the id (up to the first whitespace), ``description`` the rest."""

    name: str
    description: str
    sequence: str


#: Name suffixes of compressed files (the readers tell compression by content; formats go by name;
#: outputs are compressed by them).
COMPRESSION_SUFFIXES = tuple(COMPRESSIONS)


def uncompressed_name(path: str | os.PathLike) -> str:
    """A file's name in lower case without a compression suffix (``genes.GTF.gz`` -> ``genes.gtf``),
    to tell its format by its suffix."""
    name = os.fspath(path).lower()
    for suffix in COMPRESSION_SUFFIXES:
        name = name.removesuffix(suffix)
    return name


#: Name suffixes of FASTA files (a compression suffix ignored), and of FASTQ files.
FASTA_SUFFIXES = (".fa", ".fasta", ".fna", ".ffn", ".faa", ".fas")
FASTQ_SUFFIXES = (".fq", ".fastq")


def sequence_file_format(path: str | os.PathLike) -> str | None:
    """``fastq`` for a name ending in .fq or .fastq, ``fasta`` for .fa, .fasta and the like (a
    compression suffix ignored); None for other names (``-``, a pipe, ``reads.txt``): the reader
    tells the format by the content."""
    name = uncompressed_name(path)
    if name.endswith(FASTQ_SUFFIXES):
        return "fastq"
    return "fasta" if name.endswith(FASTA_SUFFIXES) else None


def _content_format(stream) -> str:
    """``fastq`` when the stream's first byte is ``@``, else ``fasta`` (looked at, not consumed)."""
    peek = getattr(stream, "peek", None)
    return "fastq" if peek is not None and peek(1)[:1] == b"@" else "fasta"


def read_fasta(path: str | os.PathLike, *, allow_empty: bool = False, unique: bool = False,
               fileformat: str | None = "fasta") -> Iterator[FastaRecord]:
    """Yield the records of a FASTA file (plain or compressed, a file, ``-`` or a pipe: see
    :func:`open_input`), or of a FASTQ file with ``fileformat="fastq"`` (qualities dropped); with
    ``fileformat=None``, FASTQ when the input starts with ``@``.

    Raises :class:`InputError` naming the file (and record) for a missing, unreadable or binary
    file, a directory, a malformed file, an empty file or a record without sequence; with
    ``unique``, also for a record name seen before (outputs keyed by name would be ambiguous).
    """
    path = os.fspath(path)
    with open_input(path) as stream:
        yield from read_fasta_stream(stream, path, allow_empty=allow_empty, unique=unique, fileformat=fileformat)


def read_fasta_stream(stream: BinaryIO, path: str, *, allow_empty: bool = False, unique: bool = False,
                      fileformat: str | None = "fasta") -> Iterator[FastaRecord]:
    """:func:`read_fasta` of an open binary ``stream`` (its messages name ``path``)."""
    count = 0
    seen: dict[str, int] = {}
    try:
        if fileformat is None:
            fileformat = _content_format(stream)
        with dnaio.open(stream, fileformat=fileformat) as reader:
            for record in reader:
                name, _, description = record.name.partition(" ")
                name = name.strip()
                if not name:
                    raise InputError(f"{path}: record {count + 1} has an empty name")
                if not record.sequence and not allow_empty:
                    raise InputError(f"{path}: record '{name}' has no sequence")
                count += 1
                if unique:
                    if name in seen:
                        raise InputError(f"{path}: duplicate record name '{name}' "
                                         f"(records {seen[name]} and {count}); names must be unique")
                    seen[name] = count
                yield FastaRecord(name, description.strip(), record.sequence)
    except (dnaio.exceptions.FileFormatError, dnaio.exceptions.UnknownFileFormat) as exc:
        raise InputError(f"{path}: not valid {fileformat.upper()} ({exc})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a {fileformat.upper()} text file (record {count + 1} has bytes that are "
                         "not ASCII: a header in another encoding, or a binary file?)") from None
    except READ_ERRORS as exc:
        raise InputError(f"{path}: cannot read ({reason(exc)})") from None
    if count == 0:
        raise InputError(f"{path}: no {fileformat.upper()} records found")


def records_or_sequence(source: str) -> list[tuple[str, str]]:
    """``(name, sequence)`` of the FASTA input ``source`` (a file, ``-`` for standard input, or a
    pipe; names unique: outputs are known by them), or ``[("sequence", source)]`` when ``source`` is
    no file and looks like a sequence (no dot, no path separator)."""
    if not is_inline_sequence(source):
        return [(rec.name, rec.sequence) for rec in read_fasta(source, unique=True)]
    return [("sequence", source)]


def is_inline_sequence(source: str) -> bool:
    """Whether an INPUT argument is a sequence typed on the command line rather than a file: no
    file of that name, no dot, no path separator, not ``-``."""
    return not (source == STDIN or os.path.exists(source) or "." in source or os.sep in source or not source)


def named_records(items: Iterable[str | tuple[str, str]]) -> list[tuple[str, str]]:
    """``(name, sequence)`` pairs of an API's list: sequences alone are named ``sequence_1``, ``sequence_2``, ..."""
    records = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            records.append((f"sequence_{index + 1}", item))
        elif isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, str) for x in item):
            records.append(item)
        else:
            raise UsageError(f"item {index + 1}: expected a sequence or a (name, sequence) pair, got {item!r}")
    return records
