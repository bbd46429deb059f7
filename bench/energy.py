"""Benchmark: miRanda duplex energies per second (compiled engine; ViennaRNA engine for reference).

Workload: real miRanda fold strings (miRNA + 'XXXXXXX' + site, 45-62 nt) from
tests/data/energy/duplex_30C.tsv, tiled to --count distinct strings (``distinct_copies``). The compiled engine runs on one
thread and on all cores; the ViennaRNA engine (which also gives structures) on --vienna-count
strings with one process. Rates are per wall second and per CPU second of this process (the
latter is robust to other work sharing the machine; the load average is recorded).

    python bench/energy.py                   # 60,000 strings
    python bench/energy.py --count 10000 --vienna-count 500

Writes bench/results/energy_<machine>.json and .md.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd

from gamut.scanning.energy.cpu import duplex_energies_dcal, duplex_folds

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data" / "energy" / "duplex_30C.tsv"


def distinct_copies(strings: list[str], count: int) -> list[str]:
    """``strings`` tiled to ``count``, every copy distinct: copy c spells the 'XXXXXXX' linker with
    the case pattern of c's bits. The linker's case changes no energy (X pairs only with K, case
    aside; no special tetraloop holds an X), but the engines fold each distinct string once, so
    repeated strings would not measure folding."""
    copies = -(-count // max(1, len(strings)))
    if copies > 128:
        raise SystemExit(f"{count} strings need more than 128 copies of {len(strings)}: give more distinct ones")
    variants = ["".join("x" if c >> b & 1 else "X" for b in range(7)) for c in range(copies)]
    out = [s.replace("XXXXXXX", variants[c], 1) for c in range(copies) for s in strings][:count]
    if len(set(out)) != len(out):
        raise SystemExit("the workload's fold strings are not distinct (a string without the linker?)")
    return out


def timed(fn, repeats: int) -> tuple[float, float]:
    """Best wall time and the CPU time of that run."""
    best = (float("inf"), float("inf"))
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        if wall < best[0]:
            best = (wall, cpu)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=60_000, help="fold strings for the compiled engine")
    ap.add_argument("--vienna-count", type=int, default=1000, help="fold strings for the ViennaRNA engine")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--machine", default="python-2core", help="machine kind for the file names")
    args = ap.parse_args()

    table = pd.read_csv(args.data, sep="\t", keep_default_na=False)
    base = list(table.sequence)
    seqs = distinct_copies(base, args.count)
    want = np.round(table.energy.to_numpy() * 100).astype(np.int64)
    lengths = np.array([len(s) for s in seqs])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

    t0 = time.perf_counter()
    check = duplex_energies_dcal(base[:100], threads=1)  # JIT compile or cache load
    warm_s = time.perf_counter() - t0
    assert np.array_equal(check, want[:100]), "compiled engine disagrees with the golden energies"

    load_before = os.getloadavg()
    rows = []
    for threads in sorted({1, cores}):
        wall, cpu = timed(lambda: duplex_energies_dcal(seqs, threads=threads), args.repeats)
        rows.append({"engine": "compiled", "threads": threads, "strings": len(seqs),
                     "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                     "per_s": round(len(seqs) / wall), "per_s_per_core_wall": round(len(seqs) / wall / threads),
                     "per_cpu_s": round(len(seqs) / cpu)})
        print(rows[-1], file=sys.stderr)
    vseqs = seqs[: args.vienna_count]
    wall, cpu = timed(lambda: duplex_folds(vseqs, threads=1), 1)
    rows.append({"engine": "vienna (energies + structures)", "threads": 1, "strings": len(vseqs),
                 "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "per_s": round(len(vseqs) / wall),
                 "per_s_per_core_wall": round(len(vseqs) / wall), "per_cpu_s": round(len(vseqs) / cpu)})
    print(rows[-1], file=sys.stderr)
    load_after = os.getloadavg()

    cpu_name = subprocess.run(["sh", "-c", "lscpu | grep 'Model name' | cut -d: -f2"],
                              capture_output=True, text=True).stdout.strip()
    result = {
        "benchmark": "energy", "date": date.today().isoformat(), "host": platform.node(),
        "cpu": cpu_name or platform.processor(), "cores": cores,
        "command": "python bench/energy.py " + " ".join(sys.argv[1:]),
        "workload": {"source": str(args.data.name), "strings": len(seqs),
                     "length_min": int(lengths.min()), "length_mean": round(float(lengths.mean()), 1),
                     "length_max": int(lengths.max()), "model": "miranda (Turner 1999, 30 C, dangles=1)"},
        "jit_warmup_s": round(warm_s, 2), "loadavg_before": load_before, "loadavg_after": load_after,
        "results": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"energy_{args.machine}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# Duplex energy benchmark ({result['date']})", "",
        f"- machine: {result['cpu']}, {cores} cores (this project's `{args.machine}` machine kind); "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after (other jobs share it)",
        f"- command: `{result['command']}`",
        f"- workload: {len(seqs)} miRanda fold strings from `{args.data.name}` "
        f"({lengths.min()}-{lengths.max()} nt, mean {lengths.mean():.1f}), model `miranda`",
        "- reference point: the old Vienna library inside miRanda takes about 0.5 ms per fold (~2,000/s per core)",
        "", "| engine | threads | strings | wall s | per s | per s per core | per CPU second |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['engine']} | {r['threads']} | {r['strings']} | {r['wall_s']} | {r['per_s']} "
                     f"| {r['per_s_per_core_wall']} | {r['per_cpu_s']} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
