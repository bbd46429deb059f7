"""``gamut fold``: folding one sequence or a FASTA file of many, by maximum base pairing (Nussinov,
the default: the papers' model) or with ``--model turner`` by minimum free energy as RNAfold
(:mod:`gamut.folding.turner.cli` runs that model)."""
from __future__ import annotations

import argparse
import sys

from gamut.errors import InputError, UsageError, option_errors
from gamut.folding.api import DEFAULT_MIN_LOOP, MODELS, fold, fold_many
from gamut.folding.engines import CHOICES, choose_engine
from gamut.folding.plot import arc_diagram, check_plot_path, plot_paths
from gamut.folding.sinks import DEFAULT_FORMAT, FORMAT_RULES, SINKS
from gamut.folding.turner.options import DANGLES
from gamut.folding.turner.formats import FORMATS as TURNER_SINKS
from gamut.io import atomic_output
from gamut.io.fasta import records_or_sequence
from gamut.io.outputs import check_outputs, format_for_output
from gamut.io.threads import numba_threads, parse_threads
from gamut.numerals import number_type
from gamut.progress import progress_bar


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "fold",
        help="fold RNA: maximum base pairing (Nussinov, default) or minimum free energy (--model turner, "
        "RNAfold's)",
        description="Fold RNA. --model nussinov (the default, the model of the papers gamut reproduces): "
        "the maximum number of AU, GC and GU pairs and one optimal structure in dot-bracket. --model turner: "
        "the minimum free energy and its structure with ViennaRNA's Turner 2004 model, as RNAfold prints them "
        "(-p: the partition function too). INPUT is a FASTA file (.gz allowed) or a sequence.",
    )
    p.add_argument("input", metavar="INPUT", help="FASTA file of one or more records (- for standard input; a pipe also), or a sequence "
                   "such as GGGAAACCC")
    whole = number_type(whole=True)
    p.add_argument("--model", choices=MODELS, default="nussinov",
                   help="nussinov: maximum base pairing (default; the papers' model); turner: minimum free energy "
                   "with ViennaRNA's Turner 2004 parameters, identical to RNAfold (options below marked turner)")
    p.add_argument("--min-loop", type=whole, default=None,
                   help=f"least number of unpaired bases a pair encloses (default {DEFAULT_MIN_LOOP}, the papers' "
                   "variant that forbids adjacent pairs; 3 is the usual hairpin minimum; 0 allows adjacent pairs)")
    p.add_argument("--engine", choices=CHOICES, default="auto",
                   help="gpu, or a CPU engine: blocked (tiled, multicore, default on CPU), multicore (OMP2), "
                   "cpu2 (cache-efficient) or cpu1 (naive) (default auto)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="cuda runs the GPU engine; auto uses it when a CUDA GPU and CuPy are present, "
                   "else the CPU (default auto)")
    p.add_argument("-o", "--output", default="-",
                   help="output file (default: standard output); written atomically, never onto the input; "
                   "compressed when it ends in .gz, .zst, .bz2 or .xz")
    p.add_argument("--format", choices=tuple(dict.fromkeys((*SINKS, *TURNER_SINKS))), default=None,
                   help="nussinov: dot-bracket (FASTA-like: header, sequence, structure), tsv or jsonl (default: "
                   "the output's suffix, .dbn or .txt, .tsv, .jsonl; standard output or no suffix: dot-bracket); "
                   "turner: rnafold (RNAfold's own text; .fold or .txt), tsv, jsonl or parquet; another suffix is "
                   "an error")
    p.add_argument("--no-structure", action="store_true", help="report the score only (skip the traceback)")
    p.add_argument("--corner", type=whole, default=0, metavar="K",
                   help="also report the top-right K x K block of the score matrix (for inspection)")
    p.add_argument("--plot", metavar="FILE",
                   help="arc diagram (.png, .svg or .pdf); with several records, one file per record named FILE "
                   "with the record name before the suffix (names that give the same file get _2, _3, ...)")
    p.add_argument("--threads", default=None, metavar="N",
                   help="CPU threads of the CPU engines (turner: ViennaRNA processes), at least 1 (default: all cores)")
    turner = p.add_argument_group("--model turner (RNAfold's options; defaults as RNAfold's)")
    turner.add_argument("-T", "--temperature", type=number_type(), default=None, metavar="C",
                        help="temperature in degrees C (default 37)")
    turner.add_argument("-d", "--dangles", type=whole, choices=DANGLES, default=None,
                        help="dangling ends: 2 (on both sides of every helix, RNAfold's default) or 0 (none)")
    turner.add_argument("--noLP", action="store_true", default=None, dest="no_lp",
                        help="no lonely pairs (helices of one pair)")
    turner.add_argument("--max-bp-span", type=whole, default=None, metavar="N",
                        help="pairs span at most N positions (default: no limit)")
    turner.add_argument("-p", "--partition", action="store_true", default=None,
                        help="also the partition function: RNAfold's -p lines (ensemble energy, centroid, MFE "
                        "frequency, diversity) and the pair probabilities for --pairs and --dot-plot")
    turner.add_argument("--pairs", metavar="FILE",
                        help="with -p: base-pair probabilities as a table (name, i, j, p; 1-based; TSV)")
    turner.add_argument("--pairs-cutoff", type=number_type(at_least=0), default=None, metavar="P",
                        help="least probability --pairs lists and --dot-plot draws (default 1e-5, as RNAfold's dot plot)")
    turner.add_argument("--dot-plot", metavar="FILE",
                        help="with -p: dot plot (.png, .svg or .pdf): pair probabilities upper right, MFE pairs lower "
                        "left; one file per record as --plot")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: on in a terminal for several records, or for one "
                   "sequence long enough to take seconds on the CPU)")
    p.set_defaults(func=lambda args: run(args, p))


def _fold_records(records: list[tuple[str, str]], args: argparse.Namespace):
    """Results in input order: one record alone, several in batches (short ones on a batch engine)."""
    options = dict(engine=args.engine, traceback=not args.no_structure, corner=args.corner)
    if len(records) == 1:  # its own bar: the fill's progress (long sequences in a terminal by default)
        name, sequence = records[0]
        yield fold(sequence, args.min_loop, args.device, name=name, progress=args.progress, **options)
    else:  # one bar over the records (rich shows one bar at a time)
        yield from fold_many(records, args.min_loop, args.device, progress=False, **options)


#: The options of --model turner alone, and their attributes (None when not given).
TURNER_OPTIONS = (("-T/--temperature", "temperature"), ("-d/--dangles", "dangles"), ("--noLP", "no_lp"),
                  ("--max-bp-span", "max_bp_span"), ("-p/--partition", "partition"), ("--pairs", "pairs"),
                  ("--pairs-cutoff", "pairs_cutoff"), ("--dot-plot", "dot_plot"))


def check_options(args: argparse.Namespace) -> None:
    """Every option on its own and together, before any input is read: :class:`UsageError`.
    Sets ``args.format`` (from the output's suffix when not given) and ``args.threads`` (a count)."""
    given = [option for option, attribute in TURNER_OPTIONS if getattr(args, attribute, None) is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: for --model turner (the Nussinov model takes none of these)")
    if args.format is not None and args.format not in SINKS:
        raise UsageError(f"--format {args.format} is for --model turner (nussinov: {', '.join(SINKS)})")
    if args.min_loop is None:
        args.min_loop = DEFAULT_MIN_LOOP
    args.format = format_for_output(args.output, args.format, FORMAT_RULES, DEFAULT_FORMAT)
    for option, value in (("--min-loop", args.min_loop), ("--corner", args.corner)):
        if value < 0:
            raise UsageError(f"{option} must be >= 0, got {value}")
    if args.corner and not SINKS[args.format].shows_corner:
        shown = " and ".join(name for name, sink in SINKS.items() if sink.shows_corner)
        raise UsageError(f"--corner is shown in the {shown} formats, not {args.format}")
    if args.plot is not None:
        if args.no_structure:
            raise UsageError("--plot needs the structure: drop --no-structure")
        check_plot_path(args.plot)
    args.threads = parse_threads(args.threads)
    if args.engine != "auto" and args.device != "auto":
        choose_engine(args.engine, args.device)  # a CPU engine with --device cuda, or gpu with cpu


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """``gamut fold``: a bad option is reported through ``parser`` (exit status 2) when given."""
    if getattr(args, "model", "nussinov") == "turner":
        from gamut.folding.turner.cli import run as run_turner

        return run_turner(args, parser)
    check_outputs([args.output], [args.input])  # before any work (a sequence given inline is no file)
    with option_errors(parser):
        check_options(args)
    records = records_or_sequence(args.input)
    plots = plot_paths(args.plot, [name for name, _ in records]) if args.plot else []
    show = len(records) > 1 and (args.progress if args.progress is not None else sys.stderr.isatty())
    sink = SINKS[args.format]()
    with atomic_output(args.output, "w") as out:
        out.write(sink.header())
        with progress_bar("folding records", len(records), show) as advance:
            try:
                with numba_threads(args.threads):
                    for index, result in enumerate(_fold_records(records, args)):
                        out.write(sink.record(result))
                        if plots:
                            arc_diagram(result, plots[index])
                        advance(1)
            except InputError as exc:
                if len(records) == 1 and records[0][0] == "sequence":
                    raise
                raise InputError(f"{args.input}: record {exc}") from None
    return 0


__all__ = ["check_options", "register", "run"]
