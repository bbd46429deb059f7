"""Balance of the GPU scan engine's multi-device split, measured on the host (no GPU needed).

For each workload the runner's chunks (as the GPU engine asks for them with N devices) are split
with :func:`gamut.scanning.engines.gpu.split_over_devices`, exactly as ``GpuEngine.align`` does, and the
report gives, per device count: the cells (query x reference letters) and pairs each device gets,
the largest share over the mean (1.00 = perfect balance; the speed-up on N devices is at most
N / that ratio where the kernels dominate) and the row-bucket mix.

    python bench/scan_split.py                         # clip, sars, t2 with 2 and 4 devices

Workloads as in ``bench/scan_e2e.py`` (real data from ``--data``, i.e. ``../shared/data``).
Writes ``scan_split_<kind>.json`` and ``.md`` to ``--out``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from scan_e2e import SHARED, workloads  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def measure(query: Path, ref: Path, devices: int) -> dict:
    from gamut.scanning.fasta import read_miranda_fasta
    from gamut.scanning.engines.gpu_plan import (CHUNK_CELLS_PER_DEVICE, CHUNK_PAIRS_PER_DEVICE, MAX_GPU_QUERY,
                                                 ROW_BUCKETS, split_over_devices)
    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.scan_loop import ScanInput

    scan_input = ScanInput(read_miranda_fasta(query), read_miranda_fasta(ref), ScanParams(noenergy=True))
    ql = scan_input.query_set.lengths().astype(np.int64)
    rl = scan_input.reference_set.lengths().astype(np.int64)
    # The chunks the GPU engine asks for with this many devices.
    chunks = scan_input.chunks(CHUNK_CELLS_PER_DEVICE * devices, CHUNK_PAIRS_PER_DEVICE * devices)
    cells = np.zeros(devices, np.int64)
    pairs = np.zeros(devices, np.int64)
    buckets = np.zeros((devices, len(ROW_BUCKETS)), np.int64)
    worst_chunk = 1.0
    n_chunks = 0
    for chunk in chunks:
        qlen, rlen = ql[chunk[:, 0]], rl[chunk[:, 1]]
        gpu = np.flatnonzero((qlen > 0) & (rlen > 0) & (qlen <= MAX_GPU_QUERY))
        size = qlen * rlen
        shares = split_over_devices(gpu, size[gpu], devices)
        chunk_cells = np.array([size[s].sum() for s in shares], np.int64)
        if chunk_cells.sum():
            worst_chunk = max(worst_chunk, float(chunk_cells.max() / chunk_cells.mean()))
        cells += chunk_cells
        for d, share in enumerate(shares):
            pairs[d] += share.shape[0]
            b = np.searchsorted(np.array(ROW_BUCKETS), qlen[share])
            buckets[d] += np.bincount(b, minlength=len(ROW_BUCKETS))[: len(ROW_BUCKETS)]
        n_chunks += 1
    return {"devices": devices, "chunks": n_chunks, "cells": cells.tolist(), "pairs": pairs.tolist(),
            "cells_max_over_mean": float(cells.max() / cells.mean()) if cells.sum() else 1.0,
            "pairs_max_over_mean": float(pairs.max() / pairs.mean()) if pairs.sum() else 1.0,
            "worst_chunk_cells_max_over_mean": worst_chunk,
            "bucket_pairs": {str(r): buckets[:, k].tolist() for k, r in enumerate(ROW_BUCKETS) if buckets[:, k].any()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="clip,sars,t2")
    ap.add_argument("--devices", default="2,4")
    ap.add_argument("--mirnas", type=int, default=1921)
    ap.add_argument("--clip", type=int, default=20000)
    ap.add_argument("--t2-length", type=int, default=20_000)
    ap.add_argument("--data", type=Path, default=SHARED)
    ap.add_argument("--kind", default=platform.node())
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args()
    args.cases = [c for c in args.cases.split(",") if c]
    args.big = False
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, (query, ref, _) in workloads(args, Path(tmp)).items():
            for n in (int(x) for x in args.devices.split(",") if x):
                row = {"case": case, **measure(query, ref, n)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"scan_split_{args.kind}"
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python " + " ".join(sys.argv)
    stem.with_suffix(".json").write_text(json.dumps({"date": date, "command": command, "rows": rows}, indent=1))
    lines = [f"# Multi-device split of the GPU scan engine, measured on the host ({args.kind})", "",
             f"- date: {date}", f"- command: `{command}`",
             "- cells and pairs per device over all chunks, as `GpuEngine.align` splits them "
             "(`split_over_devices`); max/mean 1.00 = perfect balance", "",
             "| case | devices | chunks | cells per device (G) | cells max/mean | worst chunk max/mean "
             "| pairs per device | pairs max/mean |",
             "| --- | ---: | ---: | --- | ---: | ---: | --- | ---: |"]
    for r in rows:
        cells = ", ".join(f"{c / 1e9:.3f}" for c in r["cells"])
        pairs = ", ".join(f"{p:,}" for p in r["pairs"])
        lines.append(f"| {r['case']} | {r['devices']} | {r['chunks']} | {cells} | {r['cells_max_over_mean']:.4f} | "
                     f"{r['worst_chunk_cells_max_over_mean']:.4f} | {pairs} | {r['pairs_max_over_mean']:.4f} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
