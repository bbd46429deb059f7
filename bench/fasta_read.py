"""From a reference file's bytes to the :class:`SequenceSet` a scan aligns (issue #45, "big scans
start faster"): a transcriptome-sized synthetic FASTA file (61,500 records, lognormal lengths of
median 1,384 nt, 60-letter lines: 127 MB, 123 Mb) read as ``gamut scan`` reads it, in stages.

    python bench/fasta_read.py [--records 61500] [--repeat 3] [--file /tmp/ref.fa]

Prints the min and median of ``--repeat`` runs of: reading the bytes, parsing them into records
(in pieces on every core, as ``gamut scan`` does, and in one pass on one thread; then beside a
million objects of a crowded process, a Dask worker's case), the records' :class:`SequenceSet`
(as :class:`ScanInput` builds it), with ``-trim 1000`` too, and the whole path (file to set); then
of ``--repeat`` fresh processes that each take the whole path once, as ``gamut scan`` does (the
compiled code loaded first): memory fresh from the system; in pieces and in one pass.

    python bench/fasta_read.py --file /tmp/w/tx.fa --json out.json   (the transcriptome set)
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from gamut.io.inputs import read_input_bytes
from gamut.scanning import fasta_scan
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


def one_pass(fn):
    """``fn`` with the file parsed in one pass on one thread (as before pieces)."""
    def run():
        kept, fasta_scan.PIECE_BYTES = fasta_scan.PIECE_BYTES, 1 << 62
        try:
            return fn()
        finally:
            fasta_scan.PIECE_BYTES = kept
    return run


def report(name: str, times: list[float], table: dict) -> None:
    table[name] = times
    print(f"{name:34s} min {min(times):.3f} s  median {statistics.median(times):.3f} s  "
          f"({', '.join(f'{t:.3f}' for t in times)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=61_500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--file", type=Path, default=Path("/tmp/gamut_bench_reference.fa"))
    ap.add_argument("--once", action="store_true", help="take the whole path once, print its seconds")
    ap.add_argument("--one-pass", action="store_true", help="with --once: parse in one pass on one thread")
    ap.add_argument("--json", type=Path, help="write the times here too")
    args = ap.parse_args()
    if args.once:
        print((one_pass(lambda: once(args.file)) if args.one_pass else lambda: once(args.file))())
        return
    if not args.file.exists():
        write_reference(args.file, args.records)
    print(f"{args.file}: {args.file.stat().st_size / 1e6:.1f} MB")
    parse_miranda_fasta(b">warm\nACGU\n", "warm")  # compiled code loaded before timing
    data = read_input_bytes(args.file)
    records = parse_miranda_fasta(data, str(args.file))
    parse = lambda: parse_miranda_fasta(data, str(args.file))  # noqa: E731
    stages = {
        "read bytes": lambda: read_input_bytes(args.file),
        "parse": parse,
        "parse, one pass": one_pass(parse),
        "reference set": lambda: ScanInput([], records, ScanParams()).reference_set,
        "reference set, -trim 1000": lambda: ScanInput([], records, ScanParams(trim=1000)).reference_set,
        "file to set": lambda: ScanInput([], read_miranda_fasta(args.file), ScanParams()).reference_set,
    }
    table: dict[str, list[float]] = {}
    for name, fn in stages.items():
        report(name, timed(fn, args.repeat)[0], table)
    crowd = [{k: [k]} for k in range(1_000_000)]  # a crowded process: collections walk these
    report("parse, crowded process", timed(parse, args.repeat)[0], table)
    report("parse, one pass, crowded process", timed(one_pass(parse), args.repeat)[0], table)
    del crowd
    for name, extra in (("file to set, fresh process", []), ("file to set, fresh, one pass", ["--one-pass"])):
        report(name, [float(subprocess.run([sys.executable, __file__, "--once", "--file", str(args.file), *extra],
                                           check=True, capture_output=True, text=True).stdout)
                      for _ in range(args.repeat)], table)
    print(f"{len(records)} records, {sum(map(len, records))} letters")
    if args.json:
        args.json.write_text(json.dumps({"file": str(args.file), "records": len(records), "seconds": table}, indent=1))


if __name__ == "__main__":
    main()
