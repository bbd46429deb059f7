"""``gamut fold --model turner``: minimum free energy folding (and with ``-p`` the partition
function) of a sequence or a FASTA file, written as RNAfold writes it or as rows.

Every option and output path is checked, and every record read and checked (letters, empty
records, memory), before anything is written; outputs appear whole or not at all
(:func:`gamut.io.atomic_outputs`)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np
from numba import njit

from gamut.errors import InputError, UsageError, option_errors
from gamut.folding.turner.formats import DEFAULT_FORMAT, FORMAT_RULES
from gamut.folding.turner.options import TurnerOptions
from gamut.io.fasta import is_inline_sequence
from gamut.io.outputs import check_outputs, format_for_output, same_outputs
from gamut.io.threads import parse_threads

#: Records folded and written at a time: at most this many, this many letters, and (with ``-p``)
#: this many bytes of pair probabilities; on the CPU also about this many seconds of every core.
CHUNK_RECORDS = 1 << 20
CHUNK_LETTERS = 1 << 26
CHUNK_PROBABILITY_BYTES = 1 << 30
CHUNK_CPU_SECONDS = 4.0
#: --pairs-cutoff's default: RNAfold's dot plot leaves out pairs below it too.
DEFAULT_PAIRS_CUTOFF = 1e-5

#: Nussinov's options, refused with --model turner: (shown, attribute, value when not given).
NUSSINOV_OPTIONS = (("--min-loop", "min_loop", None), ("--engine", "engine", "auto"),
                    ("--no-structure", "no_structure", False), ("--corner", "corner", 0), ("--plot", "plot", None))


def check_options(args: argparse.Namespace) -> TurnerOptions:
    """Every option on its own and together, before any input is read (:class:`UsageError`); sets
    ``args.format``, ``args.threads`` and ``args.pairs_cutoff``; returns the model's options."""
    given = [shown for shown, attribute, unset in NUSSINOV_OPTIONS if getattr(args, attribute, unset) != unset]
    if given:
        raise UsageError(f"{', '.join(given)}: options of --model nussinov, not of --model turner")
    if args.format == "dot-bracket":
        raise UsageError("--format dot-bracket is for --model nussinov (turner: rnafold, tsv, jsonl, parquet)")
    args.format = format_for_output(args.output, args.format, FORMAT_RULES, DEFAULT_FORMAT)
    options = TurnerOptions(temperature=37.0 if args.temperature is None else float(args.temperature),
                            dangles=2 if args.dangles is None else args.dangles, no_lp=bool(args.no_lp),
                            max_bp_span=-1 if args.max_bp_span is None else args.max_bp_span)
    if not args.partition:
        needs = [shown for shown, value in (("--pairs", args.pairs), ("--dot-plot", args.dot_plot),
                                            ("--pairs-cutoff", args.pairs_cutoff)) if value is not None]
        if needs:
            raise UsageError(f"{', '.join(needs)} need the pair probabilities: add -p")
    args.partition = bool(args.partition)
    args.pairs_cutoff = DEFAULT_PAIRS_CUTOFF if args.pairs_cutoff is None else float(args.pairs_cutoff)
    if args.dot_plot is not None:
        from gamut.folding.plot import check_plot_path

        check_plot_path(args.dot_plot)
    twice = same_outputs([args.output, args.pairs])
    if twice is not None:
        raise UsageError(f"{twice}: the output and --pairs name the same file")
    args.threads = parse_threads(args.threads)
    return options


def read_records(source: str) -> tuple[list[str], Sequence[str], list[str] | None]:
    """Names, sequences (usually :class:`~gamut.io.packed.PackedSequences`) and RNAfold's header
    lines (None for a sequence typed on the command line, which RNAfold prints without one) of
    ``source``."""
    if is_inline_sequence(source):
        return ["sequence"], [source], None
    from gamut.io.fasta_columns import read_fasta_columns

    columns = read_fasta_columns(source)
    return columns.names, columns.sequences, columns.headers


def chunk_bounds(lengths: np.ndarray, device: str, partition: bool, workers: int) -> list[tuple[int, int]]:
    """Consecutive runs of records folded and written at a time (see :data:`CHUNK_RECORDS`)."""
    from gamut.folding.turner.cpu import record_seconds

    n = lengths.astype(np.float64)
    weights = [n / CHUNK_LETTERS]
    if partition:
        weights.append(8 * n * n / CHUNK_PROBABILITY_BYTES)
    if device == "cpu":
        weights.append(record_seconds(lengths, partition) / (CHUNK_CPU_SECONDS * workers))
    load = np.maximum.reduce(weights)
    cuts = np.empty(load.shape[0] + 1, np.int64)
    count = _chunk_cuts(load, CHUNK_RECORDS, cuts)
    edges = cuts[:count].tolist()
    return list(zip(edges[:-1], edges[1:]))


@njit(cache=True, nogil=True)
def _chunk_cuts(load, most, cuts):  # pragma: no cover - compiled
    """Where chunks start, and the end: a record joins the chunk unless it would take its load
    over 1 or its records over ``most`` (a chunk has one record at least). Returns the cuts' count."""
    count = 1
    cuts[0] = 0
    start = 0
    total = 0.0
    for k in range(load.shape[0]):
        if k > start and (total + load[k] > 1.0 or k - start >= most):
            cuts[count] = k
            count += 1
            start = k
            total = 0.0
        total += load[k]
    if start < load.shape[0]:
        cuts[count] = load.shape[0]
        count += 1
    return count


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """``gamut fold --model turner``: a bad option is reported through ``parser`` (exit status 2)."""
    from gamut.folding.turner.api import fold_with
    from gamut.folding.turner.cpu import check_memory
    from gamut.io.threads import usable_cores
    from gamut.folding.turner.engines import make_engine, pick_device
    from gamut.folding.turner.letters import check_letters
    from gamut.folding.turner.sinks import SINKS, PairsSink
    from gamut.io.atomic import atomic_outputs
    from gamut.progress import progress_bar

    check_outputs([args.output, args.pairs], [args.input])  # before any work
    with option_errors(parser):
        options = check_options(args)
    names, sequences, headers = read_records(args.input)
    where = "" if headers is None else f"{args.input}: record "
    try:
        letters, offsets = check_letters(sequences, names)
        lengths = np.diff(offsets)
        device = pick_device(args.device, lengths, args.partition, args.threads)
        if device == "cpu":
            check_memory(lengths, names.__getitem__, args.partition)
    except InputError as exc:
        raise InputError(f"{where}{exc}") from None
    plots = None
    if args.dot_plot is not None:
        from gamut.folding.plot import plot_paths
        from gamut.folding.turner.plot import dot_plot

        plots = plot_paths(args.dot_plot, names)
    workers = args.threads or usable_cores()
    bounds = chunk_bounds(lengths, device, args.partition, workers)
    show = len(names) > 1 and (args.progress if args.progress is not None else sys.stderr.isatty())
    sink = SINKS[args.format]()
    pairs = PairsSink(args.pairs_cutoff) if args.pairs is not None else None
    with atomic_outputs([(args.output, "wb"), (args.pairs, "wb" if pairs else None)], [args.input]) as (out, table):
        sink.start(out, args.partition)
        if pairs is not None:
            pairs.start(table)
        with make_engine(device, args.threads) as engine, \
                progress_bar(f"fold [turner, {engine.name}]", len(names), show, unit="records") as advance:
            for a, b in bounds:
                try:
                    batch = fold_with(engine, sequences[a:b], names[a:b], offsets[a:b + 1] - offsets[a], options,
                                      args.partition, letters[offsets[a]:offsets[b]])
                except InputError as exc:
                    raise InputError(f"{where}{exc}") from None
                sink.write(batch, None if headers is None else headers[a:b])
                if pairs is not None:
                    pairs.write(batch)
                if plots is not None:
                    for k, result in enumerate(batch):
                        dot_plot(result, plots[a + k], cutoff=args.pairs_cutoff)
                advance(b - a)
        sink.close()
    return 0


__all__ = ["check_options", "run"]
