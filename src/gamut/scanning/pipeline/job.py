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
from typing import TYPE_CHECKING, Any

from gamut.errors import InputError, UsageError
from gamut.io.inputs import check_read_once, is_stream
from gamut.io.outputs import check_compression, check_outputs, is_stdout, same_outputs
from gamut.io.threads import parse_threads
from gamut.numerals import number
from gamut.scanning.fasta import FileRecords, RecordRange, SeqRecord, is_utf8, read_miranda_fasta, shown
from gamut.scanning.params import ScanParams
from gamut.timeline import span
from gamut.scanning.sinks import FORMAT_RULES, FORMATS, OUTPUT_FORMATS
from gamut.scanning.sinks.spec import Output, OutputSpec

if TYPE_CHECKING:
    from gamut.scanning.pipeline.pairs import ScanInput

DEVICES = ("auto", "cpu", "cuda")


#: Runs of more cells than this show a progress bar when standard error is a terminal.
PROGRESS_CELLS = 300_000_000


def parse_count(value: Any, option: str, minimum: int = 1) -> int | None:
    """A whole number of at least ``minimum`` (``None`` stays ``None``; text may be written like
    2e9): :func:`gamut.numerals.number`, a one-line :class:`UsageError` naming ``option`` otherwise."""
    return None if value is None else number(value, option, whole=True, at_least=minimum)


@dataclass(frozen=True, eq=False)
class ScanJob:
    """Everything a scan needs: the sequences and settings (what), the output (where the results
    go) and the place it runs (this process, a Dask ``cluster``, a resumable ``run_dir``).

    ``query_name`` and ``reference_name`` are the inputs as miRanda's header shows them;
    ``query_path`` and ``reference_path`` the files a run directory fingerprints (None for
    sequences given in memory). ``format`` names a sink (:data:`gamut.scanning.sinks.FORMATS`);
    None is the API's DataFrame. ``threads``, the partition sizes and ``retries`` may be given as
    text (from the command line); the job holds them as numbers.

    ``outputs`` writes several outputs from the one scan: ``(path, format)`` pairs (each format
    named); give it instead of ``output`` and ``format``, which then hold the first output's (a
    job of one output holds it in ``output`` and ``format``, ``outputs`` empty). :attr:`targets`
    is every output either way; each sink is built from :meth:`for_output`, what the sink of one
    output reads of the job. ``annotation`` is a BED12,
    GTF or GFF3 file of the references' transcripts (genome coordinates; read by the sinks).
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
    outputs: Sequence[tuple[str | None, str | None]] = ()
    annotation: str | os.PathLike | None = None
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
        self._check_outputs()
        if self.annotation is not None:
            object.__setattr__(self, "annotation", _readable_file(self.annotation, "--annotation"))
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
        if self.params.site_access is not None and self.partitioned:
            raise UsageError("--accessibility runs in one process for now: drop --cluster, --run-dir and a "
                             "--gpus list of several")
        self._check_ids()

    @classmethod
    def from_files(cls, query_path: str, reference_path: str, params: ScanParams, **options: Any) -> ScanJob:
        """The job of scanning two FASTA files (``-`` or a pipe for one of them at most): options are
        checked, then the outputs (never onto an input), then the files are read, each once."""
        job = cls((), (), params, query_name=query_path, reference_name=reference_path, query_path=query_path,
                  reference_path=reference_path, **options)
        check_read_once((query_path, reference_path, job.annotation))
        check_outputs([path for path, _ in job.targets], (query_path, reference_path, job.annotation))
        if job.cluster is not None:
            from gamut.cluster import check_dask_installed

            check_dask_installed()
        # In stripes on a cluster of GPUs, plain files are read when the runner needs them: workers on
        # this machine get their orders first (gamut.scanning.pipeline.striped).
        later = job.stripable and job.on_gpu_cluster
        with span("read inputs"):
            return dataclasses.replace(job, queries=_records(query_path, later),
                                       references=_records(reference_path, later))

    def _check_ids(self) -> None:
        """Ids of records whose bytes are not UTF-8 are an :class:`InputError` (naming the file and
        the record) when an output's format must hold UTF-8 text (JSON lines, Parquet); the text
        formats write their bytes as they came."""
        formats = [fmt for _, fmt in self.targets if fmt is not None and FORMATS[fmt].utf8_only]
        if not formats:
            return
        for records, name in ((self.queries, self.query_name), (self.references, self.reference_name)):
            for index, record in enumerate(records, 1):
                if not is_utf8(record.id):
                    raise InputError(f"{name}: record {index} has an id that is not UTF-8 text "
                                     f"('{shown(record.id)}'), which --format {formats[0]} cannot hold; the "
                                     "miranda, tsv and bed formats write its bytes as they are")

    def _check_outputs(self) -> None:
        """Hold several outputs as a tuple of :class:`Output` (one output: in ``output`` and
        ``format``, ``outputs`` empty), and check them: known formats, files for the formats that
        need one, compressions that suit their formats, no two outputs to one file or both to
        standard output."""
        outputs = tuple(Output(None if p is None else os.fspath(p), f) for p, f in self.outputs)
        if len(outputs) > 1 and self.output is not None and os.fspath(self.output) != outputs[0].path:
            raise UsageError("give output or outputs, not both")
        if len(outputs) == 1:
            if self.output is not None and os.fspath(self.output) != outputs[0].path:
                raise UsageError("give output or outputs, not both")
            object.__setattr__(self, "output", outputs[0].path)
            object.__setattr__(self, "format", outputs[0].format)
            outputs = ()
        elif len(outputs) > 1:
            object.__setattr__(self, "output", outputs[0].path)
            object.__setattr__(self, "format", outputs[0].format)
        object.__setattr__(self, "outputs", outputs)
        targets = self.targets
        for path, fmt in targets:
            if fmt is None and len(targets) > 1:
                raise UsageError("several outputs need a format each (the DataFrame is a single output)")
            if fmt is not None and fmt not in FORMATS:
                raise UsageError(f"unknown output format '{fmt}' (choose from {', '.join(OUTPUT_FORMATS)})")
            if fmt is not None and FORMATS[fmt].needs_file and is_stdout(path):
                raise UsageError(f"--format {fmt} needs an output file (-o hits{FORMATS[fmt].suffixes[0]})")
            if fmt is not None:
                check_compression(path, fmt, FORMAT_RULES)  # .bgz only for BED, none for Parquet
        if sum(is_stdout(path) for path, _ in targets) > 1:
            raise UsageError("two outputs to standard output (-o -); give each output but one a file")
        same = same_outputs([path for path, _ in targets])
        if same is not None:
            raise UsageError(f"two outputs to the same file: {same}; give each output its own file")

    @property
    def targets(self) -> tuple[Output, ...]:
        """Every output of the job: ``outputs``, or the one of ``output`` and ``format``."""
        if self.outputs:
            return tuple(self.outputs)
        return (Output(None if self.output is None else os.fspath(self.output), self.format),)

    @property
    def formats(self) -> tuple[str | None, ...]:
        """The outputs' formats, each once, in :data:`OUTPUT_FORMATS` order (a partition is
        rendered once per format, whatever the number of outputs in it)."""
        named = {fmt for _, fmt in self.targets}
        return tuple(f for f in (*OUTPUT_FORMATS, None) if f in named)

    def for_output(self, output: Output) -> OutputSpec:
        """What the sink of ``output`` (one of :attr:`targets`) is built from: that output, the
        scan and the settings its format shows (every sink of the job shares the scan input)."""
        return OutputSpec(self.scan_input, output, self.query_name, self.reference_name, self.quiet, self.keyval,
                          self.banner, self.annotation)

    def where(self, **changes: Any) -> ScanJob:
        """The same scan run elsewhere: a copy with other ``cluster``, ``run_dir``, ``threads``,
        ``gpus`` or ``progress`` (as a runner hands the job to its workers; not checked again,
        and the sequences stay as encoded here)."""
        assert set(changes) <= {"cluster", "run_dir", "threads", "gpus", "progress"}, changes
        new = copy.copy(self)
        for name, value in changes.items():
            object.__setattr__(new, name, value)
        return new

    def of_references(self, start: int, stop: int, from_file: bool = False) -> ScanJob:
        """The same scan of references ``start..stop-1`` alone (one GPU's stripe: the references
        indexed from 0 there), as a worker runs it; not checked again. ``from_file``: a worker on
        this machine reads them from the reference file itself, when that is a plain file
        (:class:`~gamut.scanning.fasta.RecordRange`; what it is sent is where they lie)."""
        new = copy.copy(self)
        new.__dict__.pop("scan_input", None)  # the sequences as this job's scan holds them
        kept = list(self.references[start:stop])
        ranged = RecordRange.of(kept) if from_file else None
        object.__setattr__(new, "references", ranged if ranged is not None else kept)
        return new

    @cached_property
    def scan_input(self) -> ScanInput:
        """The sequences and settings as the runners scan them (those of a file not read yet stay so:
        :class:`~gamut.scanning.fasta.FileRecords`). (The compiled scan code is imported here, when
        the job is first scanned or planned, not with the job: see :mod:`~gamut.scanning.pipeline.ahead`.)"""
        from gamut.scanning.pipeline.pairs import ScanInput

        return ScanInput(*(records if isinstance(records, FileRecords) else list(records)
                           for records in (self.queries, self.references)), self.params)

    @property
    def stripable(self) -> bool:
        """Whether the job may run in stripes of the references (on several GPUs): unrestricted and
        without a run directory."""
        return self.run_dir is None and self.params.restrict is None

    @property
    def on_gpu_cluster(self) -> bool:
        """Whether the job runs on a Dask cluster whose workers scan on GPUs."""
        return self.cluster is not None and device_kind(self.device) == "cuda"

    @property
    def partitioned(self) -> bool:
        """Whether the job runs in partitions (on a cluster, on several GPUs, or resumable in a
        run directory)."""
        return self.cluster is not None or self.run_dir is not None or bool(self.gpu_workers)

    @property
    def gpu_workers(self) -> list[int]:
        """The GPU of each worker process of a scan on several (``gpus`` naming several: ``0,1``,
        ``all`` with several GPUs, or one named twice, ``0,0``) here (no ``cluster``):
        :func:`~gamut.scanning.pipeline.lanes.worker_lanes` (two workers on each of several
        distinct GPUs, a list naming one twice as given); empty when the scan runs in this process
        alone (one GPU, or the CPU)."""
        if self.gpus is None or self.cluster is not None or self.device == "cpu":
            return []
        from gamut.cuda import parse_gpus, resolve_device

        if resolve_device(self.device, "scan") != "cuda":
            return []
        gpus = parse_gpus(self.gpus)
        if len(gpus) < 2:
            return []
        from gamut.scanning.pipeline.lanes import worker_lanes

        return worker_lanes(gpus)

    def show_progress(self) -> bool:
        """``progress``, or by default: standard error is a terminal and the run is long."""
        if self.progress is not None:
            return bool(self.progress)
        return sys.stderr.isatty() and self.scan_input.total_cells() > PROGRESS_CELLS


def _records(path: str, later: bool) -> Sequence[SeqRecord]:
    """The records of FASTA file ``path``: when ``later`` and it is a plain file, unread
    (:class:`~gamut.scanning.fasta.FileRecords`); else read now."""
    unread = FileRecords.of(path) if later else None
    return unread if unread is not None else read_miranda_fasta(path)


def device_kind(device: str) -> str:
    """``cuda`` when the workers will scan on GPUs (as far as the client can tell), else ``cpu``."""
    if device in ("cpu", "cuda"):
        return device
    from gamut.cuda import resolve_device

    return resolve_device(device, "scan")


def _readable_file(path: str | os.PathLike, option: str) -> str:
    """``path`` as text, once it is known to be a regular file this process can open for reading
    (not ``-`` or a pipe: each output, and each worker, reads it)."""
    name = os.fspath(path)
    if is_stream(name):
        raise UsageError(f"{option} {name}: not a regular file (each output and worker of the scan reads it); "
                         "save it to a file first")
    if not os.path.exists(name):
        raise UsageError(f"{option} {name}: no such file")
    if os.path.isdir(name):
        raise UsageError(f"{option} {name}: is a directory")
    try:
        with open(name, "rb"):
            pass
    except OSError as exc:
        raise UsageError(f"{option} {name}: cannot read ({exc.strerror or exc})") from None
    return name
