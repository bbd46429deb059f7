"""Benchmark: CPU scan engine throughput (cell updates per second), one core and all cores.

Workloads (-noenergy, default miRanda parameters; cells = sum of query lengths x sum of
reference lengths, real cells only):

- ``utr`` (as in the GAMUT paper's tables): N human miRNAs (miRBase) x M references of K
  letters, built by concatenating the real references in
  ../shared/data/mirbase/references_mixed.fa.gz (precursors, random sequence, a 3'UTR);
- ``clip``: N human miRNAs x the first M fragments of ../shared/data/clip/ago_clip_fragments.fa.gz
  (50 nt AGO CLIP fragments).

Engines: ``simd`` (:class:`gamut.scanning.engines.simd.SimdEngine`, engine time only) and ``scalar``
(``tests/scan_cpu_engine.CpuEngine``, the tests' reference engine; engine and end-to-end time).

    python bench/scan_cpu.py                                   # simd, 256 x 8 x 20 kb
    python bench/scan_cpu.py --workload clip --refs 2000       # simd, 256 x 2000 CLIP fragments
    python bench/scan_cpu.py --engine scalar                   # the scalar engine

Writes bench/results/scan_cpu_<engine>_<workload>-<cores>core.json and .md (the scalar engine
on the default workload: scan_cpu_python-2core.*, as before).
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

from gamut.scanning.hits import SequenceSet
from gamut.scanning.alphabet import encode
from gamut.scanning.fasta import read_miranda_fasta
from gamut.scanning.hits import SequenceSet
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.scan_loop import ScanInput, run_scan
from gamut.scanning.engines.simd import SimdEngine

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the reference engine of the tests
from scan_cpu_engine import CpuEngine  # noqa: E402

SHARED = HERE.parent.parent / "shared" / "data" / "mirbase"
CLIP = HERE.parent.parent / "shared" / "data" / "clip" / "ago_clip_fragments.fa.gz"


def load(path: Path):
    return read_miranda_fasta(path)


def workload(data_dir: Path, n_queries: int, n_refs: int, ref_length: int):
    mirnas = [r for r in load(data_dir / "mature.fa.gz") if r.id.startswith("hsa-")][:n_queries]
    pool = b"".join(r.sequence for r in load(data_dir / "references_mixed.fa.gz"))
    refs = []
    for k in range(n_refs):
        start = (k * ref_length) % max(1, len(pool) - ref_length)
        refs.append(type(mirnas[0])(f"ref{k}", f"{ref_length} nt of references_mixed", pool[start : start + ref_length]))
    return mirnas, refs


def clip_workload(data_dir: Path, clip: Path, n_queries: int, n_refs: int):
    mirnas = [r for r in load(data_dir / "mature.fa.gz") if r.id.startswith("hsa-")][:n_queries]
    return mirnas, load(clip)[:n_refs]


def sequence_set(records) -> SequenceSet:
    return SequenceSet.build([r.id for r in records], [r.sequence for r in records], [encode(r.sequence) for r in records])


def time_engine(engine, queries, refs, params, repeats: int = 1) -> tuple[float, float, int]:
    """(best, median) seconds of ``engine.align`` over all pairs, and the survivor count."""
    qs, rs = sequence_set(queries), sequence_set(refs)
    pairs = np.array([(a, b) for a in range(len(queries)) for b in range(len(refs))], dtype=np.int64)
    engine.align(qs, rs, pairs[:1], params)  # JIT warm-up (cached after the first run)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = engine.align(qs, rs, pairs, params)
        times.append(time.perf_counter() - t0)
    survivors = out.survivor_count()
    return min(times), float(np.median(times)), survivors


def time_end_to_end(queries, refs, params, threads: int) -> tuple[float, int]:
    t0 = time.perf_counter()
    n_hits = sum(int(r.hits.reported.sum()) for r in run_scan(ScanInput(queries, refs, params), CpuEngine(threads)))
    return time.perf_counter() - t0, n_hits


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=("simd", "scalar"), default="simd")
    ap.add_argument("--workload", choices=("utr", "clip"), default="utr")
    ap.add_argument("--queries", type=int, default=256)
    ap.add_argument("--refs", type=int, default=None, help="references (default 8 for utr, 2000 for clip)")
    ap.add_argument("--ref-length", type=int, default=20_000, help="utr: letters per reference")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per thread count (best and median reported)")
    ap.add_argument("--data", type=Path, default=SHARED, help="folder with mature.fa.gz and references_mixed.fa.gz")
    ap.add_argument("--clip", type=Path, default=CLIP, help="CLIP fragments (FASTA, gzipped)")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args()

    if args.workload == "utr":
        queries, refs = workload(args.data, args.queries, args.refs or 8, args.ref_length)
        shape = f"{len(queries)} human miRNAs x {len(refs)} references of {args.ref_length} nt"
    else:
        queries, refs = clip_workload(args.data, args.clip, args.queries, args.refs or 2000)
        shape = f"{len(queries)} human miRNAs x {len(refs)} AGO CLIP fragments of ~50 nt"
    params = ScanParams(noenergy=True)
    cells = sum(len(q) for q in queries) * sum(len(r) for r in refs)
    cores = os.cpu_count() or 1
    make = SimdEngine if args.engine == "simd" else CpuEngine
    rows = []
    for threads in sorted({1, cores}):
        load_before = load_average()
        t_engine, t_median, survivors = time_engine(make(threads), queries, refs, params, args.repeats)
        row = {
            "threads": threads, "engine_s": round(t_engine, 4), "engine_median_s": round(t_median, 4),
            "engine_Mcells_per_s": round(cells / t_engine / 1e6, 1),
            "engine_Mcells_per_s_per_core": round(cells / t_engine / 1e6 / threads, 1),
            "engine_median_Mcells_per_s": round(cells / t_median / 1e6, 1),
            "survivors": survivors, "load_average_before": load_before,
        }
        if args.engine == "scalar":  # the runner in this tree drives per-pair engines
            t_total, n_hits = time_end_to_end(queries, refs, params, threads)
            row.update({"end_to_end_s": round(t_total, 3), "end_to_end_Mcells_per_s": round(cells / t_total / 1e6, 1),
                        "hits": n_hits})
        rows.append(row)
        print(rows[-1], file=sys.stderr)
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name' | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
    flags = subprocess.run(["sh", "-c", "grep -o -w -E 'avx2|avx512f' /proc/cpuinfo | sort -u | tr '\\n' ' '"],
                           capture_output=True, text=True).stdout.strip()
    result = {
        "benchmark": "scan_cpu", "engine": args.engine, "date": date.today().isoformat(), "host": platform.node(),
        "cpu": cpu or platform.processor(), "simd_flags": flags, "cores": cores,
        "command": "python bench/scan_cpu.py " + " ".join(sys.argv[1:]),
        "workload": {"kind": args.workload, "description": shape, "queries": len(queries), "references": len(refs),
                     "query_letters": sum(len(q) for q in queries), "reference_letters": sum(len(r) for r in refs),
                     "cells": cells, "params": "-noenergy, defaults"},
        "results": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    if args.engine == "scalar" and args.workload == "utr":
        stem = args.out / f"scan_cpu_python-{cores}core"
    else:
        stem = args.out / f"scan_cpu_{args.engine}_{args.workload}-{cores}core"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# CPU scan benchmark, {args.engine} engine, {args.workload} workload ({result['date']})", "",
        f"- machine: {result['cpu']}, {cores} cores ({flags}; this project's `python` machine kind, shared)",
        f"- command: `{result['command']}`",
        f"- workload: {shape} ({cells / 1e9:.2f} G cells), -noenergy, default parameters",
        f"- best and median of {args.repeats} timed runs after a warm-up; load average before each row shown",
        "- reference point: a local miRanda 3.3a build reaches about 30-45 M cells/s per core on this machine kind",
        "", "| threads | engine s (best) | M cells/s (best) | per core | M cells/s (median) | survivors | load avg |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['threads']} | {r['engine_s']} | {r['engine_Mcells_per_s']} | {r['engine_Mcells_per_s_per_core']} "
                     f"| {r['engine_median_Mcells_per_s']} | {r['survivors']} | {r['load_average_before']} |")
    if args.engine == "scalar":
        lines += ["", "| threads | end-to-end s | end-to-end M cells/s | hits |", "|---|---|---|---|"]
        lines += [f"| {r['threads']} | {r['end_to_end_s']} | {r['end_to_end_Mcells_per_s']} | {r['hits']} |" for r in rows]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
