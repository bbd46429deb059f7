"""Opening input files, each once: regular files, standard input (``-``), pipes and FIFOs
(``/dev/stdin``, ``<(...)``, ``mkfifo``), plain or compressed (gzip, bzip2, xz, zstd: told by the
content, so that a name does not have to say it, as miRanda's gzip handling allows).

A pipe can be read once: its compression is told from the first bytes of the one stream that is
then read to the end (the decompressor wraps that same stream), and :func:`check_read_once` refuses
a command that names one pipe (or standard input) as two of its inputs.
"""
from __future__ import annotations

import io
import lzma
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from xopen import xopen

from gamut.errors import InputError, UsageError

if TYPE_CHECKING:
    import numpy as np

#: The input name of standard input.
STDIN = "-"

#: Leading bytes of the compressed formats xopen reads.
_MAGIC = ((b"\x1f\x8b", "gz"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zst"))
_MAGIC_LENGTH = max(len(magic) for magic, _ in _MAGIC)


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


def _format_of(head: bytes) -> str | None:
    return next((fmt for magic, fmt in _MAGIC if head.startswith(magic)), None)


def _mode(path: str | os.PathLike) -> int | None:
    try:
        return None if os.fspath(path) == STDIN else os.stat(path).st_mode
    except (OSError, ValueError):
        return None


def is_regular_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a regular file (one that can be read again: not ``-``, a pipe or a device)."""
    mode = _mode(path)
    return mode is not None and stat.S_ISREG(mode)


def is_stream(path: str | os.PathLike) -> bool:
    """Whether input ``path`` can be read once only: ``-`` (standard input), or an existing pipe,
    FIFO (``/dev/stdin``, ``<(...)``, ``mkfifo``) or device."""
    if os.fspath(path) == STDIN:
        return True
    mode = _mode(path)
    return mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def open_input(path: str | os.PathLike) -> BinaryIO:
    """Open input ``path`` for reading bytes, decompressing gzip, bzip2, xz or zstd (told by the
    content). ``-`` is standard input (left open when the stream is closed). A pipe, a FIFO or a
    device is opened once and read as a stream; a regular file is opened by name. A missing file,
    a directory or an unreadable file is an :class:`InputError` naming it, so that no reader shows a
    traceback for them."""
    path = os.fspath(path)
    if path == STDIN:
        return _open_stream(path, _standard_input(), keep_open=True)
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a file")
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file" + (" (a dangling symbolic link)" if os.path.islink(path) else ""))
    try:
        if is_stream(path):
            return _open_stream(path, open(path, "rb", buffering=0), keep_open=False)
        with open(path, "rb") as handle:  # a regular file can be read twice: its head, then the whole
            fmt = _format_of(handle.read(_MAGIC_LENGTH))
        # threads=0: decompress in this process, so that a damaged file fails here, not in a pipe
        return xopen(path, "rb", threads=0, format=fmt) if fmt else open(path, "rb")
    except READ_ERRORS as exc:
        raise InputError(f"{path}: cannot read ({reason(exc)})") from None


def _standard_input() -> BinaryIO:
    """The binary stream of standard input (a served command's is its client's)."""
    stream = getattr(sys.stdin, "buffer", sys.stdin)
    if stream is None or getattr(stream, "closed", True):
        raise InputError("-: standard input is closed")
    return stream


def _open_stream(name: str, stream: BinaryIO, keep_open: bool) -> BinaryIO:
    """``stream`` read once: its first bytes tell the compression, then the same bytes and the rest
    are read (decompressed) through the returned stream, which closes ``stream`` unless ``keep_open``."""
    try:
        head = b""
        while len(head) < _MAGIC_LENGTH:  # a pipe may give fewer bytes than asked, before its end
            more = stream.read(_MAGIC_LENGTH - len(head))
            if not more:
                break
            head += more
        plain = io.BufferedReader(_Prefixed(head, stream, keep_open), 1 << 16)
        fmt = _format_of(head)
        if fmt is None:
            return plain
        return _Decompressed(xopen(plain, "rb", threads=0, format=fmt), plain)
    except READ_ERRORS as exc:
        if not keep_open:
            stream.close()
        raise InputError(f"{name}: cannot read ({reason(exc)})") from None


class _Prefixed(io.RawIOBase):
    """A stream read once: ``head`` (its first bytes, already read) and then the rest of ``stream``.
    Closing it closes ``stream`` unless ``keep_open`` (standard input)."""

    def __init__(self, head: bytes, stream: BinaryIO, keep_open: bool) -> None:
        super().__init__()
        self._head = head
        self._stream = stream
        self._keep_open = keep_open
        # one read of the stream at most per call: data is handed on as it comes
        self._read_into = getattr(stream, "readinto1", None) or stream.readinto

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            memoryview(buffer).cast("B")[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._read_into(buffer)

    def readall(self) -> bytes:
        head, self._head = self._head, b""
        return head + self._stream.read()

    def close(self) -> None:
        if not self.closed and not self._keep_open:
            self._stream.close()
        super().close()


class _Decompressed(io.BufferedReader):
    """The decompressed bytes of ``plain`` (a decompressor given a stream leaves it open: closing
    this closes both)."""

    def __init__(self, decompressor: BinaryIO, plain: BinaryIO) -> None:
        super().__init__(decompressor, 1 << 16)
        self._plain = plain

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._plain.close()


def reason(exc: BaseException) -> str:
    """The words of a read error, for a one-line message."""
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or type(exc).__name__


def check_read_once(paths: Iterable[str | os.PathLike | None]) -> None:
    """A one-line :class:`UsageError` when two of a command's inputs are one stream that can be read
    once: standard input (``-``) twice, or one pipe, FIFO or device by two names (``-`` and
    ``/dev/stdin`` on a pipe). Regular files may be named twice (each is opened by name)."""
    seen: dict[object, str] = {}
    for item in paths:
        if item is None:
            continue
        path = os.fspath(item)
        keys = []
        if path == STDIN:
            keys.append(STDIN)
            try:
                st = os.fstat(sys.stdin.fileno())
            except (AttributeError, OSError, ValueError):  # no standard input, or not a real file
                st = None
        else:
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                st = None  # missing: the reader says so
        if st is not None and not stat.S_ISREG(st.st_mode):
            keys.append((st.st_dev, st.st_ino))
        for key in keys:
            if key in seen:
                if key == STDIN:
                    raise UsageError("two inputs read standard input (-), which can be read once: give every "
                                     "input but one as a file")
                raise UsageError(f"{seen[key]} and {path} are the same pipe, which can be read once: give "
                                 "every input but one as a file")
        seen.update(dict.fromkeys(keys, path))


def text_lines(path: str | os.PathLike, errors: str = "replace") -> Iterator[tuple[int, str]]:
    """``(number, line)`` of text input ``path`` (see :func:`open_input`), line ends removed,
    bytes that are not UTF-8 decoded by ``errors`` (replaced by default); a failed read is an
    :class:`InputError` naming the file."""
    with open_input(path) as raw:
        try:
            with io.TextIOWrapper(raw, encoding="utf-8", errors=errors) as handle:
                for number, line in enumerate(handle, 1):
                    yield number, line.rstrip("\r\n")
        except READ_ERRORS as exc:
            raise InputError(f"{os.fspath(path)}: cannot read ({reason(exc)})") from None


def read_input_bytes(path: str | os.PathLike) -> bytes:
    """All bytes of input ``path``, decompressed (see :func:`open_input`)."""
    with open_input(path) as handle:
        try:
            return handle.read()
        except READ_ERRORS as exc:
            raise InputError(f"{os.fspath(path)}: cannot read ({reason(exc)})") from None


def read_input_array(path: str | os.PathLike) -> np.ndarray:
    """All bytes of input ``path``, decompressed (see :func:`open_input`), as a writable uint8 array
    (for a parser that works in place): :func:`read_input_file`'s array."""
    return read_input_file(path)[0]


def read_input_file(path: str | os.PathLike) -> tuple[np.ndarray, FileSource | None]:
    """All bytes of input ``path``, decompressed (see :func:`open_input`), as a writable uint8 array
    (for a parser that works in place), and, for a regular uncompressed file, what it was while it
    was read (by its absolute path; None for a compressed file, a stream, or a file written to
    meanwhile: the array is then what was read, but not the file as it is). Such a file is read
    straight into the array: no bytes object between, and NumPy's large arrays take huge pages,
    which are faster to fill."""
    import numpy as np  # here: the command line starts without NumPy

    with open_input(path) as handle:
        try:
            raw = getattr(handle, "raw", None)
            if not isinstance(raw, io.FileIO):  # compressed, or a stream
                return np.frombuffer(handle.read(), np.uint8).copy(), None
            where = os.path.abspath(path)
            before = FileSource.of(where, os.fstat(raw.fileno()))
            array = np.empty(before.size + 1, np.uint8)  # a byte more: the end is the read that returns none
            view = memoryview(array)
            filled = 0
            while filled < array.shape[0] and (got := handle.readinto(view[filled:])):
                filled += got
            if filled == array.shape[0]:  # the file grew while it was read
                return np.concatenate([array, np.frombuffer(handle.read(), np.uint8)]), None
            unchanged = filled == before.size and FileSource.of(where, os.fstat(raw.fileno())) == before
            return array[:filled], before if unchanged else None
        except READ_ERRORS as exc:
            raise InputError(f"{os.fspath(path)}: cannot read ({reason(exc)})") from None


@dataclass(frozen=True)
class FileSource:
    """A regular file as it was when it was read: two are equal only for one file that nobody wrote
    to between them (a write changes its ctime, and no one can set that back)."""

    path: str
    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, path: str, st: os.stat_result) -> FileSource:
        return cls(path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    @classmethod
    def plain(cls, path: str | os.PathLike) -> FileSource | None:
        """Input ``path`` as it is now, when it is a regular file that is not compressed (what
        :func:`read_input_file` reads straight, and names in its result); else None."""
        name = os.fspath(path)
        if name == STDIN or not is_regular_file(name):
            return None
        try:
            with open(name, "rb") as handle:
                if _format_of(handle.read(_MAGIC_LENGTH)) is not None:
                    return None
                return cls.of(os.path.abspath(name), os.fstat(handle.fileno()))
        except OSError:
            return None
