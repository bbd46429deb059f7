"""A scan job: what to compute, where the results go and where it runs, checked in one place.

The command line (``gamut scan``, ``gamut miranda``) and the Python API (:func:`gamut.scan`,
:func:`gamut.scanning.api.scan_files`) build a :class:`ScanJob`; a runner
(:mod:`gamut.scanning.pipeline.runners`) carries it out with an engine and a sink.
"""
from __future__ import annotations

import copy
import dataclasses
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from gamut.errors import UsageError
from gamut.io.outputs import check_outputs, is_stdout
from gamut.io.threads import parse_threads
from gamut.scanning.fasta import SeqRecord, read_miranda_fasta
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.pairs import ScanInput
from gamut.scanning.sinks import FORMATS, OUTPUT_FORMATS, sink_class

DEVICES = ("auto", "cpu", "cuda")
#: Runs of more cells than this show a progress bar when standard error is a terminal.
PROGRESS_CELLS = 300_000_000


def parse_count(value: Any, option: str, minimum: int = 1) -> int | None:
    """A whole number of at least ``minimum`` (``None`` stays ``None``); text may be written like
    2e9. Raises a one-line :class:`UsageError` naming ``option`` otherwise."""
    if value is None:
        return None
    try:
        if isinstance(value, str):
            text = value.strip()
            count = int(float(text)) if any(c in text for c in ".eE") else int(text)
        elif isinstance(value, bool) or int(value) != value:
            raise ValueError
        else:
            count = int(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"{option} expects a whole number of at least {minimum}, got '{value}'") from None
    if count < minimum:
        raise UsageError(f"{option} must be at least {minimum}, got '{value}'")
    return count


@dataclass(frozen=True, eq=False)
class ScanJob:
    """Everything a scan needs: the sequences and settings (what), the output (where the results
    go) and the place it runs (this process, a Dask ``cluster``, a resumable ``run_dir``).

    ``query_name`` and ``reference_name`` are the inputs as miRanda's header shows them;
    ``query_path`` and ``reference_path`` the files a run directory fingerprints (None for
    sequences given in memory). ``format`` names a sink (:data:`gamut.scanning.sinks.FORMATS`);
    None is the API's DataFrame. ``threads``, the partition sizes and ``retries`` may be given as
    text (from the command line); the job holds them as numbers.
    """

    queries: Sequence[SeqRecord]
    references: Sequence[SeqRecord]
    params: ScanParams = dataclasses.field(default_factory=ScanParams)
    query_name: str = "<query>"
    reference_name: str = "<reference>"
    query_path: str | None = None
    reference_path: str | None = None
    # the output
    output: str | None = None
    format: str | None = "miranda"
    quiet: bool = False
    keyval: bool = False
    banner: str = ""
    # the compute
    device: str = "auto"
    threads: int | None = None
    gpus: str | Sequence[int] | None = None
    progress: bool | None = None
    # where it runs
    cluster: Any = None
    run_dir: str | os.PathLike | None = None
    partition_cells: int | None = None
    partition_pairs: int | None = None
    retries: int = 2

    def __post_init__(self) -> None:
        """Check every option (before any work or output) and hold the counts as numbers."""
        if self.format is not None and self.format not in FORMATS:
            raise UsageError(f"unknown output format '{self.format}' (choose from {', '.join(OUTPUT_FORMATS)})")
        if self.format is not None and sink_class(self.format).needs_file and is_stdout(self.output):
            suffix = FORMATS[self.format].suffixes[0]
            raise UsageError(f"--format {self.format} needs an output file (-o hits{suffix})")
        if self.device not in DEVICES:
            raise UsageError(f"unknown device '{self.device}' (choose from {', '.join(DEVICES)})")
        if not isinstance(self.params, ScanParams):
            raise UsageError(f"params must be ScanParams, got {type(self.params).__name__}")
        counts = {"threads": parse_threads(self.threads),
                  "partition_cells": parse_count(self.partition_cells, "--partition-cells"),
                  "partition_pairs": parse_count(self.partition_pairs, "--partition-pairs"),
                  "retries": parse_count(self.retries, "--retries", minimum=0)}
        for name, value in counts.items():
            object.__setattr__(self, name, value)
        if self.gpus is not None:
            from gamut.cuda import check_gpus_used

            check_gpus_used(self.gpus, self.device, "scan", self.cluster)

    @classmethod
    def from_files(cls, query_path: str, reference_path: str, params: ScanParams, **options: Any) -> ScanJob:
        """The job of scanning two FASTA files: options are checked, then the outputs (never onto
        an input), then the files are read."""
        job = cls((), (), params, query_name=query_path, reference_name=reference_path, query_path=query_path,
                  reference_path=reference_path, **options)
        check_outputs([job.output], (query_path, reference_path))
        if job.cluster is not None:
            from gamut.cluster import require_dask

            require_dask()
        return dataclasses.replace(job, queries=read_miranda_fasta(query_path),
                                   references=read_miranda_fasta(reference_path))

    def where(self, **changes: Any) -> ScanJob:
        """The same scan run elsewhere: a copy with other ``cluster``, ``run_dir``, ``threads``,
        ``gpus`` or ``progress`` (as a runner hands the job to its workers; not checked again,
        and the sequences stay as encoded here)."""
        assert set(changes) <= {"cluster", "run_dir", "threads", "gpus", "progress"}, changes
        new = copy.copy(self)
        for name, value in changes.items():
            object.__setattr__(new, name, value)
        return new

    @cached_property
    def scan_input(self) -> ScanInput:
        """The sequences and settings as the runners scan them."""
        return ScanInput(list(self.queries), list(self.references), self.params)

    @property
    def partitioned(self) -> bool:
        """Whether the job runs in partitions (on a cluster, or resumable in a run directory)."""
        return self.cluster is not None or self.run_dir is not None

    def show_progress(self) -> bool:
        """``progress``, or by default: standard error is a terminal and the run is long."""
        if self.progress is not None:
            return bool(self.progress)
        return sys.stderr.isatty() and self.scan_input.total_cells() > PROGRESS_CELLS
