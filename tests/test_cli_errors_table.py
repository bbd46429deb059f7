"""Every bad input, bad option and failing output gives one line and a non-zero exit, never a traceback.

Each row of ``CASES`` runs ``python -m gamut ...`` in a fresh directory that holds all its inputs
and outputs, and checks: the documented exit code (see :mod:`gamut.errors`), exactly one line on
standard error starting with ``gamut: error:``, nothing on standard output, and no file left
behind (no output, no ``.*.tmp``). Add a row to cover a new case.
"""
from __future__ import annotations

import bz2
import lzma
import os
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from gamut.cli import main

BASE = "TTTACGTACGGGGGGCCATGCATTTTTTGGAACCTTAAA"
EXONS = [(3, 10), (15, 23), (28, 36), (5, 18), (30, 33)]
TARGET = "ACGTACGCATGCAGAACCTT"
QUERY = "UGAGGUAGUAGGUUGUAUAGUU"
SITE = "AAAACUAUACAACCUACUACCUCAAAA"
#: Lines gamut may print on a first run in a fresh environment (gamut.cache), not errors.
NOTICES = ("gamut: first run", "gamut: compil")  # the compiling notice (gamut.cache), which a compile may show
BINARY = bytes(range(256)) * 4
FILE_LIMIT = 4096  # bytes a file may grow to in the "file too large" case


def _write(path: Path, text: str | bytes) -> None:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())


def fold_input(d: Path) -> None:
    _write(d / "rna.fa", ">a\nGGGAAACCC\n>b\nGGGGAAAACCCC\n")


def many_folds(d: Path) -> None:
    """Enough records that the output outgrows FILE_LIMIT."""
    _write(d / "rna.fa", "".join(f">s{i}\nGGGGAAAACCCCGGGGAAAACCCC\n" for i in range(400)))


def splice_inputs(d: Path) -> None:
    _write(d / "base.fa", f">chr1\n{BASE}\n")
    _write(d / "ex.bed", "".join(f"chr1\t{s}\t{e}\te{i}\n" for i, (s, e) in enumerate(EXONS)))
    _write(d / "t.fa", f">cdna1\n{TARGET}\n>cdna2\n{TARGET[:12]}\n")


def scan_inputs(d: Path) -> None:
    _write(d / "q.fa", f">q1\n{QUERY}\n")
    _write(d / "r.fa", f">r1\n{SITE}\n>r2\n{SITE * 2}\n")


def then(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    """One setup made of several steps, in order."""
    def setup(d: Path) -> None:
        for step in steps:
            step(d)
    return setup


def binary(name: str) -> Callable[[Path], None]:
    return lambda d: _write(d / name, BINARY)


def directory(name: str) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        (d / name).unlink(missing_ok=True)
        (d / name).mkdir()
    return setup


def dangling(name: str) -> Callable[[Path], None]:
    def setup(d: Path) -> None:
        (d / name).unlink(missing_ok=True)
        (d / name).symlink_to(d / "nowhere")
    return setup


def unreadable(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).chmod(0)


def text(name: str, content: str | bytes) -> Callable[[Path], None]:
    return lambda d: _write(d / name, content)


def limit_file_size() -> None:
    """In the child: files may not grow past FILE_LIMIT, and going past it fails the write with
    EFBIG ('File too large') instead of killing the process with SIGXFSZ."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


@dataclass(frozen=True)
class Case:
    """One command that must fail cleanly: ``argv`` after ``gamut``, run in a directory prepared
    by ``setup``; ``message`` is a piece of the expected error line."""

    id: str
    argv: tuple[str, ...]
    setup: Callable[[Path], None]
    message: str
    code: int = 1
    stdout_to_full_device: bool = False  # standard output is /dev/full (opened here, not replaced)
    preexec: Callable[[], None] | None = field(default=None)
    needs_non_root: str = ""  # the reason, when root could not see this error


SPLICE = ("splice", "base.fa", "ex.bed", "t.fa")
CASES = [
    Case("fold-binary", ("fold", "rna.fa"), binary("rna.fa"), "rna.fa: not a FASTA text file"),
    Case("fold-directory", ("fold", "rna.fa"), directory("rna.fa"), "rna.fa: is a directory"),
    Case("fold-dangling-link", ("fold", "rna.fa"), dangling("rna.fa"), "rna.fa: no such file"),
    Case("fold-unreadable", ("fold", "rna.fa"), then(fold_input, unreadable("rna.fa")), "rna.fa: cannot read",
         needs_non_root="root reads a file whatever its permissions"),
    Case("fold-duplicate-names", ("fold", "rna.fa"), text("rna.fa", ">a\nGGGAAACCC\n>b\nGGAACC\n>a\nGGGAAACC\n"),
         "rna.fa: duplicate record name 'a' (records 1 and 3)"),
    Case("fold-threads-zero", ("fold", "rna.fa", "--threads", "0"), fold_input,
         "--threads: expected a whole number of at least 1, got '0'", code=2),
    Case("fold-stdout-full-device", ("fold", "rna.fa"), many_folds,
         "writing standard output failed: No space left on device", stdout_to_full_device=True),
    Case("fold-output-too-large", ("fold", "rna.fa", "-o", "out.txt"), many_folds,
         "writing out.txt failed: File too large", preexec=limit_file_size),
    Case("splice-binary-base", SPLICE, then(splice_inputs, binary("base.fa")), "base.fa: not a FASTA text file"),
    Case("splice-binary-target", SPLICE, then(splice_inputs, binary("t.fa")), "t.fa: not a FASTA text file"),
    Case("splice-binary-exons", SPLICE, then(splice_inputs, binary("ex.bed")), "ex.bed: line"),
    Case("splice-directory-base", SPLICE, then(splice_inputs, directory("base.fa")), "base.fa: is a directory"),
    Case("splice-directory-exons", SPLICE, then(splice_inputs, directory("ex.bed")), "ex.bed: is a directory"),
    Case("splice-directory-pairs", (*SPLICE, "--pairs", "pairs.txt"), then(splice_inputs, directory("pairs.txt")),
         "pairs.txt: is a directory"),
    Case("splice-dangling-target", SPLICE, then(splice_inputs, dangling("t.fa")), "t.fa: no such file"),
    Case("splice-unreadable-target", SPLICE, then(splice_inputs, unreadable("t.fa")), "t.fa: cannot read",
         needs_non_root="root reads a file whatever its permissions"),
    Case("splice-duplicate-targets", SPLICE,
         then(splice_inputs, text("t.fa", f">cdna1\n{TARGET}\n>cdna1\n{TARGET[:12]}\n")),
         "t.fa: duplicate record name 'cdna1'"),
    Case("splice-threads-abc", (*SPLICE, "--threads", "abc"), splice_inputs,
         "--threads: expected a whole number of at least 1, got 'abc'", code=2),
    Case("splice-output-too-large", (*SPLICE, "-o", "report.txt"),
         then(splice_inputs, text("t.fa", "".join(f">c{i}\n{TARGET}\n" for i in range(200)))),
         "writing report.txt failed: File too large", preexec=limit_file_size),
    Case("miranda-threads-abc", ("miranda", "q.fa", "r.fa", "--threads", "abc"), scan_inputs,
         "--threads: expected a whole number of at least 1, got 'abc'"),
    Case("miranda-threads-zero", ("miranda", "q.fa", "r.fa", "--threads", "0"), scan_inputs,
         "--threads: expected a whole number of at least 1, got '0'"),
    # gamut scan reports a bad option value as argparse does (exit 2); gamut miranda exits 1, as miRanda.
    Case("scan-threads-zero", ("scan", "q.fa", "r.fa", "--threads", "0"), scan_inputs,
         "--threads: expected a whole number of at least 1, got '0'", code=2),
    Case("scan-threads-abc", ("scan", "q.fa", "r.fa", "--threads", "abc"), scan_inputs,
         "--threads: expected a whole number of at least 1, got 'abc'", code=2),
    Case("miranda-retries-abc", ("miranda", "q.fa", "r.fa", "--retries", "abc"), scan_inputs,
         "--retries: expected a whole number of at least 0, got 'abc'"),
    Case("miranda-retries-negative", ("miranda", "q.fa", "r.fa", "--retries", "-1"), scan_inputs,
         "--retries: expected a whole number of at least 0, got '-1'"),
    Case("miranda-partition-cells-abc", ("miranda", "q.fa", "r.fa", "--partition-cells", "abc"), scan_inputs,
         "--partition-cells: expected a whole number of at least 1, got 'abc'"),
    Case("miranda-partition-pairs-zero", ("miranda", "q.fa", "r.fa", "--partition-pairs", "0"), scan_inputs,
         "--partition-pairs: expected a whole number of at least 1, got '0'"),
    Case("miranda-bad-device", ("miranda", "q.fa", "r.fa", "--device", "tpu"), scan_inputs,
         "unknown device 'tpu' (choose from auto, cpu, cuda)"),
    Case("miranda-bad-energy-model", ("miranda", "q.fa", "r.fa", "--energy-model", "x"), scan_inputs,
         "unknown energy model 'x'"),
    Case("miranda-negative-trim", ("miranda", "q.fa", "r.fa", "-trim", "-5"), scan_inputs,
         "negative value given for -trim"),
    Case("miranda-option-without-value", ("miranda", "q.fa", "r.fa", "--threads"), scan_inputs,
         "unrecognized command line argument: --threads"),
    Case("scan-parquet-to-stdout", ("scan", "q.fa", "r.fa", "--format", "parquet"), scan_inputs,
         "--format parquet needs an output file", code=2),
    # Several outputs of one scan (#26): tests/test_scan_multi_output.py checks the rest.
    Case("scan-two-outputs-one-file", ("scan", "q.fa", "r.fa", "-o", "a.tsv", "-o", "./a.tsv"), scan_inputs,
         "two outputs to the same file: ./a.tsv", code=2),
    Case("scan-two-outputs-to-stdout", ("scan", "q.fa", "r.fa", "-o", "-", "-o", "a.tsv", "-o", "-"), scan_inputs,
         "two outputs to standard output", code=2),
    Case("scan-parquet-to-stdout-of-several", ("scan", "q.fa", "r.fa", "-o", "a.tsv", "-o", "-", "--format", "tsv",
                                              "--format", "parquet"), scan_inputs,
         "--format parquet needs an output file", code=2),
    Case("scan-more-formats-than-outputs", ("scan", "q.fa", "r.fa", "-o", "a.tsv", "--format", "tsv", "--format",
                                           "bed"), scan_inputs, "--format given 2 times for 1 outputs", code=2),
    Case("scan-format-for-no-output", ("scan", "q.fa", "r.fa", "-o", "a.tsv", "-o", "a.bed", "--format", "jsonl"),
         scan_inputs, "--format jsonl applies to no output", code=2),
    Case("scan-annotation-missing", ("scan", "q.fa", "r.fa", "--annotation", "genes.gtf"), scan_inputs,
         "--annotation genes.gtf: no such file", code=2),
    Case("scan-annotation-directory", ("scan", "q.fa", "r.fa", "--annotation", "genes.gtf"),
         then(scan_inputs, directory("genes.gtf")), "--annotation genes.gtf: is a directory", code=2),
    Case("scan-negative-trim", ("scan", "q.fa", "r.fa", "--trim", "-1"), scan_inputs, "negative value given for -trim",
         code=2),
    Case("scan-gpus-on-cpu", ("scan", "q.fa", "r.fa", "--gpus", "0,1", "--device", "cpu"), scan_inputs,
         "--gpus 0,1 needs a GPU engine", code=2),
    Case("miranda-gpus-on-cpu", ("miranda", "q.fa", "r.fa", "--gpus", "0,1", "--device", "cpu"), scan_inputs,
         "--gpus 0,1 needs a GPU engine"),
    Case("scan-directory", ("scan", "q.fa", "r.fa"), then(scan_inputs, directory("r.fa")), "r.fa: is a directory"),
    Case("scan-stdout-full-device", ("scan", "q.fa", "r.fa"), scan_inputs,
         "writing standard output failed: No space left on device", stdout_to_full_device=True),
    # Outputs that would lose data (tests/test_output_safety.py checks each in more detail).
    Case("scan-output-is-input", ("scan", "q.fa", "r.fa", "-o", "r.fa"), scan_inputs,
         "cannot write r.fa: it is the input file r.fa"),
    Case("miranda-out-is-input-through-link", ("miranda", "q.fa", "r.fa", "-out", "link.fa"),
         then(scan_inputs, lambda d: (d / "link.fa").symlink_to(d / "q.fa")), "it is the input file"),
    Case("fold-output-is-input", ("fold", "rna.fa", "-o", "rna.fa"), fold_input, "it is the input file"),
    Case("splice-output-is-input", (*SPLICE, "-o", "t.fa"), splice_inputs, "it is the input file"),
    Case("scan-read-only-output", ("scan", "q.fa", "r.fa", "-o", "old.tsv"),
         then(scan_inputs, text("old.tsv", "old\n"), lambda d: (d / "old.tsv").chmod(0o444)), "read-only"),
    # The format and compression an output's name asks for (#44; tests/test_output_compression.py
    # reads back what is written).
    Case("scan-csv-output", ("scan", "q.fa", "r.fa", "-o", "hits.csv"), scan_inputs,
         "hits.csv: comma-separated values are not written (.tsv is tab-separated)", code=2),
    Case("scan-suffix-of-no-format", ("scan", "q.fa", "r.fa", "-o", "hits.out"), scan_inputs,
         "hits.out: no output format has the suffix .out (suffixes: .txt, .miranda, .tsv,", code=2),
    Case("scan-suffix-names-another-format", ("scan", "q.fa", "r.fa", "-o", "hits.tsv", "--format", "jsonl"),
         scan_inputs, "hits.tsv: the suffix .tsv names the tsv format, not --format jsonl", code=2),
    Case("scan-compressed-suffix-names-another-format", ("scan", "q.fa", "r.fa", "-o", "hits.bed.gz", "--format",
                                                        "tsv"), scan_inputs,
         "hits.bed.gz: the suffix .bed names the bed format, not --format tsv", code=2),
    Case("scan-bgzf-of-tsv", ("scan", "q.fa", "r.fa", "-o", "hits.tsv.bgz"), scan_inputs,
         ".bgz (BGZF, for tabix) is not written for tsv (only for bed, bed6); use .gz", code=2),
    Case("scan-compressed-parquet", ("scan", "q.fa", "r.fa", "-o", "hits.parquet.gz"), scan_inputs,
         "hits.parquet.gz: the parquet format compresses inside; drop .gz", code=2),
    Case("miranda-out-bgzf", ("miranda", "q.fa", "r.fa", "-out", "hits.txt.bgz"), scan_inputs,
         ".bgz (BGZF, for tabix) is not written for miranda"),
    Case("fold-tsv-gz-as-dot-bracket", ("fold", "rna.fa", "-o", "out.tsv.gz", "--format", "dot-bracket"), fold_input,
         "the suffix .tsv names the tsv format, not --format dot-bracket", code=2),
    Case("fold-csv-output", ("fold", "rna.fa", "-o", "out.csv"), fold_input, "comma-separated values", code=2),
    Case("access-compressed-parquet", ("access", "GGGAAACCC", "-o", "a.parquet.zst"), scan_inputs,
         "the parquet format compresses inside; drop .zst", code=2),
    Case("splice-table-named-gff3", (*SPLICE, "--table", "chains.gff3"), splice_inputs,
         "the suffix .gff3 names the gff3 format, not the table that --table writes", code=2),
    Case("splice-report-bgzf", (*SPLICE, "-o", "report.txt.bgz"), splice_inputs,
         ".bgz (BGZF, for tabix) is not written for report (only for gff3)", code=2),
    # Resumable runs (tests/test_scan_rundir_integrity.py checks recomputation of bad parts).
    Case("scan-run-dir-is-a-file", ("scan", "q.fa", "r.fa", "--run-dir", "rd", "-o", "out.tsv"),
         then(scan_inputs, text("rd", "not a directory\n")), "--run-dir rd is not a directory"),
    Case("scan-run-dir-under-proc", ("scan", "q.fa", "r.fa", "--run-dir", "/proc/self/gamut-run", "-o", "out.tsv"),
         scan_inputs, "--run-dir /proc/self/gamut-run"),
    # Options argparse rejects: one line too (gamut.cli.OneLineParser), exit 2.
    Case("scan-unknown-option", ("scan", "q.fa", "r.fa", "--no-such-option"), scan_inputs,
         "unrecognized arguments: --no-such-option", code=2),
    Case("scan-bad-device", ("scan", "q.fa", "r.fa", "--device", "tpu"), scan_inputs, "invalid choice: 'tpu'", code=2),
    Case("scan-retries-negative", ("scan", "q.fa", "r.fa", "--retries", "-1"), scan_inputs,
         "argument --retries: expected a whole number of at least 0, got '-1'", code=2),
    Case("scan-retries-abc", ("scan", "q.fa", "r.fa", "--retries", "abc"), scan_inputs,
         "argument --retries: expected a whole number of at least 0, got 'abc'", code=2),
    Case("scan-partition-cells-zero", ("scan", "q.fa", "r.fa", "--partition-cells", "0"), scan_inputs,
         "argument --partition-cells: expected a whole number of at least 1, got '0'", code=2),
    Case("scan-threads-missing", ("scan", "q.fa", "r.fa", "--threads"), scan_inputs,
         "argument --threads: expected one argument", code=2),
    Case("scan-bad-format", ("scan", "q.fa", "r.fa", "--format", "xml"), scan_inputs, "invalid choice: 'xml'", code=2),
    Case("top-level-unknown-option", ("--threads", "3"), scan_inputs, "invalid choice: '3'", code=2),
    # Inputs read once (#44): standard input (or one pipe) is one input at most; the scan's
    # annotation is read by each output and worker, so it must be a file (tests/test_inputs.py
    # checks -, FIFOs and pipes for every command).
    Case("scan-stdin-twice", ("scan", "-", "-"), scan_inputs, "two inputs read standard input (-)", code=2),
    Case("miranda-stdin-twice", ("miranda", "-", "r.fa", "-restrict", "-"), scan_inputs,
         "two inputs read standard input (-)"),
    Case("splice-stdin-twice", ("splice", "-", "ex.bed", "-"), splice_inputs, "two inputs read standard input (-)",
         code=2),
    Case("splice-reads-stdin-twice", ("splice", "--genome", "-", "--annotation", "a.gtf", "--reads", "-"),
         splice_inputs, "two inputs read standard input (-)", code=2),
    Case("scan-annotation-stdin", ("scan", "q.fa", "r.fa", "--annotation", "-"), scan_inputs,
         "--annotation -: not a regular file", code=2),
    Case("access-duplicate-names", ("access", "rna.fa", "--device", "cpu"),
         text("rna.fa", ">a\nGGGAAACCC\n>b\nGGAACC\n>a\nGGGAAACC\n"),
         "rna.fa: duplicate record name 'a' (records 1 and 3)"),
    # Header bytes that are not UTF-8 (#44): the text formats keep them; JSON and Parquet cannot.
    Case("scan-jsonl-id-not-utf8", ("scan", "q.fa", "r.fa", "--format", "jsonl"),
         then(scan_inputs, text("r.fa", f">r1\n{SITE}\n>r\xe9\xff d\n{SITE}\n".encode("latin-1"))),
         "r.fa: record 2 has an id that is not UTF-8 text ('r\\xe9\\xff'), which --format jsonl cannot hold"),
    Case("scan-parquet-id-not-utf8", ("scan", "q.fa", "r.fa", "-o", "hits.parquet"),
         then(scan_inputs, text("q.fa", b">q\xe9\n" + QUERY.encode() + b"\n")),
         "q.fa: record 1 has an id that is not UTF-8 text ('q\\xe9'), which --format parquet cannot hold"),
    # Exactness: parameters beyond miRanda's integer scores are refused, never saturated.
    Case("scan-scores-beyond-64-bits", ("scan", "q.fa", "r.fa", "--scale=-1e17", "--noenergy"), scan_inputs,
         "beyond the 32-bit integers miRanda scores with", code=2),
    # Numbers (gamut.numerals, one parser for every option; issue 44): signs and exponents are
    # read, nan, inf and what is not a number refused with one line naming the option and the text.
    Case("scan-score-threshold-abc", ("scan", "q.fa", "r.fa", "--score-threshold", "abc"), scan_inputs,
         "argument --score-threshold/-sc: expected a number, got 'abc'", code=2),
    Case("scan-score-threshold-nan", ("scan", "q.fa", "r.fa", "-sc", "nan"), scan_inputs,
         "argument --score-threshold/-sc: expected a finite number, got 'nan'", code=2),
    Case("scan-energy-threshold-minus-inf", ("scan", "q.fa", "r.fa", "--energy-threshold", "-inf"), scan_inputs,
         "argument --energy-threshold/-en: expected a finite number, got '-inf'", code=2),
    Case("scan-energy-threshold-beyond-doubles", ("scan", "q.fa", "r.fa", "--energy-threshold=-1e999"), scan_inputs,
         "argument --energy-threshold/-en: expected a finite number, got '-1e999'", code=2),
    Case("scan-score-threshold-underscore", ("scan", "q.fa", "r.fa", "-sc", "1_40"), scan_inputs,
         "argument --score-threshold/-sc: expected a number, got '1_40'", code=2),
    Case("scan-scale-trailing-letters", ("scan", "q.fa", "r.fa", "--scale", "4x"), scan_inputs,
         "argument --scale: expected a number, got '4x'", code=2),
    Case("scan-gap-open-real", ("scan", "q.fa", "r.fa", "--gap-open", "-9.5"), scan_inputs,
         "argument --gap-open: expected a whole number, got '-9.5'", code=2),
    Case("scan-trim-real", ("scan", "q.fa", "r.fa", "--trim", "1.55e1"), scan_inputs,
         "argument --trim: expected a whole number, got '1.55e1'", code=2),
    Case("scan-partition-pairs-beyond-64-bits", ("scan", "q.fa", "r.fa", "--partition-pairs", "1e19"), scan_inputs,
         "argument --partition-pairs: expected a whole number from 1 to 9223372036854775807, got '1e19'", code=2),
    Case("scan-threads-real", ("scan", "q.fa", "r.fa", "--threads", "1.5"), scan_inputs,
         "--threads: expected a whole number of at least 1, got '1.5'", code=2),
    Case("scan-access-window-comma", ("scan", "q.fa", "r.fa", "--accessibility", "--access-window", "1,000"),
         scan_inputs, "argument --access-window: expected a whole number, got '1,000'", code=2),
    Case("scan-access-flanks-not-numbers", ("scan", "q.fa", "r.fa", "--accessibility", "--access-flanks", "3,x"),
         scan_inputs, "--access-flanks: expected a whole number of at least 0, got 'x'", code=2),
    Case("scan-ddg-threshold-nan", ("scan", "q.fa", "r.fa", "--accessibility", "--ddg-threshold", "nan"),
         scan_inputs, "argument --ddg-threshold: expected a finite number, got 'nan'", code=2),
    Case("scan-value-with-a-newline", ("scan", "q.fa", "r.fa", "-sc", "140\n1"), scan_inputs,
         "expected a number, got '140\\n1'", code=2),
    # gamut miranda reads miRanda's numbers as miRanda does, and refuses what miRanda would misread
    # (C's atoi and strtod stop at the first character they do not take), with miRanda's status 1.
    Case("miranda-sc-abc", ("miranda", "q.fa", "r.fa", "-sc", "abc"), scan_inputs,
         "-sc: expected a whole number, got 'abc', which miRanda would read as 0"),
    Case("miranda-sc-real", ("miranda", "q.fa", "r.fa", "-sc", "140.9"), scan_inputs,
         "would read '140.9' as 140: give -sc 140 or 'gamut scan --score-threshold 140.9'"),
    Case("miranda-en-real", ("miranda", "q.fa", "r.fa", "-en", "-20.5"), scan_inputs,
         "would read '-20.5' as -20: give -en -20 or 'gamut scan --energy-threshold -20.5'"),
    Case("miranda-go-real", ("miranda", "q.fa", "r.fa", "-go", "-9.5"), scan_inputs,
         "-go: miRanda reads whole numbers only, and would read '-9.5' as -9: give -go -9"),
    Case("miranda-trim-exponent", ("miranda", "q.fa", "r.fa", "-trim", "1e3"), scan_inputs,
         "-trim: miRanda would read '1e3' as 1, not 1000: give -trim 1000"),
    Case("miranda-scale-trailing-letters", ("miranda", "q.fa", "r.fa", "-scale", "4x"), scan_inputs,
         "-scale: expected a number, got '4x', which miRanda would read as 4"),
    Case("miranda-scale-nan", ("miranda", "q.fa", "r.fa", "-scale", "nan"), scan_inputs,
         "-scale: expected a finite number, got 'nan', which miRanda would read as nan"),
    Case("miranda-sc-beyond-c-int", ("miranda", "q.fa", "r.fa", "-sc", "3000000000"), scan_inputs,
         "-sc: '3000000000' is beyond the whole numbers miRanda reads (-2147483648 to 2147483647)"),
    Case("miranda-partition-cells-real", ("miranda", "q.fa", "r.fa", "--partition-cells", "25e-1"), scan_inputs,
         "--partition-cells: expected a whole number of at least 1, got '25e-1'"),
    Case("miranda-no-reference", ("miranda", "q.fa"), scan_inputs,
         "no reference file after q.fa: gamut miranda QUERY REFERENCE [options]"),
    Case("miranda-options-before-files", ("miranda", "q.fa", "-sc", "120", "r.fa"), scan_inputs,
         "no reference file before the option -sc: the two FASTA files come first"),
    # the other commands
    Case("fold-min-loop-real", ("fold", "rna.fa", "--min-loop", "1.5"), fold_input,
         "argument --min-loop: expected a whole number, got '1.5'", code=2),
    Case("fold-corner-inf", ("fold", "rna.fa", "--corner", "inf"), fold_input,
         "argument --corner: expected a whole number, got 'inf'", code=2),
    Case("splice-gap-real", (*SPLICE, "--gap", "-2.5"), splice_inputs,
         "argument --gap: expected a whole number, got '-2.5'", code=2),
    Case("splice-flank-abc", ("splice", "--genome", "g.fa", "--annotation", "a.gtf", "--reads", "r.fa", "--flank",
                              "abc"), splice_inputs, "argument --flank: expected a whole number, got 'abc'", code=2),
    Case("access-window-nan", ("access", "rna.fa", "-W", "nan"), fold_input,
         "argument -W/--window: expected a whole number, got 'nan'", code=2),
    Case("access-max-unpaired-real", ("access", "rna.fa", "-u", "2.5"), fold_input,
         "argument -u/--max-unpaired: expected a whole number, got '2.5'", code=2),
    # gamut serve: refused before any warm-up
    Case("serve-idle-timeout-nan", ("serve", "--idle-timeout", "nan"), scan_inputs,
         "argument --idle-timeout: expected a finite number of at least 0, got 'nan'", code=2),
    Case("serve-idle-timeout-inf", ("serve", "--idle-timeout", "inf"), scan_inputs,
         "argument --idle-timeout: expected a finite number of at least 0, got 'inf'", code=2),
    Case("serve-idle-timeout-negative", ("serve", "--idle-timeout", "-1"), scan_inputs,
         "argument --idle-timeout: expected a number of at least 0, got '-1'", code=2),
    Case("serve-idle-timeout-abc", ("serve", "--idle-timeout", "abc"), scan_inputs,
         "argument --idle-timeout: expected a number of at least 0, got 'abc'", code=2),
]


def _run(case: Case, cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "gamut", *case.argv]
    if case.stdout_to_full_device:
        with open("/dev/full", "w") as full:  # the child writes to the device; it is not replaced
            result = subprocess.run(command, check=False, cwd=cwd, stdout=full, stderr=subprocess.PIPE, text=True,
                                    preexec_fn=case.preexec, timeout=120)
        result.stdout = ""
        return result
    return subprocess.run(command, check=False, cwd=cwd, capture_output=True, text=True, preexec_fn=case.preexec,
                          timeout=120)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_error_is_one_line_and_leaves_nothing(case: Case, tmp_path: Path, tmp_path_factory):
    if case.needs_non_root and os.geteuid() == 0:
        pytest.skip(f"running as root: {case.needs_non_root}")
    if case.stdout_to_full_device and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    if case.preexec is limit_file_size:
        # Numba writes its on-disk cache on a fresh installation's first run; under the file-size
        # limit those writes would fail first. Run the command once without the limit elsewhere.
        warm = tmp_path_factory.mktemp("warm")
        case.setup(warm)
        subprocess.run([sys.executable, "-m", "gamut", *case.argv], check=False, cwd=warm, capture_output=True,
                       timeout=300)
    case.setup(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = _run(case, tmp_path)
    lines = [line for line in result.stderr.splitlines() if not line.startswith(NOTICES)]
    assert "Traceback" not in result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gamut: error: "), result.stderr
    assert case.message in lines[0]
    assert result.returncode == case.code, result.stderr
    assert result.stdout == ""  # checked before any output
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no output, no temporary file


def test_compressed_references_scan_like_plain_text(tmp_path: Path):
    """The scan reads zstd (and bzip2, xz, gzip) references, with the same result as plain text."""
    scan_inputs(tmp_path)
    plain = subprocess.run([sys.executable, "-m", "gamut", "scan", "q.fa", "r.fa"], check=False, cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.count("\nq1\tr") == 3  # one site in r1, two in r2
    data = (tmp_path / "r.fa").read_bytes()
    if sys.version_info >= (3, 14):
        from compression import zstd
    else:
        from backports import zstd  # what xopen decompresses zstd with before Python 3.14

    (tmp_path / "r.fa.zst").write_bytes(zstd.compress(data))
    (tmp_path / "r.fa.bz2").write_bytes(bz2.compress(data))
    (tmp_path / "r.xz.fa").write_bytes(lzma.compress(data))  # told by the content, not the name
    for name in ("r.fa.zst", "r.fa.bz2", "r.xz.fa"):
        result = subprocess.run([sys.executable, "-m", "gamut", "scan", "q.fa", name], check=False, cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stdout == plain.stdout


def test_plots_with_the_same_safe_name_do_not_overwrite(tmp_path: Path, capsys):
    """Record names that sanitise to the same file name get _2, _3 in input order."""
    pytest.importorskip("matplotlib")
    _write(tmp_path / "rna.fa", ">x|1\nGGGAAACCC\n>x/1\nGGGGAAAACCCC\n>x:1\nGGAAACC\n")
    plot = tmp_path / "arc.svg"
    assert main(["fold", str(tmp_path / "rna.fa"), "-o", str(tmp_path / "out.txt"), "--plot", str(plot)]) == 0
    names = sorted(p.name for p in tmp_path.glob("arc.*.svg"))
    assert names == ["arc.x_1.svg", "arc.x_1_2.svg", "arc.x_1_3.svg"]
    assert ">x/1 length=12" in (tmp_path / "out.txt").read_text()
    assert "12 nt" in (tmp_path / "arc.x_1_2.svg").read_text()  # the second record's plot


@pytest.mark.parametrize("command, target", [
    (["fold", "GGGAAACCC"], "gamut.folding.cli.fold"),
    (["scan", "{q}", "{r}", "--device", "cpu"], "gamut.scanning.pipeline.runners.scan_chunks"),
])
def test_out_of_memory_is_one_line(command, target, tmp_path: Path, monkeypatch, capsys):
    scan_inputs(tmp_path)

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(target, exhausted)
    argv = [a.format(q=tmp_path / "q.fa", r=tmp_path / "r.fa") for a in command]
    assert main(argv) == 1
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if not line.startswith(NOTICES)]
    assert lines == [lines[0]] and lines[0].startswith(f"gamut: error: out of memory in gamut {command[0]}: try ")
    assert "Traceback" not in captured.err


def test_splice_api_rejects_fractional_exon_coordinates():
    from gamut.errors import InputError

    with pytest.raises(InputError, match=r"exon 2 .*must be integers, got 15.5"):
        gamut_splice(BASE, [(3, 10), (15.5, 23)], TARGET)
    with pytest.raises(InputError, match="must be integers, got an array of float64"):
        gamut_splice(BASE, np.array(EXONS, dtype=float), TARGET)
    with pytest.raises(InputError, match=r"case7: exon 1 must be a \(start, end\) pair"):
        from gamut.splicing.api import splice_many

        splice_many([(BASE, [(3, 10, 12)], TARGET, "case7")], device="cpu")
    assert gamut_splice(BASE, np.array(EXONS, dtype=np.int32), TARGET).score == gamut_splice(BASE, EXONS, TARGET).score


def gamut_splice(base, exons, target):
    from gamut.splicing.api import splice

    return splice(base, exons, target, device="cpu")
