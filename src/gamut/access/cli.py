"""``gamut access``: the accessibility of every record of a FASTA file (or of one sequence)."""
from __future__ import annotations

import argparse
import sys

from gamut.access.model import DEFAULT_MAX_UNPAIRED, DEFAULT_SPAN, DEFAULT_WINDOW, AccessParams
from gamut.access.sinks import DEFAULT_FORMAT, FORMAT_RULES, SINKS
from gamut.cuda.device import resolve_device
from gamut.errors import UsageError, option_errors
from gamut.io import atomic_output
from gamut.io.fasta import records_or_sequence
from gamut.io.outputs import check_outputs, format_for_output, is_stdout
from gamut.io.threads import parse_threads
from gamut.numerals import number_type
from gamut.progress import progress_bar


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "access",
        help="site accessibility: probabilities that stretches are unpaired, and opening energies (RNAplfold)",
        description="For every position and stretch length u, the probability that the u letters ending there "
        "are unpaired under ViennaRNA's local partition function (RNAplfold -W -L -u; Turner 2004, 37 C), and "
        "the opening energy -RT ln P (kcal/mol). INPUT is a FASTA file (.gz allowed) or a sequence.",
    )
    p.add_argument("input", metavar="INPUT", help="FASTA file of one or more records (- for standard input; a pipe also), or a sequence")
    whole = number_type(whole=True)
    p.add_argument("-W", "--window", type=whole, default=DEFAULT_WINDOW,
                   help=f"window of the local partition function (default {DEFAULT_WINDOW})")
    p.add_argument("-L", "--span", type=whole, default=DEFAULT_SPAN,
                   help=f"longest base-pair span (default {DEFAULT_SPAN})")
    p.add_argument("-u", "--max-unpaired", type=whole, default=DEFAULT_MAX_UNPAIRED,
                   help=f"longest stretch length u (default {DEFAULT_MAX_UNPAIRED})")
    p.add_argument("-o", "--output", default="-",
                   help="output file (default: standard output); written atomically, never onto the input; "
                   "tsv and lunp are compressed when it ends in .gz, .zst, .bz2 or .xz")
    p.add_argument("--format", choices=tuple(SINKS), default=None,
                   help="tsv (one row per position and u), parquet, or lunp (RNAplfold's _lunp layout) "
                   "(default: the output's suffix, .tsv, .parquet, .lunp; standard output or no suffix: tsv; "
                   "another suffix is an error)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="cpu: ViennaRNA on every core; cuda: gamut's kernels on the GPU (the same numbers); "
                   "auto: the GPU where one is usable (default)")
    p.add_argument("--threads", default=None, metavar="N", help="processes, at least 1 (default: all cores)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: on in a terminal for several records)")
    p.set_defaults(func=lambda args: run(args, p))


def check_options(args: argparse.Namespace) -> AccessParams:
    """Every option, before any input is read (:class:`UsageError`); sets ``args.format``, ``args.threads``
    and ``args.device`` (resolved: ``cpu`` or ``cuda``)."""
    args.format = format_for_output(args.output, args.format, FORMAT_RULES, DEFAULT_FORMAT)
    if args.format == "parquet" and is_stdout(args.output):
        raise UsageError("--format parquet needs an output file (-o FILE)")
    args.threads = parse_threads(args.threads)
    args.device = resolve_device(args.device, "access")  # --device cuda without a GPU: an error now
    return AccessParams(args.window, args.span, args.max_unpaired)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """``gamut access``: a bad option is reported through ``parser`` (exit status 2) when given."""
    from gamut.access.api import Accessibility
    from gamut.access.engines import make_folder

    check_outputs([args.output], [args.input])  # before any work (a sequence given inline is no file)
    with option_errors(parser):
        params = check_options(args)
    records = records_or_sequence(args.input)
    show = len(records) > 1 and (args.progress if args.progress is not None else sys.stderr.isatty())
    sink = SINKS[args.format]()
    folder = make_folder(params, args.device, args.threads)
    with atomic_output(args.output, sink.mode) as out, folder, \
            progress_bar(f"accessibility [{folder.name}]", len(records), show, unit="records") as advance:
        sink.start(out)
        for part in folder.record_groups(records):  # memory bounded, output in input order
            for (name, seq), up in zip(part, folder.fold([s for _, s in part])):
                sink.write(Accessibility(name, seq, params, up))
            advance(len(part))
        sink.close()
    return 0


__all__ = ["check_options", "register", "run"]
