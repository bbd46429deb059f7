"""Outputs of ``gamut splice``: one writer per output, by name in :data:`SINKS`.

Each writer has the command-line option that names its file (``option``: the attribute of the
parsed arguments) and writes every case's result there. A new output is one more class here,
one more entry and its option in :mod:`gamut.splicing.cli`.
"""
from __future__ import annotations

from typing import IO, ClassVar, Protocol, Sequence

from gamut.splicing.files import FileCase
from gamut.splicing.report import format_report, table_rows, write_gff3, write_table
from gamut.splicing.result import SpliceResult


class SpliceSink(Protocol):
    """One output of spliced-alignment results."""

    name: ClassVar[str]
    option: ClassVar[str]

    def write(self, handle: IO[str], cases: Sequence[FileCase], results: Sequence[SpliceResult]) -> None:
        """Every case's result, in order."""


class ReportSink:
    """The text report: score, chain, CIGAR and (unless ``alignment=False``) the alignment."""

    name = "report"
    option = "output"

    def __init__(self, alignment: bool = True) -> None:
        self.alignment = alignment

    def write(self, handle: IO[str], cases: Sequence[FileCase], results: Sequence[SpliceResult]) -> None:
        for fc, result in zip(cases, results):
            handle.write(format_report(fc.base_name, result, alignment=self.alignment))


class Gff3Sink:
    """The chosen chains as GFF3 (:func:`gamut.splicing.report.write_gff3`)."""

    name = "gff3"
    option = "gff3"

    def write(self, handle: IO[str], cases: Sequence[FileCase], results: Sequence[SpliceResult]) -> None:
        write_gff3(handle, ((fc.base_name, r) for fc, r in zip(cases, results)))


class TableSink:
    """The chosen exons as a TSV table (:data:`gamut.splicing.report.TABLE_COLUMNS`)."""

    name = "table"
    option = "table"

    def write(self, handle: IO[str], cases: Sequence[FileCase], results: Sequence[SpliceResult]) -> None:
        write_table(handle, (row for fc, r in zip(cases, results)
                             for row in table_rows(fc.base_name, r, fc.exon_names)))


SINKS: dict[str, type[SpliceSink]] = {sink.name: sink for sink in (ReportSink, Gff3Sink, TableSink)}
