"""Reported hits as a Parquet file of :func:`~gamut.scanning.sinks.columns.table_columns`: one row
group per chunk with hits, in one process and in partitions alike (needs pyarrow)."""
from __future__ import annotations

from collections.abc import Sequence

from typing import IO, TYPE_CHECKING, Any, ClassVar

import numpy as np

from gamut._version import install_hint
from gamut.errors import UsageError
from gamut.io.textcols import gather
from gamut.io.threads import Parallel
from gamut.scanning.params import SITE_TYPES
from gamut.scanning.sinks import FORMATS
from gamut.scanning.sinks.base import Chunks
from gamut.scanning.sinks.columns import (
    HIT_COLUMNS,
    ReportedHits,
    hit_genome,
    output_genome_map,
    table_columns,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from gamut.scanning.pipeline.pairs import Partition
    from gamut.scanning.results import ChunkResult
    from gamut.scanning.sinks.spec import OutputSpec


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet
    except ImportError:
        raise UsageError(f"--format parquet needs pyarrow ({install_hint('parquet')})") from None
    return pa


def arrow_schema(names: tuple[str, ...] = HIT_COLUMNS) -> pa.Schema:
    """The Parquet/Arrow schema of a hit table with columns ``names``."""
    pa = _pyarrow()
    strings = ("query_id", "reference_id", "aln_mirna", "aln_map", "aln_utr", "site_type", "chrom", "strand", "blocks")
    floats = ("energy", "identity", "similarity", "local_au", "dG_open", "ddG")
    return pa.schema([(name, pa.string() if name in strings else pa.float64() if name in floats else pa.int64())
                      for name in names])


def _strings(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, valid: np.ndarray | None,
             spare_cores: Parallel) -> pa.Array:
    """A string array of ``data[starts[k]:starts[k]+lengths[k]]`` (null where not ``valid``)."""
    import pyarrow as pa

    packed, _ = gather(data, starts, lengths, spare_cores)
    offsets = np.zeros(lengths.shape[0] + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.StringArray.from_buffers(lengths.shape[0], pa.py_buffer(offsets), pa.py_buffer(packed), bitmap,
                                       -1 if valid is None else int((~valid).sum()))


class ArrowBatches:
    """The reported hits of a run's chunks as Arrow record batches with :data:`HIT_COLUMNS`;
    the query and reference id arrays are built once per run (not per chunk)."""

    def __init__(self, spec: OutputSpec) -> None:
        pa = _pyarrow()
        self.input = spec.scan_input
        self.schema = arrow_schema(table_columns(spec))
        self.ids = (pa.array([x.id for x in self.input.queries], pa.string()),
                    pa.array([x.id for x in self.input.references], pa.string()))
        self.site_names = pa.array(SITE_TYPES, pa.string())
        self.genome = output_genome_map(spec)
        if self.genome is not None:
            self.chroms = pa.array(self.genome.chroms, pa.string())

    def batch(self, result: ChunkResult, spare_cores: Parallel) -> pa.RecordBatch:
        """The chunk's reported hits."""
        import pyarrow as pa

        c = ReportedHits(result, self.input)

        def text(which: int) -> pa.Array:
            return _strings(c.hits.text, c.line_starts(which), c.field("width"), None, spare_cores)

        qids, rids = self.ids
        arrays = [qids.take(pa.array(c.q)), rids.take(pa.array(c.r)), pa.array(c.field("score")),
                  pa.array(c.energy_rounded()),
                  *(pa.array(c.field(n)) for n in ("query_start", "query_end", "ref_start", "ref_end", "aln_length")),
                  pa.array(c.field("identity")), pa.array(c.field("similarity")), text(0), text(1), text(2)]
        c.spare = spare_cores
        sites = c.sites()
        au = sites.local_au.astype(np.float64)
        arrays += [self.site_names.take(pa.array(sites.site.astype(np.int64))), pa.array(sites.dist_to_end),
                   pa.array(sites.supp_pairs.astype(np.int64)), pa.array(np.round(au, 2), mask=np.isnan(au))]
        access = c.access()
        if access is not None:
            arrays += [pa.array(column, mask=np.isnan(column)) for column in access]
        if self.genome is not None:
            from gamut.scanning.genome import block_text

            g = hit_genome(self.genome, c, sites)
            absent = ~g.mapped
            buf, starts, lengths = block_text(g.block_off, g.block_start, g.block_end, mid="-")
            strand = np.frombuffer(b"-?+", np.uint8)
            arrays += [self.chroms.take(pa.array(g.chrom, mask=absent)), pa.array(g.start, mask=absent),
                       pa.array(g.end, mask=absent),
                       _strings(strand, g.strand.astype(np.int64) + 1, np.ones(len(g), np.int64), g.mapped, spare_cores),
                       _strings(buf, starts, lengths, g.mapped, spare_cores)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


class ParquetSink:
    """One Parquet writer for every runner. In one process each chunk with hits is a row group.
    A partition's data is an Arrow IPC stream of its hits with each row's pair number (``_pair``);
    :meth:`write_part` cuts the partitions' rows at the single-process chunks (``chunk_stops``),
    so the file has the same row groups, byte for byte."""

    mode: ClassVar[str | None] = "wb"
    needs_file: ClassVar[bool] = FORMATS["parquet"].needs_file
    regroups: ClassVar[bool] = True

    def __init__(self, spec: OutputSpec) -> None:
        self.batches = ArrowBatches(spec)
        self.chunk_stops = np.zeros(0, np.int64)
        self.writer: Any = None
        self.next_stop = 0
        self.pending: list = []

    def start(self, out: IO | None) -> None:
        import pyarrow.parquet as pq

        self.writer = pq.ParquetWriter(out, self.batches.schema)

    def write(self, result: ChunkResult, spare_cores: Parallel) -> None:
        batch = self.batches.batch(result, spare_cores)
        if batch.num_rows:
            self.writer.write_batch(batch)

    def render(self, chunks: Chunks, prev_query: int) -> bytes:
        import pyarrow as pa

        schema = self.batches.schema.append(pa.field("_pair", pa.int64()))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, schema) as stream:
            for result, spare in chunks:
                batch = self.batches.batch(result, spare)
                if batch.num_rows:
                    ordinal = result.ordinal(result.hits.pair[np.flatnonzero(result.hits.reported)])
                    stream.write_batch(pa.RecordBatch.from_arrays([*batch.columns, pa.array(ordinal, pa.int64())],
                                                                  schema=schema))
        return sink.getvalue().to_pybytes()

    def write_part(self, part: Partition, data: bytes) -> None:
        import pyarrow as pa

        self._add(pa.ipc.open_stream(data).read_all(), part.stop)

    def render_tile(self, chunks: Chunks) -> bytes:
        """A tile's hits as :meth:`render` gives a partition's (each row's output-order number in
        ``_pair``): :meth:`write_rows` puts a group's tiles in order by it."""
        return self.render(chunks, -1)

    def write_rows(self, tiles: Sequence[bytes], stop: int) -> None:
        import pyarrow as pa

        table = pa.concat_tables([pa.ipc.open_stream(data).read_all() for data in tiles])
        if table.num_rows:
            table = table.take(np.argsort(table.column("_pair").to_numpy(), kind="stable"))
        self._add(table, stop)

    def _add(self, table, stop: int) -> None:
        """Rows of output-order numbers below ``stop`` (all those not yet added), in order: written
        in the single-process chunks' row groups that end at or before ``stop``, the rest held."""
        import pyarrow as pa

        if table.num_rows:
            self.pending.append(table)
        end = int(np.searchsorted(self.chunk_stops, stop, side="right"))
        stops, self.next_stop = self.chunk_stops[self.next_stop:end], end
        if not self.pending or stops.size == 0:
            return
        rows = pa.concat_tables(self.pending)
        ordinal = rows.column("_pair").to_numpy()
        lo = 0
        for cut in np.searchsorted(ordinal, stops, side="left"):
            if cut > lo:
                group = rows.slice(lo, int(cut) - lo).drop_columns(["_pair"]).combine_chunks()
                self.writer.write_batch(group.to_batches()[0])
            lo = int(cut)
        self.pending = [rows.slice(lo)] if lo < rows.num_rows else []

    def close(self) -> None:
        self.writer.close()
