"""Rendered text (latin-1 bytes) written to an output handle without decoding and re-encoding."""
from __future__ import annotations

import io
import os
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from typing import IO, Callable, Union

import numpy as np

Rendered = Union[bytes, bytearray, memoryview, np.ndarray]


@lru_cache(maxsize=None)
def _ascii_compatible(encoding: str) -> bool:
    """Whether ``encoding`` writes every ASCII character as that one byte."""
    sample = bytes(range(128))
    try:
        return sample.decode("ascii").encode(encoding) == sample
    except (LookupError, UnicodeError):
        return False


def _is_ascii(data: Rendered) -> bool:
    if isinstance(data, (bytes, bytearray)):
        return data.isascii()
    values = data if isinstance(data, np.ndarray) else np.frombuffer(data, np.uint8)
    return values.size == 0 or int(values.max()) < 128


def write_bytes(out: IO, data: Rendered) -> None:
    """Write latin-1 text given as bytes (or a uint8 array) to ``out``, the same bytes that
    ``out.write(data.decode("latin-1"))`` gives a text handle.

    A binary handle gets the bytes. A text file (:class:`io.TextIOWrapper`, as from
    :func:`gamut.io.atomic_output` or standard output) gets them on its binary buffer, after
    flushing its text layer, when that changes nothing: ASCII data, an ASCII-compatible encoding
    and no newline translation. Anything else goes through ``out.write`` as text.
    """
    if isinstance(out, (io.RawIOBase, io.BufferedIOBase)):
        out.write(data)
        return
    raw = getattr(out, "buffer", None)
    if (raw is not None and isinstance(out, io.TextIOWrapper) and os.linesep == "\n"
            and _ascii_compatible(out.encoding) and _is_ascii(data)):
        out.flush()
        raw.write(data)
        return
    out.write(bytes(data).decode("latin-1"))


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
        self._pending = self._thread.submit(lambda: write_bytes(self.out, render()))

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
