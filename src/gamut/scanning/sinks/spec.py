"""What a sink is built from: one output of a scan and what its format shows, as plain data.

A :class:`~gamut.scanning.pipeline.job.ScanJob` makes one :class:`OutputSpec` per output
(:meth:`~gamut.scanning.pipeline.job.ScanJob.for_output`); the sinks read nothing else of the job
(not where it runs, nor how). This module sits below both: the job imports the sinks' registry to
check its formats, and the sinks import no part of the job.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.pairs import ScanInput


class Output(NamedTuple):
    """One output of a scan: a path (None or ``-``: standard output) and a format name
    (:data:`gamut.scanning.sinks.FORMATS`; None: the API's DataFrame)."""

    path: str | None
    format: str | None


@dataclass(frozen=True, eq=False)
class OutputSpec:
    """One output as its sink sees it: the output, the scan (sequences and settings), the inputs'
    names as miRanda's header shows them (``query_name``, ``reference_name``), miRanda's text modes
    (``quiet``, ``keyval``) and ``banner``, and the ``annotation`` file (BED12, GTF or GFF3 of the
    references' transcripts, for genome coordinates; None without one)."""

    scan_input: ScanInput
    output: Output = Output(None, None)
    query_name: str = "<query>"
    reference_name: str = "<reference>"
    quiet: bool = False
    keyval: bool = False
    banner: str = ""
    annotation: str | None = None

    @property
    def params(self) -> ScanParams:
        """The scan's settings."""
        return self.scan_input.params
