"""The sink protocol: how every runner hands a scan's chunks to an output format.

A runner builds the sink of each output from what the job says of it (``SinkClass(spec)``, ``spec``
an :class:`~gamut.scanning.sinks.spec.OutputSpec`: :meth:`ScanJob.for_output
<gamut.scanning.pipeline.job.ScanJob.for_output>`), then either

- in one process: ``start(out)`` (``out``: the output opened in ``mode``, or None when ``mode``
  is None), ``write(result, spare_cores)`` for every chunk in order, ``close()``; or
- in partitions: each worker (its own sink of the same class) turns a partition's chunks into
  its data with ``render(chunks, prev_query)``; the client's sink gets ``start(out)``,
  ``write_part(part, data)`` for every partition in order, and ``close()``; or
- in stripes (:mod:`gamut.scanning.pipeline.stripes`): each worker turns a tile's chunks (whose
  results carry their :class:`~gamut.scanning.results.RectLayout`) into its data with
  ``render_tile(chunks)``; the client's sink gets ``start(out)``, ``write_rows(tiles, stop)`` for
  every group of queries in order (``tiles``: the group's tile from each stripe, in stripe order;
  ``stop``: the output-order number after the group), and ``close()``.

All give the same bytes. ``spare_cores`` (a bool, or a callable asked before each kernel) says
whether formatting may take every core now; see :func:`gamut.io.threads.run_kernel`.
"""
from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import IO, TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from gamut.io.memfd_array import joined
from gamut.io.textcols import TextBuilder
from gamut.io.textout import WriteBehind, raw_text, write_bytes
from gamut.io.threads import Parallel
from gamut.timeline import span

if TYPE_CHECKING:
    from gamut.scanning.pipeline.pairs import Partition
    from gamut.scanning.results import ChunkResult
    from gamut.scanning.sinks.spec import OutputSpec

Chunks = Iterable[tuple["ChunkResult", Parallel]]


class Sink(Protocol):
    """An output format (see the module's docstring for the order of the calls)."""

    #: How the output is opened: ``"w"`` (text), ``"wb"`` (binary), or None (no file: the API's table).
    mode: ClassVar[str | None]
    #: The sink holds a file writer of its own (Parquet's), closed quietly when a run fails
    #: (:func:`~gamut.scanning.pipeline.partitions.abandon_on_failure`); its format's
    #: ``needs_file`` (:class:`~gamut.scanning.sinks.Format`).
    needs_file: ClassVar[bool]
    #: ``write_part`` regroups partitions by the single-process chunks: the partitioned runner sets
    #: ``chunk_stops`` (the pair number after each chunk of a single process) before ``start``.
    regroups: ClassVar[bool]

    def __init__(self, spec: OutputSpec) -> None: ...
    def start(self, out: IO | None) -> None: ...
    def write(self, result: ChunkResult, spare_cores: Parallel) -> None: ...
    def render(self, chunks: Chunks, prev_query: int) -> Any: ...
    def write_part(self, part: Partition, data: Any) -> None: ...
    def render_tile(self, chunks: Chunks) -> Any: ...
    def write_rows(self, tiles: Sequence[Any], stop: int) -> None: ...
    def close(self) -> None: ...


class TextSink:
    """A text format built a chunk at a time by :meth:`build`: a partition's data is the bytes its
    chunks would write, so ``write_part`` copies them. Subclasses give :meth:`build` and, if
    they have any, :meth:`header` and :meth:`footer`."""

    mode: ClassVar[str | None] = "w"
    needs_file: ClassVar[bool] = False
    regroups: ClassVar[bool] = False

    def __init__(self, spec: OutputSpec) -> None:
        self.spec = spec
        self.input = spec.scan_input
        self.out: IO | None = None
        self._writes: WriteBehind | None = None

    def header(self) -> str:
        return ""

    def footer(self) -> str:
        return ""

    def build(self, result: ChunkResult, spare_cores: Parallel) -> TextBuilder:
        """The chunk's text as records of a :class:`~gamut.io.textcols.TextBuilder`."""
        raise NotImplementedError

    def start(self, out: IO | None) -> None:
        self.out = out
        text = self.header()
        if text:  # as bytes, like the records: a file name's bytes go out as given
            write_bytes(out, raw_text(text))
        self._writes = WriteBehind(out)  # a chunk is rendered and written while the next one is built

    def write(self, result: ChunkResult, spare_cores: Parallel) -> None:
        with span("chunk built"):
            builder = self.build(result, spare_cores)
        self._writes.write(builder.render_array)

    def render(self, chunks: Chunks, prev_query: int) -> bytes:
        """A partition's text as bytes; ``prev_query`` is the query of the pair before it.
        As :meth:`write` does, a chunk is rendered on a thread of its own while the next is built."""
        collected = _Pieces()
        writes = WriteBehind(collected)
        try:
            for result, spare in chunks:
                writes.write(self.build(result, spare).render_array)
        finally:
            writes.finish()
        return b"".join(collected.pieces)

    def write_part(self, part: Partition, data: bytes) -> None:
        self._writes.write(lambda: data)

    def render_tile(self, chunks: Chunks) -> tuple[np.ndarray, np.ndarray]:
        """A tile's text (uint8, in a memfd's pages where the system has them: a worker hands it over
        without a copy) and where each of its rows (a query against the stripe) begins, with the
        end last: row k is ``text[offsets[k]:offsets[k+1]]``. A chunk is rendered on a thread of
        its own while the next is built."""
        pieces: list[np.ndarray] = []
        starts: list[np.ndarray] = []
        with ThreadPoolExecutor(1, thread_name_prefix="gamut-render") as renderer:
            pending = None
            for result, spare in chunks:
                with span("chunk built"):
                    builder = self.build(result, spare)
                if pending is not None:
                    _collect(pending.result(), pieces, starts)
                pending = renderer.submit(builder.render_cut, result.layout.row_starts)
            if pending is not None:
                _collect(pending.result(), pieces, starts)
        size = sum(p.shape[0] for p in pieces)
        with span("tile joined"):
            text = joined(pieces)
        return text, np.concatenate([*starts, np.array([size], np.int64)])

    def write_rows(self, tiles: Sequence[tuple[Any, np.ndarray]], stop: int) -> None:
        views = [memoryview(text) for text, _ in tiles]
        rows = {len(offsets) for _, offsets in tiles}
        if len(rows) != 1:
            raise ValueError(f"tiles of one group with {sorted(rows)} row offsets")
        parts = [view[int(offsets[k]):int(offsets[k + 1])]
                 for k in range(rows.pop() - 1) for view, (_, offsets) in zip(views, tiles)]
        self._writes.write_parts([p for p in parts if len(p)])

    def close(self) -> None:
        self._writes.finish()
        text = self.footer()
        if text:
            write_bytes(self.out, raw_text(text))


def _collect(rendered: tuple[np.ndarray, np.ndarray], pieces: list, starts: list) -> None:
    """Append a chunk's text and its rows' offsets (moved past the text before it)."""
    text, at = rendered
    starts.append(at + sum(p.shape[0] for p in pieces))
    pieces.append(text)


class _Pieces(io.RawIOBase):
    """A binary output that keeps what is written to it, piece by piece (each chunk's rendered
    array, made for this write and never changed after it: kept, not copied), joined once at the
    end: a growing :class:`io.BytesIO` copies its contents again at each of its many resizes (a
    partition is 100-200 MB)."""

    def __init__(self) -> None:
        super().__init__()
        self.pieces: list = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.pieces.append(data)
        return len(data)

