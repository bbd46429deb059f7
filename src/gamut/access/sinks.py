"""Output formats of ``gamut access``, by name in :data:`SINKS`: a writer gets the output handle
once (:meth:`start`), each sequence's result (:meth:`write`) and :meth:`close`.

Numbers become text in compiled code (:class:`~gamut.io.textcols.TextBuilder`: exactly Python's
``%.7g``), on every core (nothing folds while a sink writes: the folders work a batch at a time),
and Parquet columns go to pyarrow as arrays: no Python work per position or value."""
from __future__ import annotations

from typing import IO, ClassVar, Protocol

import numpy as np

from gamut.access.api import Accessibility
from gamut.access.model import energy_to_open
from gamut.io.outputs import FormatRules
from gamut.io.textcols import TextBuilder

#: Significant digits of probabilities and energies in the text formats (RNAplfold prints 7).
DIGITS = 7
#: Rows gathered before a Parquet row group is written (short records are many).
PARQUET_ROWS = 1 << 21


class AccessSink(Protocol):
    name: ClassVar[str]
    #: The output file suffixes that name this format (``--format`` not given).
    suffixes: ClassVar[tuple[str, ...]]
    #: How the output is opened (``"wb"``: every format writes bytes).
    mode: ClassVar[str]

    def start(self, out: IO) -> None: ...
    def write(self, result: Accessibility) -> None: ...
    def close(self) -> None: ...


def _text_column(b: TextBuilder, text: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """A column of ``rows`` rows of ``text`` (UTF-8: names of any letters), the text stored once."""
    raw = np.frombuffer(text.encode("utf-8"), np.uint8)
    return b.buffer(raw, np.zeros(rows, np.int64), np.full(rows, raw.shape[0], np.int64))


class TsvSink:
    """One row per sequence, position (``end``, 1-based) and stretch length ``u``: the unpaired
    probability and the opening energy (kcal/mol); undefined stretches (``end < u``) are left out."""

    name, suffixes, mode = "tsv", (".tsv",), "wb"

    def start(self, out: IO) -> None:
        self.out = out
        out.write(b"name\tend\tu\tunpaired\topening_energy\n")

    def write(self, result: Accessibility) -> None:
        end, u, prob = result.cells()
        if not prob.size:
            return
        b = TextBuilder(parallel=True)
        b.records(np.arange(prob.shape[0]), 0, 0, [
            _text_column(b, result.name, prob.shape[0]), "\t", b.integers(end), "\t", b.integers(u), "\t",
            b.general(prob, DIGITS), "\t", b.general(energy_to_open(prob), DIGITS), "\n"])
        self.out.write(b.render_array())

    def close(self) -> None:
        pass


class ParquetSink:
    """The rows of the TSV format as a Parquet file (float64 columns), in row groups of about
    :data:`PARQUET_ROWS` rows."""

    name, suffixes, mode = "parquet", (".parquet",), "wb"

    def start(self, out: IO) -> None:
        self.out = out
        self.writer = None
        self.parts: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
        self.rows = 0

    def write(self, result: Accessibility) -> None:
        end, u, prob = result.cells()
        if prob.size:
            self.parts.append((result.name, end, u, prob))
            self.rows += prob.shape[0]
        if self.rows >= PARQUET_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.parts:
            return
        counts = np.array([p[3].shape[0] for p in self.parts])
        names = pa.DictionaryArray.from_arrays(pa.array(np.repeat(np.arange(len(self.parts), dtype=np.int32), counts)),
                                               pa.array([p[0] for p in self.parts], pa.string())).cast(pa.string())
        prob = np.concatenate([p[3] for p in self.parts])
        table = pa.table({"name": names, "end": np.concatenate([p[1] for p in self.parts]).astype(np.int64),
                          "u": np.concatenate([p[2] for p in self.parts]).astype(np.int64), "unpaired": prob,
                          "opening_energy": energy_to_open(prob)})
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.out, table.schema)
        self.writer.write_table(table)
        self.parts, self.rows = [], 0

    def close(self) -> None:
        self._flush()
        if self.writer is not None:
            self.writer.close()


class LunpSink:
    """RNAplfold's ``_lunp`` layout, one block per sequence after a ``>name`` line: a header naming
    the stretch lengths, then per position its probabilities for u = 1, 2, ... (``NA`` where
    undefined), tab-separated."""

    name, suffixes, mode = "lunp", (".lunp",), "wb"

    def start(self, out: IO) -> None:
        self.out = out

    def write(self, result: Accessibility) -> None:
        n, width = result.unpaired.shape
        self.out.write(f">{result.name}\n#unpaired probabilities\n #i$\tl=".encode()
                       + "".join(f"{u}\t" for u in range(1, width + 1)).encode() + b"\n")
        if not n:
            return
        b = TextBuilder(parallel=True)
        pieces: list = [b.integers(np.arange(1, n + 1)), "\t"]
        for u in range(width):
            pieces += [b.general(result.unpaired[:, u], DIGITS, "NA"), "\t"]
        pieces.append("\n")
        b.records(np.arange(n), 0, 0, pieces)
        self.out.write(b.render_array())

    def close(self) -> None:
        pass


SINKS: dict[str, type[AccessSink]] = {sink.name: sink for sink in (TsvSink, ParquetSink, LunpSink)}
#: How output names choose the format (:func:`gamut.io.outputs.format_for_output`): by suffix,
#: under a compression suffix (``out.tsv.gz``); Parquet compresses inside.
FORMAT_RULES = FormatRules({suffix: name for name, sink in SINKS.items() for suffix in sink.suffixes},
                           self_compressed=frozenset({ParquetSink.name}))
DEFAULT_FORMAT = TsvSink.name
