"""Reported hits as a Parquet file of :data:`~gamut.scanning.sinks.columns.HIT_COLUMNS`: one row
group per chunk with hits, in one process and in partitions alike (needs pyarrow)."""
from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any, ClassVar

import numpy as np

from gamut.errors import UsageError
from gamut.io.textcols import gather
from gamut.io.threads import Parallel
from gamut.scanning.sinks.base import Chunks
from gamut.scanning.sinks.columns import HIT_COLUMNS, ReportedHits

if TYPE_CHECKING:
    import pyarrow as pa

    from gamut.scanning.pipeline.job import ScanJob
    from gamut.scanning.pipeline.partitions import Partition
    from gamut.scanning.pipeline.scan_loop import ChunkResult


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet
    except ImportError:
        raise UsageError("--format parquet needs pyarrow (pip install 'gamut[parquet]')") from None
    return pa


def arrow_schema() -> pa.Schema:
    """The Parquet/Arrow schema of a hit table."""
    pa = _pyarrow()
    types = {"query_id": pa.string(), "reference_id": pa.string(), "energy": pa.float64(), "identity": pa.float64(),
             "similarity": pa.float64(), "aln_mirna": pa.string(), "aln_map": pa.string(), "aln_utr": pa.string()}
    return pa.schema([(name, types.get(name, pa.int64())) for name in HIT_COLUMNS])


class ArrowBatches:
    """The reported hits of a run's chunks as Arrow record batches with :data:`HIT_COLUMNS`;
    the query and reference id arrays are built once per run (not per chunk)."""

    def __init__(self, job: ScanJob) -> None:
        pa = _pyarrow()
        self.input = job.scan_input
        self.schema = arrow_schema()
        self.ids = (pa.array([x.id for x in self.input.queries], pa.string()),
                    pa.array([x.id for x in self.input.references], pa.string()))

    def batch(self, result: ChunkResult, spare_cores: Parallel) -> pa.RecordBatch:
        """The chunk's reported hits."""
        import pyarrow as pa

        c = ReportedHits(result, self.input)

        def text(which: int) -> pa.Array:
            lengths = c.hits.width[c.rows]
            data, _ = gather(c.hits.text, c.line_starts(which), lengths, spare_cores)
            offsets = np.zeros(lengths.shape[0] + 1, np.int32)
            np.cumsum(lengths, out=offsets[1:])
            return pa.StringArray.from_buffers(lengths.shape[0], pa.py_buffer(offsets), pa.py_buffer(data))

        qids, rids = self.ids
        arrays = [qids.take(pa.array(c.q)), rids.take(pa.array(c.r)), pa.array(c.field("score")),
                  pa.array(c.energy_rounded()),
                  *(pa.array(c.field(n)) for n in ("query_start", "query_end", "ref_start", "ref_end", "aln_length")),
                  pa.array(c.field("identity")), pa.array(c.field("similarity")), text(0), text(1), text(2)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


class ParquetSink:
    """One Parquet writer for every runner. In one process each chunk with hits is a row group.
    A partition's data is an Arrow IPC stream of its hits with each row's pair number (``_pair``);
    :meth:`write_part` cuts the partitions' rows at the single-process chunks (``chunk_stops``),
    so the file has the same row groups, byte for byte."""

    mode: ClassVar[str | None] = "wb"
    needs_file: ClassVar[bool] = True
    regroups: ClassVar[bool] = True

    def __init__(self, job: ScanJob) -> None:
        self.batches = ArrowBatches(job)
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
                    ordinal = result.counter0 + result.hits.pair[np.flatnonzero(result.hits.reported)]
                    stream.write_batch(pa.RecordBatch.from_arrays([*batch.columns, pa.array(ordinal, pa.int64())],
                                                                  schema=schema))
        return sink.getvalue().to_pybytes()

    def write_part(self, part: Partition, data: bytes) -> None:
        import pyarrow as pa

        table = pa.ipc.open_stream(data).read_all()
        if table.num_rows:
            self.pending.append(table)
        end = int(np.searchsorted(self.chunk_stops, part.stop, side="right"))
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
