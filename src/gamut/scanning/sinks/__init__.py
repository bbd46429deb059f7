"""The scan's output formats: one :class:`~gamut.scanning.sinks.base.Sink` class per format, by name.

A new format is a module here with a sink class (see :mod:`gamut.scanning.sinks.bed`) and one
line in :data:`FORMATS`; the command line, the Python API and every runner (one process,
partitions, a Dask cluster) take it from there. Modules are imported when their format is used.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, NamedTuple

from gamut.io.outputs import FormatRules

if TYPE_CHECKING:
    from gamut.scanning.sinks.base import Sink


class Format(NamedTuple):
    """Where a format's sink class lives, the output file suffixes that name the format, whether
    tabix indexes it (then ``.bgz`` writes it as BGZF), whether it compresses inside (then it
    takes no compression suffix), whether it cannot go to standard output (it needs a file it can
    seek in) and whether it holds text as UTF-8 only (JSON, Parquet: ids whose bytes are not UTF-8
    cannot be written; the text formats write a header's bytes as they came). A job checks its
    outputs from here, without importing the sinks."""

    module: str
    cls: str
    suffixes: tuple[str, ...] = ()
    tabix: bool = False
    self_compressed: bool = False
    needs_file: bool = False
    utf8_only: bool = False


#: Output formats by name, in the order the command line lists them.
FORMATS: dict[str, Format] = {
    "miranda": Format("gamut.scanning.sinks.miranda", "MirandaSink", (".txt", ".miranda")),
    "tsv": Format("gamut.scanning.sinks.table", "TsvSink", (".tsv",)),
    "jsonl": Format("gamut.scanning.sinks.table", "JsonlSink", (".jsonl",), utf8_only=True),
    "parquet": Format("gamut.scanning.sinks.parquet", "ParquetSink", (".parquet",), self_compressed=True,
                      needs_file=True, utf8_only=True),
    "bed": Format("gamut.scanning.sinks.bed12", "Bed12Sink", (".bed",), tabix=True),
    "bed6": Format("gamut.scanning.sinks.bed", "BedSink", (".bed6",), tabix=True),
}
#: The Python API's table (:func:`gamut.scan`): a sink, but no file format.
FRAME = Format("gamut.scanning.sinks.frame", "FrameSink")

OUTPUT_FORMATS = tuple(FORMATS)
#: The format an output file's suffix names when no format is given.
FORMAT_BY_SUFFIX = {suffix: name for name, spec in FORMATS.items() for suffix in spec.suffixes}
#: How output names choose formats and compression (:func:`gamut.io.outputs.format_for_output`).
FORMAT_RULES = FormatRules(FORMAT_BY_SUFFIX, frozenset(n for n, f in FORMATS.items() if f.tabix),
                           frozenset(n for n, f in FORMATS.items() if f.self_compressed))


def sink_class(name: str | None) -> type[Sink]:
    """The sink class of format ``name`` (``None``: the API's DataFrame)."""
    spec = FRAME if name is None else FORMATS[name]
    return getattr(importlib.import_module(spec.module), spec.cls)
