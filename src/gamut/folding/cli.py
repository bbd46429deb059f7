"""``gamut fold``: Nussinov folding of one sequence or a FASTA file of many."""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

from gamut.errors import InputError, UsageError
from gamut.folding.api import DEFAULT_MIN_LOOP, ENGINES, FoldResult, fold, fold_many
from gamut.folding.plot import arc_diagram, check_plot_path
from gamut.io import atomic_output, read_fasta
from gamut.io.outputs import check_outputs, format_for_output
from gamut.io.threads import numba_threads, parse_threads
from gamut.progress import progress_bar

FORMATS = ("dot-bracket", "tsv", "jsonl")
#: The format an output file's suffix names when --format is not given.
FORMAT_BY_SUFFIX = {".tsv": "tsv", ".jsonl": "jsonl"}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "fold",
        help="fold RNA by maximising base pairs (Nussinov), with traceback",
        description="Fold RNA with Nussinov's recurrence: the maximum number of AU, GC and GU pairs and "
        "one optimal structure in dot-bracket. INPUT is a FASTA file (.gz allowed) or a sequence.",
    )
    p.add_argument("input", metavar="INPUT", help="FASTA file of one or more records, or a sequence such as GGGAAACCC")
    p.add_argument("--min-loop", type=int, default=DEFAULT_MIN_LOOP,
                   help=f"least number of unpaired bases a pair encloses (default {DEFAULT_MIN_LOOP}, the papers' "
                   "variant that forbids adjacent pairs; 3 is the usual hairpin minimum; 0 allows adjacent pairs)")
    p.add_argument("--engine", choices=ENGINES, default="auto",
                   help="gpu, or a CPU engine: blocked (tiled, multicore, default on CPU), multicore (OMP2), "
                   "cpu2 (cache-efficient) or cpu1 (naive) (default auto)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="cuda runs the GPU engine; auto uses it when a CUDA GPU and CuPy are present, "
                   "else the CPU (default auto)")
    p.add_argument("-o", "--output", default="-",
                   help="output file (default: standard output); written atomically, never onto the input")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="dot-bracket (FASTA-like: header, sequence, structure), tsv or jsonl (default: the "
                   "output's suffix, .tsv or .jsonl; else dot-bracket)")
    p.add_argument("--no-structure", action="store_true", help="report the score only (skip the traceback)")
    p.add_argument("--corner", type=int, default=0, metavar="K",
                   help="also report the top-right K x K block of the score matrix (for inspection)")
    p.add_argument("--plot", metavar="FILE",
                   help="arc diagram (.png, .svg or .pdf); with several records, one file per record named FILE "
                   "with the record name before the suffix (names that give the same file get _2, _3, ...)")
    p.add_argument("--threads", default=None, metavar="N",
                   help="CPU threads of the CPU engines, at least 1 (default: all cores)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: on in a terminal for several records, or for one "
                   "sequence long enough to take seconds on the CPU)")
    p.set_defaults(func=run)


def _records(source: str) -> list[tuple[str, str]]:
    """FASTA records of the file ``source``, or ``source`` itself when it is no file and looks like a sequence."""
    if os.path.exists(source) or "." in source or os.sep in source or not source:
        # unique: results (and plot files) are known by the record name
        return [(rec.name, rec.sequence) for rec in read_fasta(source, unique=True)]
    return [("sequence", source)]


def _plot_paths(template: str, names: list[str]) -> list[str]:
    """One plot file per record: ``template`` alone for one record, else the record name (made safe
    for a file name) before the suffix. Names that become the same file name get ``_2``, ``_3``, ...
    in input order, so that no plot overwrites another."""
    if len(names) == 1:
        return [template]
    stem, suffix = os.path.splitext(template)
    used: set[str] = set()
    paths = []
    for name in names:
        safe = candidate = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
        number = 1
        while candidate in used:
            number += 1
            candidate = f"{safe}_{number}"
        used.add(candidate)
        paths.append(f"{stem}.{candidate}{suffix}")
    return paths


def format_result(result: FoldResult, fmt: str) -> str:
    """One result as text in ``fmt`` (``dot-bracket``, ``tsv`` or ``jsonl``)."""
    if fmt == "jsonl":
        record = {"name": result.name, "length": len(result), "pairs": result.pairs, "min_loop": result.min_loop,
                  "engine": result.engine, "sequence": result.sequence, "structure": result.structure}
        if result.corner is not None:
            record["corner"] = result.corner.tolist()
        return json.dumps(record) + "\n"
    if fmt == "tsv":
        return "\t".join(str(x) for x in (result.name, len(result), result.pairs, result.min_loop, result.engine,
                                          result.structure or "")) + "\n"
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


def _fold_records(records: list[tuple[str, str]], args: argparse.Namespace):
    """Results in input order: one record alone, several in batches (short ones on a batch engine)."""
    options = dict(engine=args.engine, traceback=not args.no_structure, corner=args.corner)
    if len(records) == 1:  # its own bar: the fill's progress (long sequences in a terminal by default)
        name, sequence = records[0]
        yield fold(sequence, args.min_loop, args.device, name=name, progress=args.progress, **options)
    else:  # one bar over the records (rich shows one bar at a time)
        yield from fold_many(records, args.min_loop, args.device, progress=False, **options)


def run(args: argparse.Namespace) -> int:
    check_outputs([args.output], [args.input])  # before any work (a sequence given inline is no file)
    args.format = format_for_output(args.output, args.format, FORMAT_BY_SUFFIX, "dot-bracket")
    if args.corner < 0:
        raise UsageError("--corner must be >= 0")
    if args.corner and args.format == "tsv":
        raise UsageError("--corner is shown in the dot-bracket and jsonl formats, not tsv")
    if args.plot and args.no_structure:
        raise UsageError("--plot needs the structure: drop --no-structure")
    threads = parse_threads(args.threads)
    if args.plot:
        check_plot_path(args.plot)
    records = _records(args.input)
    plots = _plot_paths(args.plot, [name for name, _ in records]) if args.plot else []
    show = len(records) > 1 and (args.progress if args.progress is not None else sys.stderr.isatty())
    with atomic_output(args.output, "w") as out:
        if args.format == "tsv":
            out.write("name\tlength\tpairs\tmin_loop\tengine\tstructure\n")
        with progress_bar("folding records", len(records), show) as advance:
            try:
                with numba_threads(threads):
                    for index, result in enumerate(_fold_records(records, args)):
                        out.write(format_result(result, args.format))
                        if plots:
                            arc_diagram(result, plots[index])
                        advance(1)
            except InputError as exc:
                if len(records) == 1 and records[0][0] == "sequence":
                    raise
                raise InputError(f"{args.input}: record {exc}") from None
    return 0


__all__ = ["FORMATS", "format_result", "register", "run"]
