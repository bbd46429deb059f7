"""``gamut scan``: miRNA target scanning with modern options (miRanda 3.3a's exact model)."""
from __future__ import annotations

import argparse
import dataclasses

from gamut.access.model import DEFAULT_SPAN, DEFAULT_WINDOW, PITA_DOWNSTREAM, PITA_UPSTREAM, SiteAccess
from gamut.errors import UsageError, option_errors
from gamut.io.inputs import check_read_once
from gamut.io.outputs import COMPRESSIONS, check_outputs, format_for_output, suffix_format
from gamut.numerals import number, number_type
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.sinks import FORMAT_BY_SUFFIX, FORMAT_RULES, FORMATS, OUTPUT_FORMATS

__all__ = ["FORMAT_BY_SUFFIX", "register", "run"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "scan",
        help="find miRNA target sites (exact miRanda 3.3a model)",
        description="Scan miRNA queries against target sequences with miRanda 3.3a's exact model. "
        "Results are identical to miRanda 3.3a; 'gamut miranda' takes miRanda's own options instead.",
    )
    p.add_argument("queries", help="FASTA file of miRNAs (.gz allowed; - or a pipe also)")
    p.add_argument("references", help="FASTA file of target sequences, e.g. 3'UTRs (.gz allowed; - or a pipe also)")
    p.add_argument("-o", "--output", action="append", default=None, metavar="FILE",
                   help="output file (default: standard output); give -o several times for several outputs "
                   "of one scan (e.g. -o hits.tsv -o hits.bed); written atomically, all together, never onto "
                   f"an input; {'/'.join(COMPRESSIONS)} at the end compresses it (.bgz: BGZF, for BED)")
    suffixes = ", ".join("/".join(spec.suffixes) for spec in FORMATS.values())
    p.add_argument("--format", action="append", choices=OUTPUT_FORMATS, default=None,
                   help=f"miranda (miRanda's text), {', '.join(OUTPUT_FORMATS[1:])} (default: the format the "
                   f"output's suffix names, {suffixes}; standard output or no suffix: tsv; another suffix is "
                   "an error). With several -o: once per -o in the same order, or once for the outputs "
                   "whose suffix names no format")
    s = p.add_argument_group("scoring (miRanda options)")
    real, whole = number_type(), number_type(whole=True)
    s.add_argument("--score-threshold", "-sc", type=real, default=140,
                   help="report hits scoring at least this; a real number (default 140)")
    s.add_argument("--energy-threshold", "-en", type=real, default=1,
                   help="report hits with energy below this, kcal/mol; a real number (default 1)")
    s.add_argument("--scale", type=real, default=4.0, help="seed (miRNA 2-8) score and gap scaling (default 4.0)")
    s.add_argument("--gap-open", type=whole, default=-9, help="gap open penalty, <= 0 (default -9)")
    s.add_argument("--gap-extend", type=whole, default=-4, help="gap extend penalty, <= 0 (default -4)")
    s.add_argument("--strict", action="store_true", help="demand perfect Watson-Crick seed pairing (2-8)")
    s.add_argument("--noenergy", action="store_true", help="skip duplex folding (energies reported as 0)")
    s.add_argument("--energy-model", choices=("miranda", "vienna2004"), default="miranda",
                   help="miranda: exact miRanda 3.3a energies (default); vienna2004: ViennaRNA's defaults")
    s.add_argument("--trim", type=whole, default=0, help="use only the first N letters of each reference")
    s.add_argument("--restrict", metavar="FILE", help="scan only the 'query_id reference_id' pairs in FILE")
    s.add_argument("--site-types", metavar="LIST", default=None,
                   help="report only hits with these seed site types, e.g. 8mer,7mer-m8 "
                   "(types: 8mer, 7mer-m8, 7mer-A1, 6mer, offset-6mer, none)")
    s.add_argument("--annotation", metavar="FILE", default=None,
                   help="BED12, GTF or GFF3 of the references' transcripts (gzip allowed): adds genome "
                   "coordinates to hit tables and BED")
    a = p.add_argument_group("site accessibility (docs/accessibility.md)")
    a.add_argument("--accessibility", action="store_true",
                   help="add each hit's site opening energy dG_open and ddG = energy + dG_open to hit tables "
                   "(ViennaRNA's local partition function of each reference, folded once)")
    a.add_argument("--access-window", type=whole, default=None, metavar="W",
                   help=f"RNAplfold's -W for --accessibility (default {DEFAULT_WINDOW})")
    a.add_argument("--access-span", type=whole, default=None, metavar="L",
                   help=f"RNAplfold's -L for --accessibility (default {DEFAULT_SPAN})")
    a.add_argument("--access-flanks", default=None, metavar="UP,DOWN",
                   help="letters before and after a hit's span that open with it "
                   f"(default {PITA_UPSTREAM},{PITA_DOWNSTREAM}, as PITA)")
    a.add_argument("--ddg-threshold", type=real, default=None, metavar="X",
                   help="with --accessibility: report only hits with ddG <= X (kcal/mol)")
    o = p.add_argument_group("miranda format")
    o.add_argument("--quiet", action="store_true", help="omit per-pair lines without hits")
    o.add_argument("--keyval", action="store_true", help="one key=value line per hit")
    r = p.add_argument_group("compute")
    r.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto uses a CUDA GPU when CuPy and a device are present (default auto)")
    r.add_argument("--threads", default=None, metavar="N", help="CPU threads, at least 1 (default: all cores)")
    r.add_argument("--gpus", default=None, help="GPUs to use: e.g. 0,1 or 'all' (default: the first); several: two worker "
                   "processes on each (GAMUT_WORKERS_PER_GPU), a stripe of the references each")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: on for long runs in a terminal)")
    add_cluster_options(p)
    p.set_defaults(func=lambda args: run(args, p))


def site_access(args: argparse.Namespace) -> SiteAccess | None:
    """The ``--accessibility`` settings (None without it; its other options alone are an error)."""
    given = {"window": args.access_window, "span": args.access_span, "ddg_threshold": args.ddg_threshold}
    if not args.accessibility:
        flags = {"--access-window": args.access_window, "--access-span": args.access_span,
                 "--access-flanks": args.access_flanks, "--ddg-threshold": args.ddg_threshold}
        changed = [flag for flag, value in flags.items() if value is not None]
        if changed:
            raise UsageError(f"{changed[0]} needs --accessibility")
        return None
    if args.access_flanks is not None:
        parts = args.access_flanks.split(",")
        if len(parts) != 2:
            raise UsageError(f"--access-flanks expects two whole numbers UP,DOWN, got '{args.access_flanks}'")
        up, down = (number(part, "--access-flanks", whole=True, at_least=0) for part in parts)
        given.update(upstream=up, downstream=down)
    return SiteAccess(**{name: value for name, value in given.items() if value is not None})


def add_cluster_options(p: argparse.ArgumentParser) -> None:
    """--cluster, --run-dir and the partition sizes (shared by the scan's commands)."""
    c = p.add_argument_group("cluster and resumable runs")
    c.add_argument("--cluster", metavar="ADDR", default=None,
                   help="run on Dask: local:N (N local worker processes; with --device cuda N GPUs, two workers on each) "
                   "or tcp://HOST:PORT of a running scheduler (needs pip install 'gamut-rna[dask]')")
    c.add_argument("--run-dir", metavar="DIR", default=None,
                   help="keep finished partitions in DIR; the same command with the same DIR resumes")
    count = number_type(whole=True, at_least=1)
    c.add_argument("--partition-cells", type=count, default=None,
                   help="cells (query x reference letters) per partition (default 2e9 on CPUs, 3.2e10 on GPUs)")
    c.add_argument("--partition-pairs", type=count, default=None, help="at most this many pairs per partition (200,000)")
    c.add_argument("--retries", type=number_type(whole=True, at_least=0), default=2,
                   help="retries of a failed partition on a cluster (default 2)")


def output_format(output: str | None, explicit: str | None) -> str:
    """The format of ``output`` (:func:`gamut.io.outputs.format_for_output`): the one its suffix
    names, ``explicit`` (--format; a suffix naming another is an error), else tsv for standard
    output and a name without a suffix."""
    return format_for_output(output, explicit, FORMAT_RULES, "tsv")


def output_formats(outputs: list[str] | None, formats: list[str] | None) -> list[tuple[str, str]]:
    """The ``(path, format)`` of each ``-o`` (none: standard output), by the rule of --format:

    - not given: each output's format is the one its suffix names (a compression suffix such as
      ``.gz`` looked under), else tsv for standard output and names without a suffix; a suffix
      no format owns is an error;
    - once per -o: paired in order (a suffix that names another format is an error);
    - once, with several -o: the format of the outputs whose suffix names none (standard output
      included); the others keep their suffix's (and one of them at least must take it);
    - any other count: a one-line error.
    """
    outputs = outputs or ["-"]
    formats = formats or []
    if len(formats) == len(outputs):
        return [(out, output_format(out, fmt)) for out, fmt in zip(outputs, formats)]
    if not formats:
        return [(out, output_format(out, None)) for out in outputs]
    if len(formats) > 1:
        raise UsageError(f"--format given {len(formats)} times for {len(outputs)} outputs (-o): "
                         "give it once, or once per -o in the same order")
    named = [suffix_format(out, FORMAT_RULES) for out in outputs]
    if all(named):
        raise UsageError(f"--format {formats[0]} applies to no output: every -o's suffix names its format "
                         "(give --format once per -o to choose each)")
    return [(out, output_format(out, fmt or formats[0])) for out, fmt in zip(outputs, named)]


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """``gamut scan``: a bad option is reported through ``parser`` (exit status 2) when given."""
    from gamut.scanning.miranda_cli import banner

    options = {"quiet": args.quiet, "keyval": args.keyval, "banner": banner(), "annotation": args.annotation,
               "device": args.device, "threads": args.threads, "gpus": args.gpus, "progress": args.progress,
               "cluster": args.cluster, "run_dir": args.run_dir, "partition_cells": args.partition_cells,
               "partition_pairs": args.partition_pairs, "retries": args.retries}
    inputs = (args.queries, args.references, args.restrict, args.annotation)
    check_outputs(args.output or [], inputs)  # never onto an input: said before what the names mean
    with option_errors(parser):  # every option, before any input is read
        options["outputs"] = output_formats(args.output, args.format)
        params = ScanParams(
            score_threshold=args.score_threshold,
            energy_threshold=args.energy_threshold,
            scale=args.scale,
            gap_open=args.gap_open,
            gap_extend=args.gap_extend,
            strict=args.strict,
            noenergy=args.noenergy,
            trim=args.trim,
            energy_model=args.energy_model,
            site_types=args.site_types,
            site_access=site_access(args),
        )
        ScanJob((), (), params, **options)
        check_read_once(inputs)
    pairs = None
    if args.restrict:
        from gamut.scanning.api import restrict_lines

        pairs = restrict_lines(args.restrict)
        params = dataclasses.replace(params, restrict=frozenset(pairs))
    from gamut.cluster import Connection, PendingConnection, connect_soon
    from gamut.scanning.pipeline.ahead import start_ahead

    # A scheduler address is joined on a thread while the inputs are read; a cluster of GPUs gets its
    # workers' orders once it is joined, before the scan code is imported here (start_ahead).
    options["cluster"] = cluster = connect_soon(args.cluster)
    job = None
    try:
        job = start_ahead(ScanJob.from_files(args.queries, args.references, params, **options))
        from gamut.probes import numba_without_probes

        numba_without_probes()  # (done already unless this scan runs on a cluster: see gamut.cli.main)
        from gamut.scanning.api import run_job, warn_unknown_pairs

        if pairs is not None:
            warn_unknown_pairs(args.restrict, pairs, job.queries, job.references)
        run_job(job)
    finally:
        if isinstance(cluster, PendingConnection):
            cluster.discard()
        if job is not None and isinstance(job.cluster, Connection):  # (closed already by a runner that took it)
            job.cluster.close()
    return 0
