"""``gamut miranda QUERY REF [options]``: miRanda 3.3a's command line, run by gamut (miranda-model §1).

miRanda reads its numbers with C's ``atoi`` (``-sc``, ``-en``, ``-go``, ``-ge``, ``-trim``) and
``strtod`` (``-scale``), which stop at the first character they do not take: ``-sc 140.9`` is
140 to it, ``-sc abc`` 0. A value these read whole keeps miRanda's meaning exactly; a value they
would misread is refused with one line that says what miRanda would have read
(:func:`miranda_number`; docs/scan.md, "Where gamut miranda differs from miRanda"). gamut
extensions: ``--device``, ``--threads``, ``--gpus``, ``--energy-model``, and for cluster and
resumable runs ``--cluster``, ``--run-dir``, ``--partition-cells``, ``--partition-pairs``,
``--retries``.
"""
from __future__ import annotations

import os
import re
import sys

from gamut.errors import UsageError
from gamut.io.inputs import check_read_once
from gamut.io.outputs import check_outputs
from gamut.numerals import NumberError, parse_number, shown
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.job import ScanJob

_INT = re.compile(r"\s*([+-]?\d+)", re.ASCII)
_FLOAT = re.compile(r"\s*([+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))",
                    re.IGNORECASE | re.ASCII)
_HEX_FLOAT = re.compile(r"\s*([+-]?0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?\d+)?)", re.IGNORECASE | re.ASCII)
#: miRanda's numeric options read with ``atoi`` (C ``int``s), and gamut scan's names for them.
INT_OPTIONS = {"-sc": "--score-threshold", "-en": "--energy-threshold", "-go": "--gap-open",
               "-ge": "--gap-extend", "-trim": "--trim"}
#: The options gamut scan takes as real numbers where miRanda reads whole ones.
REAL_IN_SCAN = ("-sc", "-en")
INT_MIN, INT_MAX = -2**31, 2**31 - 1

VALUE_OPTIONS = ("-sc", "-en", "-scale", "-go", "-ge", "-out", "-trim", "-restrict",
                 "--device", "--threads", "--gpus", "--energy-model", "--cluster", "--run-dir",
                 "--partition-cells", "--partition-pairs", "--retries")
FLAG_OPTIONS = ("-strict", "-noenergy", "-quiet", "-keyval", "-debug")


def atoi(text: str) -> int:
    """C ``atoi``: optional leading whitespace and sign, then digits; 0 when there are none."""
    match = _INT.match(text)
    return int(match.group(1)) if match else 0


def strtod(text: str) -> float:
    """C ``strtod`` (glibc's) on the longest numeric prefix, hexadecimal too; 0.0 when there is none."""
    match = _HEX_FLOAT.match(text)
    if match:
        return float.fromhex(match.group(1))
    match = _FLOAT.match(text)
    return float(match.group(1)) if match else 0.0


def miranda_number(option: str, text: str) -> int | float:
    """The value of miRanda's numeric ``option`` (``-sc``, ``-en``, ``-go``, ``-ge``, ``-trim``:
    ``atoi``; ``-scale``: ``strtod``) when miRanda reads ``text`` as what it says: ``-sc 140``,
    ``-en -20``, ``-scale 2.5``, also ``-sc 140.0``. Anything miRanda would misread is a one-line
    :class:`UsageError` saying what it would have read: ``-sc abc`` (0), ``-sc 140.9`` (140, and
    gamut scan takes 140.9), ``-trim 1e3`` (1), ``-scale 4x`` (4), ``-scale nan``, and whole
    numbers beyond C's ``int``."""
    whole = option in INT_OPTIONS
    read = atoi(text) if whole else strtod(text)
    try:
        meant = parse_number(text)
    except NumberError as exc:
        message = re.sub("a (finite )?number", "a whole number", str(exc), count=1) if whole else str(exc)
        raise UsageError(f"{option}: {message}, which miRanda would read as {read if whole else f'{read:g}'}") from None
    if whole and meant != int(meant):
        alternative = f" or 'gamut scan {INT_OPTIONS[option]} {text.strip()}'" if option in REAL_IN_SCAN else ""
        raise UsageError(f"{option}: miRanda reads whole numbers only, and would read {shown(text)} as {read}: "
                         f"give {option} {read}{alternative}")
    if whole and not INT_MIN <= meant <= INT_MAX:
        raise UsageError(f"{option}: {shown(text)} is beyond the whole numbers miRanda reads "
                         f"({INT_MIN} to {INT_MAX})")
    if meant != read:  # an exponent: atoi stops at the 'e'
        meant = int(meant) if whole else meant
        raise UsageError(f"{option}: miRanda would read {shown(text)} as {read}, not {meant}: give {option} {meant}")
    return read


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
  -sc S          score threshold, a whole number (default 140)
  -en E          energy threshold in kcal/mol, a whole number; hits need energy < E (default 1)
                 (gamut scan takes real thresholds: --score-threshold, --energy-threshold)
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
  --cluster C    run on Dask: local:N (N worker processes; with --device cuda N GPUs, two on each) or the
                 address of a running scheduler, tcp://HOST:PORT (pip install 'gamut-rna[dask]')
  --run-dir DIR  keep finished partitions in DIR; rerunning the same command resumes
  --partition-cells N, --partition-pairs N: partition sizes; --retries N: retries of a failed partition
"""


def check_files_first(argv: list[str]) -> None:
    """Refuse a command line without its two files first (miRanda itself prints its usage with
    exit status 0 for one argument, and tries to open an option as a file): one line, status 1."""
    given = argv[:2]
    for k, arg in enumerate(given):
        if arg in (*VALUE_OPTIONS, *FLAG_OPTIONS) and not os.path.exists(arg):
            missing = "no query or reference file" if k == 0 else "no reference file"
            raise UsageError(f"{missing} before the option {arg}: the two FASTA files come first, "
                             "gamut miranda QUERY REFERENCE [options] (see gamut miranda --help)")
    if len(given) < 2:
        raise UsageError(f"no reference file after {given[0]}: gamut miranda QUERY REFERENCE [options] "
                         "(see gamut miranda --help)")


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
    if not argv:
        sys.stdout.write(banner() + USAGE)
        return 0
    check_files_first(argv)
    from gamut.scanning.api import restrict_lines, run_job, warn_unknown_pairs

    opts = parse_args(argv)
    values = {option: miranda_number(option, opts[option]) for option in (*INT_OPTIONS, "-scale") if option in opts}
    check_read_once((opts["query"], opts["reference"], opts.get("-restrict")))
    check_outputs([opts.get("-out")], (opts["query"], opts["reference"], opts.get("-restrict")))  # before any work
    pairs = restrict_lines(opts["-restrict"]) if "-restrict" in opts else None
    params = ScanParams(
        score_threshold=values.get("-sc", 140),
        energy_threshold=values.get("-en", 1),
        scale=values.get("-scale", 4.0),
        gap_open=values.get("-go", -9),
        gap_extend=values.get("-ge", -4),
        strict=opts.get("-strict", False),
        noenergy=opts.get("-noenergy", False),
        trim=values.get("-trim", 0),  # ScanParams refuses a negative -trim, as miRanda does
        energy_model=opts.get("--energy-model", "miranda"),
        restrict=None if pairs is None else frozenset(pairs),
    )
    # gamut's own options are checked by the job (miRanda's above: as miRanda reads them, or refused).
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
