"""Benchmark folding many short sequences: all human miRBase hairpins (``hsa-`` records of
``shared/data/mirbase/hairpin.fa.gz``, 41-180 nt) with the GPU batch engine and the multicore CPU
batch engine in the same run, engine calls and ``gamut.fold(list)`` end to end, results checked equal.

    python bench/fold_batch.py --out bench/results            # GPU vs CPU (all cores)
    python bench/fold_batch.py --no-gpu                        # CPU only

Writes ``fold_batch_<label>.json`` and ``.md``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

HAIRPINS = next((p for p in (ROOT / "shared" / "data" / "mirbase" / "hairpin.fa.gz",
                              ROOT.parent / "shared" / "data" / "mirbase" / "hairpin.fa.gz",
                              ROOT / ".fold-data" / "hairpin.fa.gz") if p.exists()),
                ROOT.parent / "shared" / "data" / "mirbase" / "hairpin.fa.gz")


def best_of(fn, repeat: int) -> tuple[float, list[float], object]:
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), times, value


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fasta", default=str(HAIRPINS),
                   help="miRBase hairpins (default: shared/ in or beside the checkout, else .fold-data/)")
    p.add_argument("--prefix", default="hsa-", help="record name prefix (default hsa-: human)")
    p.add_argument("--min-loop", type=int, default=3)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--no-gpu", action="store_true")
    p.add_argument("--label", default=None)
    p.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = p.parse_args()

    import numba

    import gamut
    from gamut.folding.sequence import encode
    from gamut.folding.batch import encode_many, fold_batch_cpu, layout
    from gamut.io import read_fasta

    records = [(r.name, r.sequence) for r in read_fasta(args.fasta) if r.name.startswith(args.prefix)]
    codes = encode_many(records)
    lengths = codes[2]
    steps = float(sum(int(n) ** 3 / 6 for n in lengths))
    threads = numba.get_num_threads()
    rows: list[dict] = []
    meta = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": "python bench/fold_batch.py " + " ".join(sys.argv[1:]), "host": platform.node(),
            "cpus": os.cpu_count(), "numba_threads": threads, "records": len(records),
            "lengths": [int(lengths.min()), int(lengths.max()), round(float(lengths.mean()), 1)],
            "min_loop": args.min_loop, "fasta": args.fasta, "prefix": args.prefix}

    def add(**row):
        row["gsteps_per_s"] = round(steps / row["seconds"] / 1e9, 2)
        rows.append(row)
        print(json.dumps(row), flush=True)

    few = layout([encode(seq) for _, seq in records[:4]])
    fold_batch_cpu(*few, args.min_loop)  # compile
    gamut.fold(records[:4], args.min_loop, device="cpu")
    best, times, cpu = best_of(lambda: fold_batch_cpu(*codes, args.min_loop), args.repeat)
    add(what="engine", engine="cpu-batch", seconds=best, times=times, detail=f"{threads} threads")
    best, times, cpu_api = best_of(lambda: gamut.fold(records, args.min_loop, device="cpu"), args.repeat)
    add(what="gamut.fold(list)", engine="cpu-batch", seconds=best, times=times, detail="with checks and results")
    label = args.label or f"cpu-{os.cpu_count()}core"
    device = f"CPU, {os.cpu_count()} cores"
    if not args.no_gpu:
        import cupy

        from gamut.folding.gpu import fold_batch_gpu

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
        device = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        label = args.label or next((k for k in ("h200", "h100", "a100") if k in device.lower()), "gpu")
        fold_batch_gpu(*few, args.min_loop)  # compile
        best, times, gpu = best_of(lambda: fold_batch_gpu(*codes, args.min_loop), args.repeat)
        for a, b in zip(gpu, cpu):
            assert np.array_equal(a, b), "GPU and CPU batch results differ"
        add(what="engine", engine="gpu-batch", seconds=best, times=times,
            detail=f"one launch, transfers included; {rows[0]['seconds'] / best:.1f}x the CPU engine, "
            "scores and structures equal")
        best, times, gpu_api = best_of(lambda: gamut.fold(records, args.min_loop, device="cuda"), args.repeat)
        assert [(r.pairs, r.structure) for r in gpu_api] == [(r.pairs, r.structure) for r in cpu_api]
        add(what="gamut.fold(list)", engine="gpu-batch", seconds=best, times=times,
            detail=f"{rows[1]['seconds'] / best:.1f}x the CPU API, results equal")
        events = cupy.cuda.Event(), cupy.cuda.Event()
        events[0].record()
        fold_batch_gpu(*codes, args.min_loop)
        events[1].record()
        events[1].synchronize()
        meta["gpu_event_ms_one_call"] = round(cupy.cuda.get_elapsed_time(*events), 3)
    meta["device"] = device
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"fold_batch_{label}.json").write_text(json.dumps({**meta, "rows": rows}, indent=1))
    lines = [f"# Batch folding benchmark: {device}", "", f"- date: {meta['date']}", f"- command: `{meta['command']}`",
             f"- {len(records):,} records `{args.prefix}*` of {args.fasta} (lengths {meta['lengths'][0]}-"
             f"{meta['lengths'][1]}, mean {meta['lengths'][2]}), min_loop {args.min_loop}; best of {args.repeat}; "
             f"CPU engine on {threads} Numba threads", "",
             "| what | engine | seconds | G steps/s | detail |", "| --- | --- | ---: | ---: | --- |"]
    lines += [f"| {r['what']} | {r['engine']} | {r['seconds']:.4f} | {r['gsteps_per_s']} | {r['detail']} |" for r in rows]
    (out / f"fold_batch_{label}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
