"""General FASTA reading (plain or compressed) for folding and spliced alignment, and the opening
of input files that every reader shares.

miRanda-exact parsing, with its own id/description/letter rules, lives in
:mod:`gamut.scanning.fasta`; this reader is the everyday one, built on dnaio.
"""
from __future__ import annotations

import io
import lzma
import os
import sys
from typing import BinaryIO, Iterable, Iterator, NamedTuple

import dnaio
from xopen import xopen

from gamut.errors import InputError, UsageError
from gamut.io.outputs import COMPRESSIONS

#: Leading bytes of the compressed formats xopen reads (detected by content, so that a file's
#: name does not have to say it is compressed, as miRanda's gzip handling allows).
_MAGIC = ((b"\x1f\x8b", "gz"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zst"))


def _decompression_errors() -> tuple[type[BaseException], ...]:
    """What a damaged or truncated compressed file raises while it is read (beyond ``OSError``)."""
    errors: list[type[BaseException]] = [EOFError, lzma.LZMAError]
    try:  # the module xopen decompresses zstd with
        if sys.version_info >= (3, 14):
            from compression.zstd import ZstdError
        else:
            from backports.zstd import ZstdError
        errors.append(ZstdError)
    except ImportError:
        pass
    return tuple(errors)


#: Errors of reading an input's bytes; a reader turns them into an :class:`InputError`.
READ_ERRORS: tuple[type[BaseException], ...] = (OSError, *_decompression_errors())


def _compression(path: str) -> str | None:
    with open(path, "rb") as handle:
        head = handle.read(6)
    return next((fmt for magic, fmt in _MAGIC if head.startswith(magic)), None)


def open_input(path: str | os.PathLike) -> BinaryIO:
    """Open input file ``path`` for reading bytes, decompressing gzip, bzip2, xz or zstd (told by
    the content). A missing file, a directory or an unreadable file is an :class:`InputError`
    naming it, so that no reader shows a traceback for them."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a file")
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file" + (" (a dangling symbolic link)" if os.path.islink(path) else ""))
    try:
        fmt = _compression(path)
        # threads=0: decompress in this process, so that a damaged file fails here, not in a pipe
        return xopen(path, "rb", threads=0, format=fmt) if fmt else open(path, "rb")
    except READ_ERRORS as exc:
        raise InputError(f"{path}: cannot read ({_reason(exc)})") from None


def _reason(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or type(exc).__name__


def text_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """``(number, line)`` of text input file ``path`` (see :func:`open_input`), line ends removed,
    undecodable bytes replaced; a failed read is an :class:`InputError` naming the file."""
    with open_input(path) as raw:
        try:
            with io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, 1):
                    yield number, line.rstrip("\r\n")
        except READ_ERRORS as exc:
            raise InputError(f"{os.fspath(path)}: cannot read ({_reason(exc)})") from None


def read_input_bytes(path: str | os.PathLike) -> bytes:
    """All bytes of input file ``path``, decompressed (see :func:`open_input`)."""
    with open_input(path) as handle:
        try:
            return handle.read()
        except READ_ERRORS as exc:
            raise InputError(f"{os.fspath(path)}: cannot read ({_reason(exc)})") from None


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


def sequence_file_format(path: str | os.PathLike) -> str:
    """``fastq`` for a name ending in .fq or .fastq (a compression suffix ignored), else ``fasta``."""
    return "fastq" if uncompressed_name(path).endswith((".fq", ".fastq")) else "fasta"


def read_fasta(path: str | os.PathLike, *, allow_empty: bool = False, unique: bool = False,
               fileformat: str = "fasta") -> Iterator[FastaRecord]:
    """Yield the records of a FASTA file (gzip, bzip2, xz and zstd handled, see :func:`open_input`),
    or of a FASTQ file with ``fileformat="fastq"`` (qualities dropped).

    Raises :class:`InputError` naming the file (and record) for a missing, unreadable or binary
    file, a directory, a malformed file, an empty file or a record without sequence; with
    ``unique``, also for a record name seen before (outputs keyed by name would be ambiguous).
    """
    path = os.fspath(path)
    count = 0
    seen: dict[str, int] = {}
    with open_input(path) as stream:
        try:
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
                             "not text; a binary file?)") from None
        except READ_ERRORS as exc:
            raise InputError(f"{path}: cannot read ({_reason(exc)})") from None
    if count == 0:
        raise InputError(f"{path}: no {fileformat.upper()} records found")


def records_or_sequence(source: str) -> list[tuple[str, str]]:
    """``(name, sequence)`` of the FASTA file ``source`` (names unique: outputs are known by them), or
    ``[("sequence", source)]`` when ``source`` is no file and looks like a sequence (no dot, no path
    separator)."""
    if os.path.exists(source) or "." in source or os.sep in source or not source:
        return [(rec.name, rec.sequence) for rec in read_fasta(source, unique=True)]
    return [("sequence", source)]


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
