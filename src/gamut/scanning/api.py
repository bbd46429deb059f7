"""The Python API of the scan: ``gamut.scan(queries, references, **params)`` and file-to-file runs."""
from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING, Any, Mapping, Sequence, Union

from gamut.errors import InputError, UsageError
from gamut.io.atomic import atomic_output
from gamut.io.outputs import check_outputs
from gamut.progress import progress_bar
from gamut.scanning.engines import make_engine
from gamut.scanning.fasta import SeqRecord, parse_miranda_fasta, read_miranda_fasta
from gamut.scanning.params import ScanParams
from gamut.scanning.sinks.report import ArrowBatches, MirandaTextWriter, TableWriter, arrow_schema, hit_frame
from gamut.scanning.pipeline.runner import ScanInput, run_scan

if TYPE_CHECKING:
    import pandas as pd

SequencesLike = Union[str, os.PathLike, Mapping[str, str], Sequence[tuple[str, str]], Sequence[SeqRecord]]

OUTPUT_FORMATS = ("miranda", "tsv", "jsonl", "parquet")


def as_records(data: SequencesLike, what: str) -> list[SeqRecord]:
    """Sequences from a FASTA path, a {id: sequence} mapping, (id, sequence) pairs or records."""
    if isinstance(data, (str, os.PathLike)):
        return read_miranda_fasta(data)
    items = list(data.items()) if isinstance(data, Mapping) else list(data)
    if not items:
        raise InputError(f"no {what} sequences given")
    if all(isinstance(x, SeqRecord) for x in items):
        return list(items)
    text = "".join(f">{name}\n{seq}\n" for name, seq in items)
    return parse_miranda_fasta(text.encode("latin-1"), f"<{what}>")


def read_restrict(path: str | os.PathLike) -> frozenset[tuple[str, str]]:
    """Read a -restrict file: one 'query_id reference_id' pair per line."""
    try:
        with open(path, encoding="latin-1") as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        raise InputError(f"cannot open file {os.fspath(path)}: {exc.strerror or exc}") from None
    pairs = set()
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 2:
            raise InputError(f"{os.fspath(path)}: line {number} needs a query id and a reference id")
        pairs.add((fields[0], fields[1]))
    return frozenset(pairs)


def scan(
    queries: SequencesLike,
    references: SequencesLike,
    *,
    device: str = "auto",
    threads: int | None = None,
    gpus: str | Sequence[int] | None = None,
    cluster: Any = None,
    partition_cells: int | None = None,
    **params,
) -> pd.DataFrame:
    """Scan miRNAs against references with miRanda 3.3a's model; return the reported hits.

    ``params`` are :class:`ScanParams` fields (``score_threshold=140``, ``energy_threshold=1``,
    ``scale=4.0``, ``gap_open=-9``, ``gap_extend=-4``, ``strict=False``, ``noenergy=False``,
    ``trim=0``, ``energy_model="miranda"``, ``restrict=None``). The table has one row per
    reported hit with every field miRanda prints (:data:`HIT_COLUMNS`), in miRanda's order.

    ``cluster`` (``"local:N"``, a scheduler address such as ``"tcp://host:8786"``, or a
    ``distributed.Client``) spreads the scan over Dask workers in partitions of about
    ``partition_cells`` cells; the table is the same.
    """
    try:
        settings = ScanParams(**params)
    except TypeError as exc:
        raise UsageError(str(exc)) from None
    scan_input = ScanInput(as_records(queries, "query"), as_records(references, "reference"), settings)
    if cluster is not None:
        from gamut.scanning.pipeline.distributed import scan_frame

        return scan_frame(scan_input, cluster=cluster, device=device, threads=threads, gpus=gpus,
                          partition_cells=partition_cells)
    engine = make_engine(device, threads, gpus)
    return hit_frame(list(run_scan(scan_input, engine, threads=threads)), scan_input)


def scan_files(
    query_path: str,
    reference_path: str,
    params: ScanParams,
    *,
    output: str | None = None,
    fmt: str = "miranda",
    quiet: bool = False,
    keyval: bool = False,
    banner: str = "",
    device: str = "auto",
    threads: int | None = None,
    gpus: str | Sequence[int] | None = None,
    progress: bool | None = None,
    cluster: Any = None,
    run_dir: str | os.PathLike | None = None,
    partition_cells: int | None = None,
    partition_pairs: int | None = None,
    retries: int = 2,
) -> int:
    """Scan two FASTA files and write the results (atomically when ``output`` is a path).

    With ``cluster`` (see :func:`scan`) and/or ``run_dir`` (finished partitions kept there; a
    rerun computes only the rest) the scan runs in partitions (:mod:`gamut.scanning.pipeline.distributed`);
    the output is the same bytes.
    """
    if fmt not in OUTPUT_FORMATS:
        raise UsageError(f"unknown output format '{fmt}' (choose from {', '.join(OUTPUT_FORMATS)})")
    if fmt == "parquet" and output in (None, "-"):
        raise UsageError("--format parquet needs an output file (-o hits.parquet)")
    check_outputs([output], (query_path, reference_path))
    if cluster is not None:
        from gamut.cluster import require_dask

        require_dask()
    queries = read_miranda_fasta(query_path)
    references = read_miranda_fasta(reference_path)
    scan_input = ScanInput(queries, references, params)
    if cluster is not None or run_dir is not None:
        from gamut.scanning.pipeline.distributed import scan_partitioned

        if progress is None:
            progress = sys.stderr.isatty() and scan_input.total_cells() > 300_000_000
        return scan_partitioned(query_path, reference_path, scan_input, output=output, fmt=fmt, quiet=quiet,
                                keyval=keyval, banner=banner, device=device, threads=threads, gpus=gpus,
                                progress=bool(progress), cluster=cluster, run_dir=run_dir,
                                partition_cells=partition_cells, partition_pairs=partition_pairs, retries=retries)
    engine = make_engine(device, threads, gpus)
    total = scan_input.total_cells()
    if progress is None:
        progress = sys.stderr.isatty() and total > 300_000_000
    bar = progress_bar(f"scan [{engine.name}]", total, bool(progress), unit="cells")
    if fmt == "parquet":
        return _write_parquet(scan_input, engine, output, threads, bar)
    with atomic_output(output) as out, bar as tracker:
        writer = _writer(out, scan_input, fmt, quiet, keyval)
        writer.start(banner, query_path, reference_path)
        for result in run_scan(scan_input, engine, threads=threads, progress=tracker):
            writer.chunk(result)
        writer.finish()
    return 0


def _writer(out: IO[str], scan_input: ScanInput, fmt: str, quiet: bool, keyval: bool):
    if fmt == "miranda":
        return MirandaTextWriter(out, scan_input, quiet=quiet, keyval=keyval)
    return TableWriter(out, scan_input, fmt)


def _write_parquet(scan_input: ScanInput, engine, output: str, threads, bar) -> int:
    """Stream the reported hits into a Parquet file, one row group per chunk with hits."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UsageError("--format parquet needs pyarrow (pip install 'gamut[parquet]')") from None
    with atomic_output(output, "wb") as out, bar as tracker:
        writer = None
        batches = ArrowBatches(scan_input)
        for result in run_scan(scan_input, engine, threads=threads, progress=tracker):
            batch = batches.batch(result)
            if writer is None:
                writer = pq.ParquetWriter(out, batch.schema)
            if batch.num_rows:
                writer.write_batch(batch)
        if writer is None:  # no pair at all: an empty table with the columns
            writer = pq.ParquetWriter(out, arrow_schema())
        writer.close()
    return 0
