"""Rendered text written to an output handle as bytes, without decoding and re-encoding.

Rendered text is UTF-8, except for the bytes of input headers that are not UTF-8: those are kept
as they were (miRanda copies a header's bytes), carried in Python text as lone surrogates
(:func:`header_text`) and turned back into the same bytes by :func:`raw_text`."""
from __future__ import annotations

import io
import os
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from typing import IO, Callable, Union

import numpy as np

from gamut.timeline import span

Rendered = Union[bytes, bytearray, memoryview, np.ndarray]


def header_text(data: bytes) -> str:
    """Input header bytes (an id, a description) as text that :func:`raw_text` gives back unchanged."""
    return data.decode("utf-8", "surrogateescape")


def raw_text(text: str) -> bytes:
    """The bytes of text for a text output: its UTF-8, and the original bytes of a header's bytes
    that were not UTF-8 (:func:`header_text`)."""
    return text.encode("utf-8", "surrogateescape")


def shown(text: str) -> str:
    """Header text for a message: bytes that are not UTF-8 written as ``\\xNN``."""
    return raw_text(text).decode("utf-8", "backslashreplace")


@lru_cache(maxsize=None)
def _ascii_compatible(encoding: str) -> bool:
    """Whether ``encoding`` writes every ASCII character as that one byte."""
    sample = bytes(range(128))
    try:
        return sample.decode("ascii").encode(encoding) == sample
    except (LookupError, UnicodeError):
        return False


def write_bytes(out: IO, data: Rendered) -> None:
    """Write rendered text given as bytes (or a uint8 array) to ``out``: the bytes themselves.

    A binary handle gets the bytes. A text file (:class:`io.TextIOWrapper`, as from
    :func:`gamut.io.atomic_output` or standard output) gets them on its binary buffer, after
    flushing its text layer, when its encoding writes ASCII as ASCII and it does not translate
    newlines (whatever its encoding, a header's bytes go out as they came in). Anything else (a
    :class:`io.StringIO`) gets the text of the bytes (:func:`header_text`) through ``out.write``.
    """
    if isinstance(out, (io.RawIOBase, io.BufferedIOBase)):
        out.write(data)
        return
    raw = getattr(out, "buffer", None)
    if raw is not None and isinstance(out, io.TextIOWrapper) and os.linesep == "\n" and _ascii_compatible(out.encoding):
        out.flush()
        raw.write(data)
        return
    out.write(header_text(bytes(data)))


class WriteBehind:
    """Renders and writes text to ``out`` on a thread of its own while the caller builds the next
    piece: one piece in flight at most (memory: the piece being written and the one being built),
    in order, its error raised by the next :meth:`write` or by :meth:`finish`.

    A piece is a callable giving the bytes, such as a :class:`~gamut.io.textcols.TextBuilder`'s
    ``render_array``: its compiled copy and the ``write`` into the page cache (about 1 GB/s on the
    H100 host: 0.4 s of the utr scan's 1.27 GB) release the GIL, so both overlap the next piece's
    building.
    """

    def __init__(self, out: IO) -> None:
        self.out = out
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="gamut-write")
        self._pending: Future | None = None

    def write(self, render: Callable[[], Rendered]) -> None:
        self._wait()
        self._pending = self._thread.submit(self._render_write, render)

    def _render_write(self, render: Callable[[], Rendered]) -> None:
        with span("chunk rendered"):
            data = render()
        with span("chunk written"):
            write_bytes(self.out, data)

    def write_parts(self, parts: list[Rendered]) -> None:
        """Write ``parts`` one after the other (e.g. views of rows received from workers), behind."""
        self._wait()

        def write_all() -> None:
            for part in parts:
                write_bytes(self.out, part)

        self._pending = self._thread.submit(write_all)

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def finish(self) -> None:
        """Wait for the last piece (raising its error) and end the thread; ``out`` is then free."""
        try:
            self._wait()
        finally:
            self._thread.shutdown(wait=True)
