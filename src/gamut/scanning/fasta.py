"""FASTA reading exactly as miRanda 3.3a does it (miranda-model §2).

A hand-written parser is needed here (rather than dnaio) because miRanda's rules differ from
general FASTA: the id ends at the first space/tab/CR/LF, the description keeps a trailing CR,
a '>' anywhere in a sequence starts a new record, letters are checked against miRanda's alphabet,
and case is kept. Compressed files (gzip, bzip2, xz, zstd) are read transparently, and so are
standard input (``-``) and pipes (:func:`gamut.io.inputs.open_input`).

The parser is one compiled pass over the file's bytes (:mod:`gamut.scanning.fasta_scan`, imported
at the first parse), in the array they were read into (a transcriptome of 124 MB in about 0.1 s on
one core; a large file is cut at record starts into a piece per core, each passed on a thread of
its own, then the pieces moved together): it finds the records, moves their letters end to end to
the front of that array, writes their class codes beside them (:class:`Letters`) and checks the
alphabet on the way. A record's ``sequence`` bytes are made from there when first asked for, and
:func:`sequence_set_of` hands the letters and codes to the alignment engines as they are: nothing
is joined or encoded again.

Ids and descriptions are kept as the bytes of the file: they are decoded as UTF-8 with
``surrogateescape`` (:func:`gamut.io.textout.header_text`), so that a byte that is not UTF-8 (0xE9
of a Latin-1 file) survives as a lone surrogate and the text outputs write it back unchanged, as
miRanda copies them.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import FrozenInstanceError, dataclass

import numpy as np

from gamut.errors import InputError
from gamut.io.inputs import FileSource, read_input_file
from gamut.io.memory import gc_paused
from gamut.io.textout import header_text, shown
from gamut.scanning.alphabet import encode
from gamut.scanning.sequences import SequenceSet
from gamut.timeline import span


def is_utf8(text: str) -> bool:
    """Whether the header text came from UTF-8 bytes (holds no byte kept as a lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True, eq=False)
class Letters:
    """The letters of a file's records end to end (whitespace dropped, case kept; read-only uint8)
    and their class codes (:data:`gamut.scanning.alphabet.CLASS_OF`; read-only int8); for a plain
    file (``source``), where each record begins in the letters (``bounds``) and in the file
    (``starts``: its '>'), n + 1 offsets each (the last ones: the ends)."""

    letters: np.ndarray
    codes: np.ndarray
    source: FileSource | None = None
    bounds: np.ndarray | None = None
    starts: np.ndarray | None = None


class SeqRecord:
    """A miRanda sequence record: ``id``, ``description`` and ``sequence`` (the raw bytes, case kept).

    Immutable. A record read by :func:`parse_miranda_fasta` holds its place in its file's
    :class:`Letters` instead of bytes of its own: its ``sequence`` is made when first asked for, and
    :func:`sequence_set_of` takes the letters from there uncopied. Records compare, hash and pickle
    by id, description and sequence, however they were made."""

    __slots__ = ("id", "description", "_sequence", "_letters", "_start", "_stop")
    id: str
    description: str

    def __init__(self, id: str, description: str, sequence: bytes) -> None:
        for name, value in (("id", id), ("description", description), ("_sequence", sequence), ("_letters", None)):
            object.__setattr__(self, name, value)

    @property
    def sequence(self) -> bytes:
        try:
            return self._sequence
        except AttributeError:  # a parsed record whose bytes are not made yet
            object.__setattr__(self, "_sequence", self._made())
            return self._sequence

    def _made(self) -> bytes:
        """The sequence's bytes, made anew (not kept) where the record was parsed."""
        return self._letters.letters[self._start:self._stop].tobytes() if self._letters is not None else self._sequence

    def __len__(self) -> int:
        return len(self._sequence) if self._letters is None else self._stop - self._start

    def _key(self) -> tuple[str, str, bytes]:
        return self.id, self.description, self.sequence

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if isinstance(other, SeqRecord) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"SeqRecord(id={self.id!r}, description={self.description!r}, sequence={self.sequence!r})"

    def __reduce__(self):  # the bytes alone travel, and a parsed record does not keep them
        return SeqRecord, (self.id, self.description, self._made())

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field '{name}'")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field '{name}'")


def _parsed_records(ids: list[str], descriptions: list[str], held: Letters, bounds: list[int]) -> list[SeqRecord]:
    """Records ``k`` of ``held``'s letters ``bounds[k]..bounds[k + 1]``, their bytes not made. The
    slots are set through their descriptors: the fastest way Python has to make 61,500 of them."""
    setters = [SeqRecord.__dict__[name].__set__ for name in ("id", "description", "_letters", "_start", "_stop")]
    set_id, set_description, set_letters, set_start, set_stop = setters
    new = object.__new__
    records = []
    for ident, description, start, stop in zip(ids, descriptions, bounds, bounds[1:]):
        record = new(SeqRecord)
        set_id(record, ident)
        set_description(record, description)
        set_letters(record, held)
        set_start(record, start)
        set_stop(record, stop)
        records.append(record)
    return records


def _read_bytes(path: str | os.PathLike) -> tuple[np.ndarray, FileSource | None]:
    """The file's bytes (writable uint8), decompressed when it is gzip, bzip2, xz or zstd (told by
    its content), and, for a plain file, what it was as they were read (by its absolute path: a
    worker process may run in another folder)."""
    try:
        return read_input_file(path)
    except InputError as exc:  # miRanda's wording for a file it cannot open
        raise InputError(f"cannot open file {exc}") from None


def parse_miranda_fasta(data: bytes, name: str = "<input>") -> list[SeqRecord]:
    """Parse FASTA bytes with miRanda's rules; errors name the file and the record."""
    return _parse_in_place(np.frombuffer(data, np.uint8).copy(), name)


def _parse_in_place(data: np.ndarray, name: str, source: FileSource | None = None) -> list[SeqRecord]:
    """:func:`parse_miranda_fasta` of a file's bytes in a writable uint8 array, which becomes the
    records' letters (the bytes are not kept); ``source``: the plain file they are, whose record
    starts the letters then keep."""
    from gamut.scanning.fasta_scan import DONE, parse_error, scan_file

    codes = np.empty(data.shape[0], np.int8)
    ended, count, bounds, starts, headers, byte = scan_file(data, codes)
    # Header texts decoded at once: UTF-8 decoding never reads across an ASCII byte (the LFs), so
    # each text is what decoding it alone gives.
    texts = header_text(headers.tobytes()).split("\n")
    if ended != DONE:
        raise parse_error(ended, name, count, texts, int(byte))
    total = int(bounds[-1])
    letters, codes = data[:total], codes[:total]
    letters.flags.writeable = codes.flags.writeable = False
    held = (Letters(letters, codes) if source is None
            else Letters(letters, codes, source, bounds.copy(), starts.copy()))
    with gc_paused():  # 61,500 records: a collection of a large process's objects meanwhile took 0.1 s
        return _parsed_records(texts[0:-1:2], texts[1::2], held, bounds.tolist())


def sequence_set_of(records: Sequence[SeqRecord], trim: int = 0) -> SequenceSet:
    """The records' letters and class codes as one :class:`SequenceSet`, each cut to its first
    ``trim`` letters when ``trim`` > 0 (-trim). Records read together from one file, in the file's
    order (all of them, or a run of them), are the buffer of :func:`parse_miranda_fasta` as it is;
    others are joined and encoded."""
    ids = [record.id for record in records]
    shared = _shared_letters(records)
    if shared is None:
        sequences = [record.sequence[:trim] if trim > 0 else record.sequence for record in records]
        return SequenceSet.build(ids, sequences, encode=encode)
    held, bounds = shared
    if trim > 0 and int(np.diff(bounds).max()) > trim:
        kept = [(start, min(stop, start + trim)) for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
        letters = np.concatenate([held.letters[a:b] for a, b in kept])
        codes = np.concatenate([held.codes[a:b] for a, b in kept])
        offsets = np.zeros(len(kept) + 1, np.int64)
        np.cumsum([b - a for a, b in kept], out=offsets[1:])
        return SequenceSet(ids, letters, codes, offsets, True)
    start, stop = int(bounds[0]), int(bounds[-1])
    return SequenceSet(ids, held.letters[start:stop], held.codes[start:stop], bounds - start, True)


def _shared_letters(records: Sequence[SeqRecord]) -> tuple[Letters, np.ndarray] | None:
    """The one :class:`Letters` that ``records`` lie in, one after the other, and their bounds there
    (n + 1, int64); None when they do not (made otherwise, from two files, or out of order)."""
    if not records or records[0]._letters is None:
        return None
    held = records[0]._letters
    bounds = [records[0]._start]
    for record in records:
        if record._letters is not held or record._start != bounds[-1]:
            return None
        bounds.append(record._stop)
    return held, np.array(bounds, np.int64)


def read_miranda_fasta(path: str | os.PathLike) -> list[SeqRecord]:
    """Read every record of a (optionally compressed) FASTA file, ``-`` or a pipe; an empty file is an
    error. Records with the same id are scanned each, as miRanda does: a one-line warning names the
    first such id."""
    shown_path = os.fspath(path)
    data, source = _read_bytes(path)
    records = _parse_in_place(data, shown_path, source)
    if not records:
        raise InputError(f"{shown_path}: no FASTA records found")
    warn_duplicate_ids(records, shown_path)
    return records


class _FileRecordsBase(Sequence):
    """Records of a file read when first used (by :meth:`_read`, once); a copy of it (pickled, for
    a worker) travels without them and reads them itself."""

    _records: list[SeqRecord] | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_records": None}

    @property
    def is_read(self) -> bool:
        return self._records is not None

    def __getitem__(self, index):
        return self.records()[index]

    def __iter__(self):
        return iter(self.records())

    def records(self) -> list[SeqRecord]:
        """The records, read from the file (once)."""
        if self._records is None:
            self._records = self._read()
        return self._records

    def _read(self) -> list[SeqRecord]:
        raise NotImplementedError


class RecordRange(_FileRecordsBase):
    """Records ``first..first+count-1`` of a plain FASTA file (``source``), bytes ``start..stop-1``
    of it, holding ``letters`` letters: a list of :class:`SeqRecord` that is read from the file
    when first used (what travels to a worker process on this machine is where the records lie,
    not their bytes: a stripe of 31 MB pickled in 0.1 s of the main process' interpreter lock).
    The file must be as it was: one that changed is an :class:`InputError`."""

    def __init__(self, source: FileSource, first: int, count: int, start: int, stop: int, letters: int) -> None:
        self.source, self.first, self.count = source, first, count
        self.start, self.stop, self.letters = start, stop, letters
        self._records: list[SeqRecord] | None = None

    @classmethod
    def of(cls, records: Sequence[SeqRecord]) -> RecordRange | None:
        """``records`` as a range of their file, when they are consecutive records parsed from a plain file."""
        shared = _shared_letters(records)
        if shared is None or shared[0].source is None:
            return None
        held, bounds = shared
        # Every record holds a letter, so the letter bounds strictly increase: this finds the first.
        first = int(np.searchsorted(held.bounds, bounds[0]))
        return cls(held.source, first, len(records), int(held.starts[first]), int(held.starts[first + len(records)]),
                   int(bounds[-1] - bounds[0]))

    def __len__(self) -> int:
        return self.count

    def _read(self) -> list[SeqRecord]:
        src = self.source
        changed = InputError(f"{src.path}: not the file the scan read (it changed since, or this worker sees another "
                             "file there); run the scan again")
        try:
            with open(src.path, "rb") as handle:
                if FileSource.of(src.path, os.fstat(handle.fileno())) != src:
                    raise changed
                data = np.empty(self.stop - self.start, np.uint8)
                view, filled = memoryview(data), 0
                while filled < data.shape[0]:
                    got = os.preadv(handle.fileno(), [view[filled:]], self.start + filled)
                    if not got:
                        raise changed
                    filled += got
                if FileSource.of(src.path, os.fstat(handle.fileno())) != src:  # (written to while it was read)
                    raise changed
        except OSError as exc:
            raise InputError(f"{src.path}: cannot read ({exc.strerror or exc})") from None
        try:
            records = _parse_in_place(data, src.path)
        except InputError:  # (the whole file parsed when the scan began)
            raise changed from None
        if len(records) != self.count or sum(len(r) for r in records) != self.letters:
            raise changed
        return records


class FileRecords(_FileRecordsBase):
    """Every record of a plain FASTA file (:meth:`FileSource.plain`), read when first used
    (:func:`read_miranda_fasta`), from the file as it was when this was made: a scan's workers on
    this machine, given this, read the file themselves while the process that sent it reads it too
    (the head start of :mod:`gamut.scanning.pipeline.striped`: its references, and its queries when
    they are a plain file too). A file that changed since is an :class:`InputError`, so every reader
    of it reads the same bytes."""

    def __init__(self, source: FileSource) -> None:
        self.source = source
        self._records: list[SeqRecord] | None = None

    @classmethod
    def of(cls, path: str | os.PathLike) -> FileRecords | None:
        """The records of ``path``, unread, when it is a plain file; else None."""
        source = FileSource.plain(path)
        return None if source is None else cls(source)

    def __len__(self) -> int:
        return len(self.records())

    def _read(self) -> list[SeqRecord]:
        with span("read FASTA file", path=self.source.path):
            records = read_miranda_fasta(self.source.path)
        if records[0]._letters.source != self.source:
            raise InputError(f"{self.source.path}: changed while the scan began (written to, or replaced); "
                             "run the scan again")
        return records


def warn_duplicate_ids(records: list[SeqRecord], name: str) -> None:
    """A one-line warning naming the first id that two records of ``name`` share (and both record
    numbers): miRanda scans both, and every output shows them under the one name."""
    if len({record.id for record in records}) == len(records):
        return
    seen: dict[str, int] = {}
    for number, record in enumerate(records, 1):
        first = seen.setdefault(record.id, number)
        if first != number:
            warnings.warn(f"{name}: duplicate record name '{shown(record.id)}' (records {first} and {number}); "
                          "both are scanned, as miRanda does, and the outputs name both alike", stacklevel=2)
            return
