"""The Python API of the scan: ``gamut.scan(queries, references, **params)`` and file-to-file runs.

Both build a :class:`~gamut.scanning.pipeline.job.ScanJob` and carry it out with :func:`run_job`,
as the command line does.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union

from gamut.access.model import SiteAccess
from gamut.errors import InputError, UsageError
from gamut.io.inputs import READ_ERRORS, open_input, reason
from gamut.io.outputs import format_for_output, suffix_format
from gamut.io.textout import header_text, raw_text
from gamut.scanning.engines import make_engine
from gamut.scanning.fasta import SeqRecord, parse_miranda_fasta, read_miranda_fasta, shown
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline import runners
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.sinks import FORMAT_RULES, OUTPUT_FORMATS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["OUTPUT_FORMATS", "ScanJob", "as_records", "read_restrict", "restrict_lines", "run_job", "scan",
           "scan_files", "warn_unknown_pairs"]

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
    return parse_miranda_fasta(raw_text(text), f"<{what}>")


def restrict_lines(path: str | os.PathLike) -> dict[tuple[str, str], int]:
    """The pairs of a -restrict file (a file, ``-`` or a pipe; compressed or not): one 'query_id
    reference_id' pair per line (fields split at ASCII whitespace, ids read as the FASTA readers
    read them), each with the number of the first line that names it."""
    name = os.fspath(path)
    try:
        handle = open_input(path)
    except InputError as exc:  # miRanda's wording for a file it cannot open
        raise InputError(f"cannot open file {exc}") from None
    pairs: dict[tuple[str, str], int] = {}
    with handle:
        try:
            for number, line in enumerate(handle, 1):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) < 2:
                    raise InputError(f"{name}: line {number} needs a query id and a reference id")
                pairs.setdefault((header_text(fields[0]), header_text(fields[1])), number)
        except READ_ERRORS as exc:
            raise InputError(f"{name}: cannot read ({reason(exc)})") from None
    return pairs


def read_restrict(path: str | os.PathLike) -> frozenset[tuple[str, str]]:
    """Read a -restrict file: one 'query_id reference_id' pair per line (see :func:`restrict_lines`)."""
    return frozenset(restrict_lines(path))


def warn_unknown_pairs(path: str | os.PathLike, pairs: Mapping[tuple[str, str], int],
                       queries: Iterable[SeqRecord], references: Iterable[SeqRecord]) -> None:
    """A one-line warning when pairs of the -restrict file ``path`` name a query or a reference that
    the inputs lack: how many, and the first such line. miRanda skips them silently; they are no
    error, since a list made for a larger set of sequences is still a valid list."""
    query_ids = {record.id for record in queries}
    reference_ids = {record.id for record in references}
    unknown = [(number, pair) for pair, number in pairs.items()
               if pair[0] not in query_ids or pair[1] not in reference_ids]
    if unknown:
        number, (query, reference) = min(unknown)
        warnings.warn(f"{os.fspath(path)}: {len(unknown)} of {len(pairs)} pairs name records that are not in the "
                      f"inputs (first: line {number}, '{shown(query)} {shown(reference)}'); they are skipped",
                      stacklevel=2)


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
