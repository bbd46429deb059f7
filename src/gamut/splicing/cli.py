"""``gamut splice BASE.fa EXONS TARGET.fa``: exact spliced alignment from the command line."""
from __future__ import annotations

import argparse
import sys

from gamut.splicing.model import DEFAULT_GAP, DEFAULT_MATCH, DEFAULT_MISMATCH

DESCRIPTION = """\
Gelfand's exact spliced alignment (Nolasco & Moreano): choose the chain of candidate exons of BASE
(in increasing position, not overlapping) whose concatenation best aligns globally to each TARGET
record, with linear gaps. Exons: BED (0-based), GFF3 (1-based; types exon/CDS) or TSV
('seqid start end [name]' or 'start end', 0-based half-open). Prints a report per target (score,
chain, CIGAR, alignment); --gff3 and --table write the chains."""


def register(subparsers) -> None:
    parser = subparsers.add_parser("splice", help="exact spliced alignment (gene prediction)",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", help="base (genomic) FASTA, one or more records")
    parser.add_argument("exons", help="candidate exons: .bed, .gff3 or .tsv (optionally .gz)")
    parser.add_argument("target", help="target FASTA (cDNA); each record is one case")
    parser.add_argument("--exon-format", choices=("auto", "bed", "gff3", "tsv"), default="auto")
    parser.add_argument("--feature-type", default="exon,CDS", help="GFF3 feature types to use (default exon,CDS)")
    parser.add_argument("--pairs", help="file of 'target base' lines, needed when BASE has several records")
    parser.add_argument("--match", type=int, default=DEFAULT_MATCH, help=f"score of a match (default {DEFAULT_MATCH})")
    parser.add_argument("--mismatch", type=int, default=DEFAULT_MISMATCH,
                        help=f"score of a mismatch, N included (default {DEFAULT_MISMATCH})")
    parser.add_argument("--gap", type=int, default=DEFAULT_GAP, help=f"score per gap symbol, negative (default {DEFAULT_GAP})")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--engine", choices=("reference", "fast", "gpu"), help="force an engine (testing)")
    parser.add_argument("--threads", metavar="N", help="CPU threads for batch mode, at least 1 (default: all)")
    parser.add_argument("--cluster", metavar="ADDR",
                        help="run the cases on Dask: local:N worker processes or tcp://HOST:PORT (pip install 'gamut[dask]')")
    parser.add_argument("-o", "--output", default="-",
                        help="text report (default: standard output); written atomically, never onto an input")
    parser.add_argument("--gff3", help="write the chosen chains as GFF3")
    parser.add_argument("--table", help="write the chosen exons as a TSV table")
    parser.add_argument("--no-alignment", action="store_true", help="leave the alignment out of the report")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from gamut.progress import progress_bar
    from gamut.io import atomic_output
    from gamut.io.outputs import check_outputs
    from gamut.io.threads import parse_threads
    from gamut.splicing.api import splice_many
    from gamut.splicing.files import load_cases
    from gamut.splicing.model import ScoreParams
    from gamut.splicing.report import format_report, table_rows, write_gff3, write_table

    threads = parse_threads(args.threads)
    check_outputs([args.output, args.gff3, args.table], (args.base, args.exons, args.target, args.pairs))
    params = ScoreParams(args.match, args.mismatch, args.gap)
    types = tuple(t for t in args.feature_type.split(",") if t)
    file_cases = load_cases(args.base, args.exons, args.target, params,
                            exon_format=None if args.exon_format == "auto" else args.exon_format,
                            feature_types=types, pairs_path=args.pairs)
    cases = [fc.case for fc in file_cases]
    with progress_bar("spliced alignment", len(cases), len(cases) > 1 and sys.stderr.isatty()) as advance:
        results = splice_many(cases, match=args.match, mismatch=args.mismatch, gap=args.gap,
                              device=args.device, engine=args.engine, threads=threads,
                              progress=advance, cluster=args.cluster)
    with atomic_output(args.output) as handle:
        for fc, result in zip(file_cases, results):
            handle.write(format_report(fc.base_name, result, alignment=not args.no_alignment))
    if args.gff3:
        with atomic_output(args.gff3) as handle:
            write_gff3(handle, ((fc.base_name, r) for fc, r in zip(file_cases, results)))
    if args.table:
        with atomic_output(args.table) as handle:
            write_table(handle, (row for fc, r in zip(file_cases, results)
                                 for row in table_rows(fc.base_name, r, fc.exon_names)))
    return 0
