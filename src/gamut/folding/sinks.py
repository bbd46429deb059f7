"""Output formats of ``gamut fold``: one writer per format, by name in :data:`SINKS`.

A writer gives the text that opens the output (:meth:`FoldSink.header`) and the text of each
result (:meth:`FoldSink.record`). A new format is one more class here and one more entry.
"""
from __future__ import annotations

import json
from typing import ClassVar, Protocol

from gamut.folding.api import FoldResult
from gamut.io.outputs import FormatRules


class FoldSink(Protocol):
    """One output format of folding results."""

    name: ClassVar[str]
    #: The output file suffixes that name this format (``--format`` not given).
    suffixes: ClassVar[tuple[str, ...]]
    #: Whether the format shows ``--corner`` blocks.
    shows_corner: ClassVar[bool]

    def header(self) -> str:
        """Text before the first result."""

    def record(self, result: FoldResult) -> str:
        """One result's text."""


class DotBracketSink:
    """FASTA-like: a header line, the sequence, the structure (and the corner as ``#`` lines)."""

    name = "dot-bracket"
    suffixes = (".dbn", ".txt")  # .dbn: dot-bracket notation, as RNAstructure and bpRNA name it
    shows_corner = True

    def header(self) -> str:
        return ""

    def record(self, result: FoldResult) -> str:
        lines = [f">{result.name} length={len(result)} pairs={result.pairs} min_loop={result.min_loop} "
                 f"engine={result.engine}", result.sequence]
        if result.structure is not None:
            lines.append(result.structure)
        if result.corner is not None:
            k = result.corner.shape[0]
            n = len(result)
            lines.append(f"# corner: C(i, j) = pairs in positions i..j (1-based), rows i = 1..{k}, "
                         f"columns j = {n - k + 1}..{n}")
            lines += ["# " + " ".join(str(int(v)) for v in row) for row in result.corner]
        return "\n".join(lines) + "\n"


class TsvSink:
    """A table with a header line, one row per result."""

    name = "tsv"
    suffixes = (".tsv",)
    shows_corner = False

    def header(self) -> str:
        return "name\tlength\tpairs\tmin_loop\tengine\tstructure\n"

    def record(self, result: FoldResult) -> str:
        return "\t".join(str(x) for x in (result.name, len(result), result.pairs, result.min_loop, result.engine,
                                          result.structure or "")) + "\n"


class JsonlSink:
    """One JSON object per line."""

    name = "jsonl"
    suffixes = (".jsonl",)
    shows_corner = True

    def header(self) -> str:
        return ""

    def record(self, result: FoldResult) -> str:
        record = {"name": result.name, "length": len(result), "pairs": result.pairs, "min_loop": result.min_loop,
                  "engine": result.engine, "sequence": result.sequence, "structure": result.structure}
        if result.corner is not None:
            record["corner"] = result.corner.tolist()
        return json.dumps(record) + "\n"


SINKS: dict[str, type[FoldSink]] = {sink.name: sink for sink in (DotBracketSink, TsvSink, JsonlSink)}
#: How output names choose the format (:func:`gamut.io.outputs.format_for_output`): by suffix,
#: under a compression suffix (``out.tsv.gz``).
FORMAT_RULES = FormatRules({suffix: name for name, sink in SINKS.items() for suffix in sink.suffixes})
DEFAULT_FORMAT = DotBracketSink.name
