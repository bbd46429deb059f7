"""The Python API of the scan: ``gamut.scan(queries, references, **params)`` and file-to-file runs.

Both build a :class:`~gamut.scanning.pipeline.job.ScanJob` and carry it out with :func:`run_job`,
as the command line does.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from gamut.access.model import SiteAccess
from gamut.errors import InputError, UsageError
from gamut.io.outputs import suffix_format
from gamut.scanning.engines import make_engine
from gamut.scanning.fasta import SeqRecord, parse_miranda_fasta, read_miranda_fasta
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline import runners
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.sinks import FORMAT_RULES, OUTPUT_FORMATS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["OUTPUT_FORMATS", "ScanJob", "as_records", "read_restrict", "run_job", "scan", "scan_files"]

SequencesLike = Union[str, os.PathLike, Mapping[str, str], Sequence[tuple[str, str]], Sequence[SeqRecord]]


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


def run_job(job: ScanJob):
    """Carry out ``job`` (engines from :func:`gamut.scanning.engines.make_engine`); returns its
    sink, closed (the API's table is its ``frame``)."""
    return runners.run_job(job, make_engine)


def scan(
    queries: SequencesLike,
    references: SequencesLike,
    *,
    device: str = "auto",
    threads: int | None = None,
    gpus: str | Sequence[int] | None = None,
    cluster: Any = None,
    partition_cells: int | None = None,
    annotation: str | os.PathLike | None = None,
    accessibility: bool | SiteAccess = False,
    **params,
) -> pd.DataFrame:
    """Scan miRNAs against references with miRanda 3.3a's model; return the reported hits.

    ``params`` are :class:`ScanParams` fields (``score_threshold=140``, ``energy_threshold=1``,
    ``scale=4.0``, ``gap_open=-9``, ``gap_extend=-4``, ``strict=False``, ``noenergy=False``,
    ``trim=0``, ``energy_model="miranda"``, ``restrict=None``). The table has one row per
    reported hit with every field miRanda prints (:data:`~gamut.scanning.sinks.columns.HIT_COLUMNS`),
    in miRanda's order.

    ``cluster`` (``"local:N"``, a scheduler address such as ``"tcp://host:8786"``, or a
    ``distributed.Client``) spreads the scan over Dask workers in partitions of about
    ``partition_cells`` cells; the table is the same. ``annotation`` (a BED12, GTF or GFF3 file
    of the references' transcripts) adds genome coordinates. ``accessibility`` (True, or a
    :class:`~gamut.access.model.SiteAccess` for other window, span, flanks or a ``ddg_threshold``)
    adds each site's opening energy ``dG_open`` and ``ddG`` (docs/accessibility.md).
    """
    if accessibility is not False and accessibility is not None:
        params["site_access"] = SiteAccess() if accessibility is True else accessibility
    try:
        settings = ScanParams(**params)
    except TypeError as exc:
        raise UsageError(str(exc)) from None
    job = ScanJob(as_records(queries, "query"), as_records(references, "reference"), settings, format=None,
                  device=device, threads=threads, gpus=gpus, progress=False, cluster=cluster,
                  partition_cells=partition_cells, annotation=annotation)
    return run_job(job).frame


def scan_files(
    query_path: str,
    reference_path: str,
    params: ScanParams,
    *,
    output: str | None = None,
    fmt: str = "miranda",
    outputs: Sequence[str | os.PathLike | tuple[str | os.PathLike | None, str]] | None = None,
    annotation: str | os.PathLike | None = None,
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
    """Scan two FASTA files and write the results (atomically when ``output`` is a path) in format
    ``fmt`` (:data:`OUTPUT_FORMATS`); a path ending in ``.gz``, ``.bgz`` (BED), ``.zst``, ``.bz2``
    or ``.xz`` is written compressed.

    With ``cluster`` (see :func:`scan`) and/or ``run_dir`` (finished partitions kept there; a
    rerun computes only the rest) the scan runs in partitions
    (:mod:`gamut.scanning.pipeline.partitioned`); the output is the same bytes.

    ``outputs`` writes several outputs from the one scan, instead of ``output``: each a path (in
    the format its suffix names, else ``fmt``) or a ``(path, format)`` pair; they appear together
    when the scan succeeded. ``annotation``: see :func:`scan`.
    """
    where: dict[str, Any] = {"output": output, "format": fmt}
    if outputs is not None:
        if output is not None:
            raise UsageError("give output or outputs, not both")
        where = {"outputs": [_output_pair(item, fmt) for item in outputs]}
    job = ScanJob.from_files(query_path, reference_path, params, **where, quiet=quiet, annotation=annotation,
                             keyval=keyval, banner=banner, device=device, threads=threads, gpus=gpus,
                             progress=progress, cluster=cluster, run_dir=run_dir, partition_cells=partition_cells,
                             partition_pairs=partition_pairs, retries=retries)
    run_job(job)
    return 0


def _output_pair(item: Any, fmt: str) -> tuple[str | None, str]:
    """``(path, format)`` of one of :func:`scan_files`' ``outputs``."""
    if isinstance(item, tuple):
        if len(item) != 2:
            raise UsageError(f"an output is a path or a (path, format) pair, got {item!r}")
        return (None if item[0] is None else os.fspath(item[0]), item[1])
    path = os.fspath(item)
    return path, suffix_format(path, FORMAT_RULES) or fmt
