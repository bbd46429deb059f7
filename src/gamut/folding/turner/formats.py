"""The output formats of ``gamut fold --model turner`` by name, and the file suffixes that name
them (the writers are :mod:`gamut.folding.turner.sinks`; this module stays light, for the
command line's parser)."""
from __future__ import annotations

from gamut.io.outputs import FormatRules

#: Format name -> the output suffixes that choose it when ``--format`` is not given.
FORMATS: dict[str, tuple[str, ...]] = {
    "rnafold": (".fold", ".txt"),  # RNAfold's own text (RNAfold --outfile writes NAME.fold)
    "tsv": (".tsv",),
    "jsonl": (".jsonl",),
    "parquet": (".parquet",),
}
#: How output names choose the format (:func:`gamut.io.outputs.format_for_output`): by suffix,
#: under a compression suffix (``out.tsv.gz``); Parquet compresses inside.
FORMAT_RULES = FormatRules({suffix: name for name, suffixes in FORMATS.items() for suffix in suffixes},
                           self_compressed=frozenset({"parquet"}))
DEFAULT_FORMAT = "rnafold"
