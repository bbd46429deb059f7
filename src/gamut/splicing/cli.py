"""``gamut splice BASE.fa EXONS TARGET.fa``: exact spliced alignment from the command line."""
from __future__ import annotations

import argparse
import sys

from gamut.errors import UsageError, option_errors
from gamut.numerals import number_type
from gamut.splicing.engines import ENGINES
from gamut.splicing.model import DEFAULT_GAP, DEFAULT_MATCH, DEFAULT_MISMATCH, ScoreParams

DESCRIPTION = """\
Gelfand's exact spliced alignment (Nolasco & Moreano): choose the chain of candidate exons of BASE
(in increasing position, not overlapping) whose concatenation best aligns globally to each TARGET
record, with linear gaps. Exons: BED (0-based), GFF3 (1-based; types exon/CDS) or TSV
('seqid start end [name]' or 'start end', 0-based half-open). Prints a report per target (score,
chain, CIGAR, alignment); --gff3 and --table write the chains.

Reads mode (docs/splice.md): gamut splice --genome G.fa --annotation A.gtf|gff3|bed --reads R.fa|fq
[--alignments R.psl|paf|sam] -o chains.tsv|jsonl|parquet|bed|gff3 assigns each read to the exon chain
of its locus that explains it best, and names the annotated transcript it equals (or novel, or
unplaced); without --alignments, minimap2 (mappy) places the reads on --threads threads."""


def register(subparsers) -> None:
    parser = subparsers.add_parser("splice", help="exact spliced alignment (gene prediction)",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    whole = number_type(whole=True)
    parser.add_argument("base", nargs="?", help="base (genomic) FASTA, one or more records")
    parser.add_argument("exons", nargs="?", help="candidate exons: .bed, .gff3 or .tsv (optionally .gz)")
    parser.add_argument("target", nargs="?", help="target FASTA (cDNA); each record is one case")
    reads = parser.add_argument_group("reads mode")
    reads.add_argument("--genome", help="genome FASTA (gzip allowed)")
    reads.add_argument("--annotation", help="transcripts: GTF, GFF3 or BED12 (gzip allowed)")
    reads.add_argument("--reads", help="reads: FASTA or FASTQ (.fq/.fastq; gzip allowed)")
    reads.add_argument("--alignments", help="the reads' alignments to the genome: PSL (BLAT), PAF or SAM (minimap2, STAR, HISAT2); "
                       "without it, minimap2's Python binding places them on --threads threads (pip install mappy)")
    reads.add_argument("--evidence", action="append", default=[], metavar="FILE",
                       help="more candidate exons: a PSL or SAM of alignments (their blocks) or another annotation "
                       "(GTF, GFF3, BED12); repeatable")
    reads.add_argument("--flank", type=whole, default=100, help="genome letters around a locus (default 100)")
    reads.add_argument("--format", choices=("tsv", "jsonl", "parquet", "bed", "gff3"),
                       help="output format (default: the output's suffix, .tsv/.txt, .jsonl, .parquet, "
                       ".bed/.bed12, .gff3/.gff; standard output or no suffix: TSV; another suffix is an error)")
    parser.add_argument("--exon-format", choices=("auto", "bed", "gff3", "tsv"), default="auto")
    parser.add_argument("--feature-type", default=None,
                        help="GFF3/GTF feature types to use as exons (default exon,CDS; in reads mode exon)")
    parser.add_argument("--pairs", help="file of 'target base' lines, needed when BASE has several records")
    parser.add_argument("--match", type=whole, default=DEFAULT_MATCH,
                        help=f"score of a match (default {DEFAULT_MATCH})")
    parser.add_argument("--mismatch", type=whole, default=DEFAULT_MISMATCH,
                        help=f"score of a mismatch, N included (default {DEFAULT_MISMATCH})")
    parser.add_argument("--gap", type=whole, default=DEFAULT_GAP,
                        help=f"score per gap symbol, negative (default {DEFAULT_GAP})")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--engine", choices=tuple(ENGINES), help="force an engine (testing)")
    parser.add_argument("--threads", metavar="N",
                        help="CPU threads, at least 1 (default: all cores): the alignments of batch mode and of reads "
                        "mode on the CPU, and minimap2's placement of reads without --alignments")
    parser.add_argument("--cluster", metavar="ADDR",
                        help="run the cases on Dask: local:N worker processes or tcp://HOST:PORT (pip install 'gamut-rna[dask]')")
    parser.add_argument("-o", "--output", default="-",
                        help="text report (default: standard output); written atomically, never onto an input; "
                        "every output is compressed when its name ends in .gz, .zst, .bz2 or .xz (.bgz: BGZF, "
                        "for GFF3 and BED)")
    parser.add_argument("--gff3", help="write the chosen chains as GFF3")
    parser.add_argument("--table", help="write the chosen exons as a TSV table")
    parser.add_argument("--no-alignment", action="store_true", help="leave the alignment out of the report")
    parser.set_defaults(func=lambda args: run(args, parser))


def check_options(args: argparse.Namespace) -> None:
    """Every option on its own, before any input is read: :class:`UsageError`. Sets
    ``args.threads`` (a count), ``args.params`` (the scores) and ``args.feature_types``."""
    from gamut.io.threads import parse_threads

    args.threads = parse_threads(args.threads)
    if args.gap >= 0:
        raise UsageError(f"--gap must be negative, got {args.gap}")
    try:
        args.params = ScoreParams(args.match, args.mismatch, args.gap)
    except UsageError as exc:
        raise UsageError(f"--match, --mismatch and --gap: {exc}") from None
    args.feature_types = None  # the mode's default
    if args.feature_type is not None:
        args.feature_types = tuple(t for t in args.feature_type.split(",") if t)
        if not args.feature_types:
            raise UsageError(f"--feature-type names no feature type, got '{args.feature_type}'")
    if args.cluster is not None:
        from gamut.cluster import parse_local

        if args.cluster == "local" or args.cluster.startswith("local:"):
            parse_local(args.cluster)
        elif ":" not in args.cluster:
            raise UsageError(f"--cluster expects local:N or a scheduler address like tcp://HOST:PORT, "
                             f"got '{args.cluster}'")


def check_mode(args: argparse.Namespace) -> bool:
    """Whether the command is in reads mode (``--reads``); the options of either mode are complete."""
    reads = ("--genome", "--annotation", "--reads")  # --alignments: optional (minimap2's mappy places reads)
    given = [flag for flag in (*reads, "--alignments") if getattr(args, flag[2:])]
    if args.evidence and not given:
        raise UsageError("--evidence is for reads mode (--genome, --annotation, --reads, --alignments)")
    if not given:
        missing = [name for name in ("base", "exons", "target") if getattr(args, name) is None]
        if missing:
            raise UsageError(f"give BASE EXONS TARGET (missing: {', '.join(missing)}), or reads mode: "
                             f"{' '.join(f + ' FILE' for f in reads)} [--alignments FILE]")
        return False
    if any(flag not in given for flag in reads):
        raise UsageError(f"reads mode needs {', '.join(f for f in reads if f not in given)} too")
    if args.base or args.exons or args.target:
        raise UsageError("reads mode takes no BASE EXONS TARGET arguments")
    if args.flank < 0:
        raise UsageError(f"--flank must be >= 0, got {args.flank}")
    if args.cluster is not None or args.gff3 or args.table:
        raise UsageError("reads mode writes its chains with -o (--format); --cluster, --gff3 and --table are "
                         "for BASE EXONS TARGET")
    return True


def check_output_names(args: argparse.Namespace) -> None:
    """Each output of BASE EXONS TARGET (-o, --gff3, --table) in its option's format: a suffix that
    names another output's format is a :class:`UsageError` (a compression suffix compresses it)."""
    from gamut.io.outputs import format_for_output
    from gamut.splicing.sinks import FORMAT_RULES, SINKS

    for name, sink in SINKS.items():
        path = getattr(args, sink.option)
        flag = "-o" if sink.option == "output" else f"--{sink.option}"
        if path:
            format_for_output(path, name, FORMAT_RULES, name, chosen_by=f"the {name} that {flag} writes")


def run_reads(args: argparse.Namespace) -> int:
    """Reads mode: every read's chain and transcript, written to ``-o`` (see :mod:`gamut.splicing.reads`)."""
    from gamut.io.annotation import read_annotation
    from gamut.io.fasta import read_fasta, sequence_file_format
    from gamut.io.outputs import check_outputs
    from gamut.progress import progress_bar
    from gamut.splicing.read_outputs import read_output_format, write_read_chains
    from gamut.splicing.reads import assign_reads, evidence_exons, read_placements

    check_outputs([args.output], (args.genome, args.annotation, args.reads, args.alignments, *args.evidence))
    fmt = read_output_format(args.output, args.format)
    genome = {r.name: r.sequence.upper() for r in read_fasta(args.genome, unique=True)}
    annotation = read_annotation(args.annotation, features=args.feature_types or ("exon",))
    # Any case: the reads are encoded case-blind. Read as they are placed and aligned, batch by batch.
    reads = ((r.name, r.sequence) for r in read_fasta(args.reads, unique=True,
                                                       fileformat=sequence_file_format(args.reads)))
    if args.alignments:
        placements = read_placements(args.alignments)
        many = len(placements) > 100
    else:
        from gamut.splicing.read_mapping import ReadMapper

        placements, many = ReadMapper(args.genome, args.threads, genome=genome), True  # minimap2 on --threads threads
    evidence = [exon for path in args.evidence for exon in evidence_exons(path)]
    with progress_bar("reads to exon chains", None, many and sys.stderr.isatty(), unit="reads") as advance:
        chains = assign_reads(genome, annotation, reads, placements, flank=args.flank, device=args.device,
                              threads=args.threads, progress=advance, evidence=evidence, match=args.match,
                              mismatch=args.mismatch, gap=args.gap)
    write_read_chains(chains, args.output, fmt)
    counts: dict[str, int] = {}
    for c in chains:
        kind = c.transcript if c.transcript in ("novel", "unplaced") else "annotated"
        counts[kind] = counts.get(kind, 0) + 1
    print(f"gamut splice: {len(chains):,} reads: {counts.get('annotated', 0):,} equal an annotated transcript, "
          f"{counts.get('novel', 0):,} novel chains, {counts.get('unplaced', 0):,} unplaced "
          "(no alignment, or no locus there)", file=sys.stderr)
    return 0


def run(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> int:
    """``gamut splice``: a bad option is reported through ``parser`` (exit status 2) when given."""
    from gamut.progress import progress_bar
    from gamut.io import atomic_output
    from gamut.io.outputs import check_outputs
    from gamut.splicing.api import splice_many
    from gamut.splicing.files import load_cases
    from gamut.splicing.sinks import SINKS, ReportSink

    from gamut.io.inputs import check_read_once

    with option_errors(parser):
        check_options(args)
        reads_mode = check_mode(args)
        check_read_once((args.genome, args.annotation, args.reads, args.alignments, *args.evidence) if reads_mode
                        else (args.base, args.exons, args.target, args.pairs))
    if reads_mode:
        return run_reads(args)
    check_outputs([getattr(args, sink.option) for sink in SINKS.values()],
                  (args.base, args.exons, args.target, args.pairs))
    with option_errors(parser):
        check_output_names(args)
    file_cases = load_cases(args.base, args.exons, args.target, args.params,
                            exon_format=None if args.exon_format == "auto" else args.exon_format,
                            feature_types=args.feature_types or ("exon", "CDS"), pairs_path=args.pairs)
    cases = [fc.case for fc in file_cases]
    with progress_bar("spliced alignment", len(cases), len(cases) > 1 and sys.stderr.isatty()) as advance:
        results = splice_many(cases, match=args.match, mismatch=args.mismatch, gap=args.gap,
                              device=args.device, engine=args.engine, threads=args.threads,
                              progress=advance, cluster=args.cluster)
    settings = {ReportSink.name: {"alignment": not args.no_alignment}}
    for name, sink in SINKS.items():
        path = getattr(args, sink.option)
        if path:
            with atomic_output(path) as handle:
                sink(**settings.get(name, {})).write(handle, file_cases, results)
    return 0
