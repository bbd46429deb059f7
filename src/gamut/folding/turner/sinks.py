"""Output formats of ``gamut fold --model turner``, by name in :data:`SINKS`: RNAfold's own text,
TSV, JSONL and Parquet rows, and the base-pair probability table of ``--pairs``.

A writer gets the output (binary) once (:meth:`start`), each batch of results (:meth:`write`,
with the FASTA header lines RNAfold would print, or None for a sequence given without one) and
:meth:`close`. Text is assembled from columns in compiled code (:class:`gamut.io.textcols.TextBuilder`),
so a batch of a million short records costs no Python work per record; only the ``-p``
numbers, computed per record, are gathered in Python.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import IO, ClassVar, Protocol

import numpy as np

from gamut.folding.turner.batch import TurnerBatch
from gamut.folding.turner.letters import TO_RNA
from gamut.io.packed import PackedSequences
from gamut.io.textcols import TextBuilder
from gamut.io.textout import raw_text

#: Significant digits of the ``-p`` numbers in TSV and JSONL, and of probabilities in ``--pairs``.
DIGITS = 7
_SPACES = np.frombuffer(b" " * 16, np.uint8)


class TurnerSink(Protocol):
    name: ClassVar[str]

    def start(self, out: IO[bytes], partition: bool) -> None: ...
    def write(self, batch: TurnerBatch, headers: Sequence[str] | None) -> None: ...
    def close(self) -> None: ...


def text_column(b: TextBuilder, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """A column of ``texts`` (UTF-8; header bytes that were not UTF-8 kept), built from one joined
    string when they are all ASCII (no Python work per row)."""
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    joined = raw_text("".join(texts))
    if len(joined) != int(lengths.sum()):  # some are not ASCII: one at a time
        return b.strings(texts)
    starts = np.zeros(len(texts), np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return b.buffer(np.frombuffer(joined, np.uint8), starts, lengths)


def sequence_column(b: TextBuilder, batch: TurnerBatch) -> tuple[np.ndarray, np.ndarray]:
    """The sequences as RNAfold prints them: T as U, the case kept."""
    data = np.frombuffer(PackedSequences.of(batch.sequences).letters.translate(TO_RNA), np.uint8)
    return b.buffer(data, batch.offsets[:-1], batch.lengths)


def structure_column(b: TextBuilder, batch: TurnerBatch) -> tuple[np.ndarray, np.ndarray]:
    return b.buffer(batch.structure_bytes, batch.offsets[:-1], batch.lengths)


def padded(b: TextBuilder, column: tuple[np.ndarray, np.ndarray], width: int) -> list:
    """Spaces that right-align ``column`` in ``width`` characters (printf's ``%6.2f``), then it."""
    pad = np.maximum(0, width - column[1])
    return [b.buffer(_SPACES, np.zeros(pad.shape[0], np.int64), pad), column]


def energy_text(b: TextBuilder, dcal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """kcal/mol with two decimals, from ViennaRNA's integers (exactly printf's ``%.2f``)."""
    return b.fixed_column(np.asarray(dcal, np.float64) / 100.0, 2)


def rnafold_lines(result, summary_row: tuple) -> str:
    """RNAfold's ``-p`` lines of one record (after its MFE line): the pf line, the centroid line and
    the frequency line, from its :class:`~gamut.folding.turner.batch.EnsembleSummary` row."""
    pf_structure, centroid, centroid_energy, distance, frequency, diversity = summary_row
    ensemble = float(np.float32(result.ensemble_energy))  # RNAfold holds it in single precision
    return (f"{pf_structure} [{ensemble:6.2f}]\n{centroid} {{{float(np.float32(centroid_energy)):6.2f} "
            f"d={distance:.2f}}}\n frequency of mfe structure in ensemble {frequency:g}; "
            f"ensemble diversity {diversity:<6.2f}\n")


def summary_rows(batch: TurnerBatch) -> list[tuple]:
    s = batch.ensemble_summary()
    return list(zip(s.pf_structures, s.centroids, s.centroid_energies.tolist(), s.centroid_distances.tolist(),
                    s.mfe_frequencies.tolist(), s.diversities.tolist()))


class RnafoldSink:
    """RNAfold's own text: ``>header`` (when the record had one), the sequence (T as U), the
    structure with its energy ``( -6.60)``; with ``-p`` the pf line ``[ -7.01]``, the centroid
    line ``{ -6.60 d=1.23}`` and the frequency line, as RNAfold 2.x prints them."""

    name = "rnafold"

    def start(self, out: IO[bytes], partition: bool) -> None:
        self.out, self.partition = out, partition

    def write(self, batch: TurnerBatch, headers: Sequence[str] | None) -> None:
        b = TextBuilder(parallel=True)
        pieces: list = []
        if headers is not None:
            pieces += [">", text_column(b, headers), "\n"]
        pieces += [sequence_column(b, batch), "\n", structure_column(b, batch), " ("]
        pieces += padded(b, energy_text(b, batch.energies_dcal), 6) + [")\n"]
        rows = np.arange(len(batch))
        if self.partition:
            tail = [rnafold_lines(r, row) for r, row in zip(batch, summary_rows(batch))]
            pieces.append(text_column(b, tail))
        b.records(rows, 0, 0, pieces)
        self.out.write(b.render_array())

    def close(self) -> None:
        pass


#: The columns the ``-p`` numbers add to TSV, JSONL and Parquet rows.
ENSEMBLE_COLUMNS = ("ensemble_energy", "centroid", "centroid_energy", "centroid_distance", "mfe_frequency",
                    "diversity")


def _ensemble_columns(b: TextBuilder, batch: TurnerBatch, json: bool) -> list:
    """The ``-p`` columns as text (tab-separated, or ``"key": value`` pairs for JSON)."""
    s = batch.ensemble_summary()
    values = [b.general(batch.ensemble_energies, DIGITS), text_column(b, s.centroids),
              b.fixed(s.centroid_energies, 2), b.general(s.centroid_distances, DIGITS),
              b.general(s.mfe_frequencies, DIGITS), b.general(s.diversities, DIGITS)]
    pieces: list = []
    for name, value in zip(ENSEMBLE_COLUMNS, values):
        if json:
            quote = '"' if name == "centroid" else ""
            pieces += [f', "{name}": {quote}', value, quote]
        else:
            pieces += ["\t", value]
    return pieces


class TsvSink:
    """A table with a header line, one row per record: ``name length energy structure`` (kcal/mol),
    and with ``-p`` the columns of :data:`ENSEMBLE_COLUMNS`."""

    name = "tsv"

    def start(self, out: IO[bytes], partition: bool) -> None:
        self.out, self.partition = out, partition
        columns = ("name", "length", "energy", "structure") + (ENSEMBLE_COLUMNS if partition else ())
        out.write(("\t".join(columns) + "\n").encode())

    def write(self, batch: TurnerBatch, headers: Sequence[str] | None) -> None:
        b = TextBuilder(parallel=True)
        pieces = [text_column(b, batch.names), "\t", b.integers(batch.lengths), "\t",
                  energy_text(b, batch.energies_dcal), "\t", structure_column(b, batch)]
        if self.partition:
            pieces += _ensemble_columns(b, batch, json=False)
        b.records(np.arange(len(batch)), 0, 0, pieces + ["\n"])
        self.out.write(b.render_array())

    def close(self) -> None:
        pass


def json_names(b: TextBuilder, names: Sequence[str]) -> list:
    """The names as JSON strings (pieces of a record): quoted as they are when none needs escaping
    (no string per name), else by :func:`json.dumps`."""
    import json

    joined = "".join(names)
    plain = joined.isascii() and joined.isprintable() and '"' not in joined and "\\" not in joined
    return ['"', text_column(b, names), '"'] if plain else [text_column(b, [json.dumps(n) for n in names])]


class JsonlSink:
    """One JSON object per record: ``name``, ``length``, ``energy`` (kcal/mol), ``structure``,
    and with ``-p`` the keys of :data:`ENSEMBLE_COLUMNS`."""

    name = "jsonl"

    def start(self, out: IO[bytes], partition: bool) -> None:
        self.out, self.partition = out, partition

    def write(self, batch: TurnerBatch, headers: Sequence[str] | None) -> None:
        b = TextBuilder(parallel=True)
        pieces = ['{"name": ', *json_names(b, batch.names), ', "length": ', b.integers(batch.lengths),
                  ', "energy": ', b.decimals(batch.energies_dcal / 100.0, 2, "null", json_number=True),
                  ', "structure": "', structure_column(b, batch), '"']
        if self.partition:
            pieces += _ensemble_columns(b, batch, json=True)
        b.records(np.arange(len(batch)), 0, 0, pieces + ["}\n"])
        self.out.write(b.render_array())

    def close(self) -> None:
        pass


class ParquetSink:
    """The rows of the TSV format as a Parquet file (``energy`` float64 kcal/mol and ``energy_dcal``
    int32, ViennaRNA's integer), a row group per batch."""

    name = "parquet"

    def start(self, out: IO[bytes], partition: bool) -> None:
        self.out, self.partition, self.writer = out, partition, None

    def write(self, batch: TurnerBatch, headers: Sequence[str] | None) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = batch.to_arrow()
        if self.partition:
            s = batch.ensemble_summary()
            for name, column in zip(ENSEMBLE_COLUMNS[1:], (s.centroids, s.centroid_energies, s.centroid_distances,
                                                           s.mfe_frequencies, s.diversities)):
                table = table.append_column(name, pa.array(column))
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.out, table.schema)
        self.writer.write_table(table)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class PairsSink:
    """``--pairs``: the base-pair probabilities ``name i j p`` (1-based ``i < j``) of every pair
    with ``p >= cutoff``, tab-separated, with a header line."""

    def __init__(self, cutoff: float) -> None:
        self.cutoff = cutoff

    def start(self, out: IO[bytes]) -> None:
        self.out = out
        out.write(b"name\ti\tj\tp\n")

    def write(self, batch: TurnerBatch) -> None:
        b = TextBuilder(parallel=True)
        for k, result in enumerate(batch):
            i, j, p = result.pair_probabilities(self.cutoff)
            if not p.size:
                continue
            name = text_column(b, [result.name])
            b.records(np.full(p.shape[0], k), 0, np.arange(p.shape[0]), [
                b.take(name, np.zeros(p.shape[0], np.int64)), "\t", b.integers(i + 1), "\t", b.integers(j + 1), "\t",
                b.general(p, DIGITS), "\n"])
        self.out.write(b.render_array())


#: The writer of each format of :data:`gamut.folding.turner.formats.FORMATS`.
SINKS: dict[str, type[TurnerSink]] = {sink.name: sink for sink in (RnafoldSink, TsvSink, JsonlSink, ParquetSink)}
