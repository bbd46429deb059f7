"""``gamut miranda QUERY REF [options]``: miRanda 3.3a's command line, run by gamut (miranda-model §1).

Numbers are parsed like C's ``atoi``/``strtod`` (``-sc 140.9`` means 140), so existing
pipelines keep their meaning. gamut extensions: ``--device``, ``--threads``, ``--gpus``,
``--energy-model``, and for cluster and resumable runs ``--cluster``, ``--run-dir``,
``--partition-cells``, ``--partition-pairs``, ``--retries``.
"""
from __future__ import annotations

import re
import sys

from gamut.errors import UsageError
from gamut.io.inputs import check_read_once
from gamut.io.outputs import check_outputs
from gamut.scanning.api import restrict_lines, run_job, warn_unknown_pairs
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.job import ScanJob

_INT = re.compile(r"\s*([+-]?\d+)")
_FLOAT = re.compile(r"\s*([+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))", re.I)

VALUE_OPTIONS = ("-sc", "-en", "-scale", "-go", "-ge", "-out", "-trim", "-restrict",
                 "--device", "--threads", "--gpus", "--energy-model", "--cluster", "--run-dir",
                 "--partition-cells", "--partition-pairs", "--retries")
FLAG_OPTIONS = ("-strict", "-noenergy", "-quiet", "-keyval", "-debug")


def atoi(text: str) -> int:
    """C ``atoi``: optional leading whitespace and sign, then digits; 0 when there are none."""
    match = _INT.match(text)
    return int(match.group(1)) if match else 0


def strtod(text: str) -> float:
    """C ``strtod`` on the longest numeric prefix; 0.0 when there is none."""
    match = _FLOAT.match(text)
    return float(match.group(1)) if match else 0.0


def banner() -> str:
    from gamut import __version__

    return (
        "============================================================\n"
        f"gamut {__version__}: miRNA target scanning, exact miRanda 3.3a model\n"
        "(results identical to miRanda 3.3a; GPU-accelerated where available)\n"
        "============================================================\n\n"
    )


USAGE = (
    "Usage: gamut miranda file1 file2 [options..]\n"
    "  file1  FASTA file with the miRNA query sequences\n"
    "  file2  FASTA file with the reference (target) sequences\n"
    "Options: -sc S -en E -scale Z -strict -go X -ge Y -noenergy -quiet -keyval -out FILE\n"
    "         -trim T -restrict FILE -debug   (gamut: --device auto|cpu|cuda --threads N\n"
    "         --gpus LIST --energy-model miranda|vienna2004 --cluster local:N|tcp://HOST:PORT\n"
    "         --run-dir DIR --partition-cells N); see 'gamut miranda --help'\n"
)

HELP = USAGE + """
  -sc S          score threshold (default 140)
  -en E          energy threshold in kcal/mol; hits need energy < E (default 1)
  -scale Z       scaling of the seed (miRNA positions 2-8) scores and gaps (default 4.0)
  -strict        demand strict seed pairing (positions 2-8 Watson-Crick, no gaps)
  -go X, -ge Y   gap open and extend penalties (defaults -9 and -4; must be <= 0)
  -noenergy      no duplex folding; energies count as -1,000,000 and print as 0
  -quiet         fewer lines; -keyval: one key=value line per hit
  -out FILE      write output to FILE (written atomically; never onto an input); miRanda's text
                 whatever the name, compressed when it ends in .gz, .zst, .bz2 or .xz
  -trim T        use only the first T letters of each reference
  -restrict FILE scan only the 'query_id reference_id' pairs listed in FILE
  --device D     auto (GPU if present), cpu or cuda
  --threads N    CPU threads (default: all cores); --gpus LIST: e.g. 0,1 or all
  --energy-model miranda (exact miRanda 3.3a energies, default) or vienna2004 (ViennaRNA defaults)
  --cluster C    run on Dask: local:N (N worker processes; with --device cuda one per GPU) or the
                 address of a running scheduler, tcp://HOST:PORT (pip install 'gamut[dask]')
  --run-dir DIR  keep finished partitions in DIR; rerunning the same command resumes
  --partition-cells N, --partition-pairs N: partition sizes; --retries N: retries of a failed partition
"""


def parse_args(argv: list[str]) -> dict:
    """Parse miRanda's argv (files first) into keyword settings; raises UsageError."""
    opts: dict = {"query": argv[0], "reference": argv[1]}
    k = 2
    while k < len(argv):
        arg = argv[k]
        if arg in FLAG_OPTIONS:
            opts[arg] = True
            k += 1
        elif arg in VALUE_OPTIONS and k + 1 < len(argv):
            opts[arg] = argv[k + 1]
            k += 2
        else:
            raise UsageError(f"unrecognized command line argument: {arg} (see gamut miranda --help)")
    return opts


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        sys.stdout.write(banner() + HELP)
        return 0
    if any(a in ("-v", "--version", "--license") for a in argv):
        from gamut import __version__

        sys.stdout.write(f"gamut {__version__} (miRanda 3.3a-compatible scan). MIT licence.\n")
        return 0
    if len(argv) < 2:
        sys.stdout.write(banner() + USAGE)
        return 0
    opts = parse_args(argv)
    check_read_once((opts["query"], opts["reference"], opts.get("-restrict")))
    check_outputs([opts.get("-out")], (opts["query"], opts["reference"], opts.get("-restrict")))  # before any work
    pairs = restrict_lines(opts["-restrict"]) if "-restrict" in opts else None
    params = ScanParams(
        score_threshold=atoi(opts.get("-sc", "140")),
        energy_threshold=atoi(opts.get("-en", "1")),
        scale=strtod(opts.get("-scale", "4.0")),
        gap_open=atoi(opts.get("-go", "-9")),
        gap_extend=atoi(opts.get("-ge", "-4")),
        strict=opts.get("-strict", False),
        noenergy=opts.get("-noenergy", False),
        trim=atoi(opts.get("-trim", "0")),  # ScanParams refuses a negative -trim, as miRanda does
        energy_model=opts.get("--energy-model", "miranda"),
        restrict=None if pairs is None else frozenset(pairs),
    )
    # gamut's own options are checked strictly by the job (miRanda's are read as C's atoi would).
    job = ScanJob.from_files(
        opts["query"],
        opts["reference"],
        params,
        output=opts.get("-out"),
        quiet=opts.get("-quiet", False),
        keyval=opts.get("-keyval", False),
        banner=banner(),
        device=opts.get("--device", "auto"),
        threads=opts.get("--threads"),
        gpus=opts.get("--gpus"),
        cluster=opts.get("--cluster"),
        run_dir=opts.get("--run-dir"),
        partition_cells=opts.get("--partition-cells"),
        partition_pairs=opts.get("--partition-pairs"),
        retries=opts.get("--retries", 2),
    )
    if pairs is not None:
        warn_unknown_pairs(opts["-restrict"], pairs, job.queries, job.references)
    run_job(job)
    return 0
