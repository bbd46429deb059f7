"""Outputs of ``gamut splice``: one writer per output, by name in :data:`SINKS`.

Each writer has the command-line option that names its file (``option``: the attribute of the
parsed arguments) and writes every case's result there. A new output is one more class here,
one more entry and its option in :mod:`gamut.splicing.cli`.
"""
from __future__ import annotations

from typing import IO, ClassVar, Protocol, Sequence

from gamut.io.outputs import FormatRules
from gamut.splicing.files import FileCase
from gamut.splicing.report import format_report, table_rows, write_gff3, write_table
from gamut.splicing.result import SpliceResult


class SpliceSink(Protocol):
    """One output of spliced-alignment results."""

    name: ClassVar[str]
    option: ClassVar[str]
    #: The output file suffixes of this output's format (another output's suffix is an error).
    suffixes: ClassVar[tuple[str, ...]]

    def write(self, handle: IO[str], cases: Sequence[FileCase], results: Sequence[SpliceResult]) -> None:
        """Every case's result, in order."""


class ReportSink:
    """The text report: score, chain, CIGAR and (unless ``alignment=False``) the alignment."""

    name = "report"
    option = "output"
    suffixes = (".txt",)

    def __init__(self, alignment: bool = True) -> None:
        self.alignment = alignment

    def write(self, handle: IO[str], cases: Sequence[FileCase], results: Sequence[SpliceResult]) -> None:
        for fc, result in zip(cases, results):
            handle.write(format_report(fc.base_name, result, alignment=self.alignment))


class Gff3Sink:
    """The chosen chains as GFF3 (:func:`gamut.splicing.report.write_gff3`)."""

    name = "gff3"
    option = "gff3"
    suffixes = (".gff3", ".gff")

    def write(self, handle: IO[str], cases: Sequence[FileCase], results: Sequence[SpliceResult]) -> None:
        write_gff3(handle, ((fc.base_name, r) for fc, r in zip(cases, results)))


class TableSink:
    """The chosen exons as a TSV table (:data:`gamut.splicing.report.TABLE_COLUMNS`)."""

    name = "table"
    option = "table"
    suffixes = (".tsv",)

    def write(self, handle: IO[str], cases: Sequence[FileCase], results: Sequence[SpliceResult]) -> None:
        write_table(handle, (row for fc, r in zip(cases, results)
                             for row in table_rows(fc.base_name, r, fc.exon_names)))


SINKS: dict[str, type[SpliceSink]] = {sink.name: sink for sink in (ReportSink, Gff3Sink, TableSink)}
#: How the outputs' names are checked (:func:`gamut.io.outputs.format_for_output`): each option
#: writes its format, compressed under a compression suffix (``.bgz``, BGZF: GFF3, which tabix
#: indexes once sorted); a suffix of another output's format is an error.
FORMAT_RULES = FormatRules({suffix: name for name, sink in SINKS.items() for suffix in sink.suffixes},
                           tabix=frozenset({Gff3Sink.name}))
