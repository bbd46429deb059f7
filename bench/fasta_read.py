"""From a reference file's bytes to the :class:`SequenceSet` a scan aligns (issue #45, "big scans
start faster"): a transcriptome-sized synthetic FASTA file (61,500 records, lognormal lengths of
median 1,384 nt, 60-letter lines: 127 MB, 123 Mb) read as ``gamut scan`` reads it, in stages.

    python bench/fasta_read.py [--records 61500] [--repeat 3] [--file /tmp/ref.fa]

Prints the min and median of ``--repeat`` runs of: reading the bytes, parsing them into records,
the records' :class:`SequenceSet` (as :class:`ScanInput` builds it), with ``-trim 1000`` too, and
the whole path (file to set); then of ``--repeat`` fresh processes that each take the whole path
once, as ``gamut scan`` does (the compiled code loaded first): memory fresh from the system.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from gamut.io.inputs import read_input_bytes
from gamut.scanning.fasta import parse_miranda_fasta, read_miranda_fasta
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.pairs import ScanInput


def write_reference(path: Path, records: int, seed: int = 45) -> None:
    """``records`` random records (lognormal lengths, median 1,384 nt) with 60-letter lines."""
    rng = np.random.default_rng(seed)
    lengths = np.maximum(rng.lognormal(np.log(1384), 0.85, records).astype(np.int64), 20)
    alphabet = np.frombuffer(b"ACGT", np.uint8)
    with open(path, "wb") as handle:
        for k, n in enumerate(lengths):
            letters = alphabet[rng.integers(0, 4, int(n))].tobytes()
            lines = b"\n".join(letters[i:i + 60] for i in range(0, len(letters), 60))
            handle.write(b">ENST%011d.1 transcript %d\n" % (k, k) + lines + b"\n")


def timed(fn, repeat: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(repeat):
        result = None
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def once(path: Path) -> float:
    """Seconds of the whole path, file to set, taken once in this process."""
    parse_miranda_fasta(b">warm\nACGU\n", "warm")
    start = time.perf_counter()
    ScanInput([], read_miranda_fasta(path), ScanParams()).reference_set
    return time.perf_counter() - start


def report(name: str, times: list[float]) -> None:
    print(f"{name:28s} min {min(times):.3f} s  median {statistics.median(times):.3f} s  "
          f"({', '.join(f'{t:.3f}' for t in times)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=61_500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--file", type=Path, default=Path("/tmp/gamut_bench_reference.fa"))
    ap.add_argument("--once", action="store_true", help="take the whole path once, print its seconds")
    args = ap.parse_args()
    if args.once:
        print(once(args.file))
        return
    if not args.file.exists():
        write_reference(args.file, args.records)
    print(f"{args.file}: {args.file.stat().st_size / 1e6:.1f} MB")
    parse_miranda_fasta(b">warm\nACGU\n", "warm")  # compiled code loaded before timing
    data = read_input_bytes(args.file)
    records = parse_miranda_fasta(data, str(args.file))
    stages = {
        "read bytes": lambda: read_input_bytes(args.file),
        "parse": lambda: parse_miranda_fasta(data, str(args.file)),
        "reference set": lambda: ScanInput([], records, ScanParams()).reference_set,
        "reference set, -trim 1000": lambda: ScanInput([], records, ScanParams(trim=1000)).reference_set,
        "file to set": lambda: ScanInput([], read_miranda_fasta(args.file), ScanParams()).reference_set,
    }
    for name, fn in stages.items():
        report(name, timed(fn, args.repeat)[0])
    fresh = [float(subprocess.run([sys.executable, __file__, "--once", "--file", str(args.file)], check=True,
                                  capture_output=True, text=True).stdout) for _ in range(args.repeat)]
    report("file to set, fresh process", fresh)
    print(f"{len(records)} records, {sum(map(len, records))} letters")


if __name__ == "__main__":
    main()
