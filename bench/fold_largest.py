"""The largest Nussinov fold one GPU holds, with its structure, end to end.

Picks n = ``gamut.folding.gpu.max_length(free memory)`` (the int32 tiled triangle, ``2 (n + 64)^2``
bytes, with 1% and 64 MiB to spare), folds a random RNA of that length (seed n) with
``gamut.fold(seq, device="cuda")`` and writes ``fold_<label>_largest.json`` to ``--out``.

    python bench/fold_largest.py --label h200 --out bench/results
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--label", default="gpu")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    import cupy as cp

    import gamut
    from gamut.folding import gpu

    free, total = cp.cuda.runtime.memGetInfo()
    n = gpu.max_length(free)
    print(f"free {free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB -> largest n {n:,} "
          f"(triangle {gpu.triangle_bytes(n) / 1e9:.2f} GB)", flush=True)
    gamut.fold("GGGGAAACCCC" * 200, device="cuda")  # warm-up: kernels and compiled checks
    seq = "".join(np.random.default_rng(n).choice(list("ACGU"), n))
    start = time.perf_counter()
    result = gamut.fold(seq, device="cuda")
    seconds = time.perf_counter() - start
    opened = result.structure.count("(")
    print(f"n={n:,}: {result.pairs:,} pairs, structure with {opened:,} pairs, {seconds:.1f} s end to end", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"fold_{args.label}_largest.json").write_text(json.dumps({
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "free_bytes": int(free),
        "total_bytes": int(total), "n": n, "triangle_bytes": gpu.triangle_bytes(n), "pairs": result.pairs,
        "structure_pairs": opened, "seconds": seconds, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": f"python bench/fold_largest.py --label {args.label}"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
