"""Benchmark: miRanda duplex energies per second on the GPU engine (and the CPU engine, same run).

Workload: miRanda-shaped fold strings (45-62 nt): a human miRNA from miRBase (mature.fa.gz, hsa)
written 3'->5' with lower-case flanks, the 'XXXXXXX' linker, then a target site: half of them the
miRNA's complement with random mismatches (real-looking duplexes), half random sequence. A pool of
distinct strings is tiled to --count, every copy distinct (``distinct_copies``: the linker's case
varies, which changes no energy), since the engines fold each distinct string only once.

Reports the kernel time (CUDA events), the end-to-end ``duplex_energies_dcal(device="cuda")`` time
(packing, transfers, kernel, result), the compiled CPU engine on all host cores (--cpu-count
strings), checks GPU == CPU on those strings, and counts the DP work per string.

    python bench/energy_gpu.py --count 5000000 --kind nvidia-h100-x1 --out bench/results

Writes <out>/energy_gpu_<kind>.json and .md.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

from energy import distinct_copies, timed  # bench/energy.py helpers
from gamut.scanning.energy import cpu as E
from gamut.scanning.energy.compiled_model import CODE, PAIR
from gamut.scanning.energy import gpu as G

HERE = Path(__file__).resolve().parent
MATURE = [HERE.parent / "shared" / "data" / "mirbase" / "mature.fa.gz",
          HERE.parent.parent / "shared" / "data" / "mirbase" / "mature.fa.gz",
          Path("/work/shared/data/mirbase/mature.fa.gz")]
GOLDEN = HERE.parent / "tests" / "data" / "energy" / "duplex_30C.tsv"
COMPLEMENT = {"A": "T", "C": "G", "G": "C", "U": "A"}


def human_mirnas(path: Path) -> list[str]:
    """Mature hsa miRNA sequences (upper case, U)."""
    out, name, seq = [], "", []
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if line.startswith(">"):
                if name.startswith("hsa-") and seq:
                    out.append("".join(seq).upper().replace("T", "U"))
                name, seq = line[1:].strip(), []
            else:
                seq.append(line.strip())
    if name.startswith("hsa-") and seq:
        out.append("".join(seq).upper().replace("T", "U"))
    return [s for s in out if 17 <= len(s) <= 26 and set(s) <= set("ACGU")]


def fold_string(mirna: str, rng: random.Random, real_site: bool) -> str:
    """miRNA 3'->5' (a few 5'/3' letters in lower case), the linker, a site of 45-62 nt in all."""
    total = rng.randint(45, 62)
    m = mirna[::-1]
    cut = rng.randint(0, 3)
    m = m[:cut].lower() + m[cut:len(m) - 1] + m[-1].lower()
    site_len = total - len(m) - 7
    if real_site:  # pairs with the miRNA read 5'->3' against the site 3'->5', ~20% mismatches
        site = "".join(rng.choice("ACGT") if rng.random() < 0.2 else COMPLEMENT[b] for b in m.upper())[:site_len]
        site += "".join(rng.choices("acgt", k=max(0, site_len - len(site))))
    else:
        site = "".join(rng.choices("ACGT", k=site_len))
    return m + "XXXXXXX" + site


def golden_mirnas() -> list[str]:
    """The miRNAs of the golden fold strings (5'->3', upper case): where mature.fa.gz is absent."""
    import pandas as pd

    fold = pd.read_csv(GOLDEN, sep="\t", keep_default_na=False).sequence
    return sorted({s.split("XXXXXXX")[0][::-1].upper() for s in fold if "XXXXXXX" in s})


def workload(count: int, pool: int, seed: int, mature: Path | None) -> tuple[list[str], str]:
    """count fold strings (a pool of distinct ones, tiled) and where the miRNAs came from."""
    rng = random.Random(seed)
    found = [p for p in ([mature] if mature else MATURE) if p.exists()]
    mirnas, source = (human_mirnas(found[0]), str(found[0])) if found else (golden_mirnas(), GOLDEN.name)
    pool_strings = sorted({fold_string(rng.choice(mirnas), rng, k % 2 == 0) for k in range(min(pool, count))})
    rng.shuffle(pool_strings)
    return distinct_copies(pool_strings, count), f"{len(mirnas)} miRNAs from {source}"


def dp_work(seqs: list[str]) -> dict[str, float]:
    """Mean cells, pair cells, loop candidates (bulges + interior loops, u1 + u2 <= 30) and
    multiloop split candidates per string: the inner-loop work of the DP."""
    cells = pairs = loops = splits = 0
    for s in seqs:
        n = len(s)
        S = np.array([0] + [int(CODE[ord(c)]) for c in s] + [0])
        pt = PAIR[S[:, None], S[None, :]]
        for d in range(4, n):
            i = np.arange(1, n - d + 1)
            cells += i.size
            splits += i.size * max(0, d - 8)
            k = min(30, d - 6)
            pc = int(np.count_nonzero(pt[i, i + d]))
            pairs += pc
            if k >= 1:
                loops += pc * ((k + 1) * (k + 2) // 2 - 1)
    c = len(seqs)
    return {"cells": cells / c, "pair_cells": pairs / c, "loop_candidates": loops / c, "split_candidates": splits / c}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=5_000_000, help="fold strings for the GPU runs")
    ap.add_argument("--cpu-count", type=int, default=200_000, help="fold strings for the CPU engine (and the check)")
    ap.add_argument("--pool", type=int, default=200_000, help="distinct fold strings, tiled to --count")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--mature", type=Path, help="miRBase mature.fa.gz (default: shared/data/mirbase)")
    ap.add_argument("--kind", default="nvidia-h100-x1", help="machine kind for the file names")
    args = ap.parse_args()

    import cupy as cp

    t0 = time.perf_counter()
    seqs, source = workload(args.count, args.pool, args.seed, args.mature)
    build_s = time.perf_counter() - t0
    lengths = np.fromiter(map(len, seqs), np.int64, len(seqs))
    cores = len(os.sched_getaffinity(0))
    work = dp_work(seqs[:300])

    t0 = time.perf_counter()
    G.gpu_energies(seqs[:1000])  # compile (or load the cached module) and upload the tables
    warm_s = time.perf_counter() - t0

    rows = []
    best_kernel = None
    for _ in range(args.repeats):
        timing = G.Timing()
        gpu = G.gpu_energies(seqs, timing=timing)
        if best_kernel is None or timing.kernel < best_kernel.kernel:
            best_kernel = timing
    rows.append({"run": "GPU kernel only (int16 cells)", "strings": len(seqs),
                 "seconds": round(best_kernel.kernel, 4), "per_s": round(len(seqs) / best_kernel.kernel)})
    raw, offsets = G._checked(seqs)
    t32 = []
    for _ in range(args.repeats):  # the same strings with int32 cells (the engine's overflow path)
        timing = G.Timing()
        gpu32 = G._gpu_fold(raw, offsets, cp.cuda.Device(), 4, timing)
        t32.append(timing.kernel)
    if not np.array_equal(gpu32, gpu):
        raise SystemExit("int32 and int16 cells disagree")
    rows.append({"run": "GPU kernel only (int32 cells, for comparison)", "strings": len(seqs),
                 "seconds": round(min(t32), 4), "per_s": round(len(seqs) / min(t32))})
    wall, _ = timed(lambda: E.duplex_energies_dcal(seqs, device="cuda"), args.repeats)
    rows.append({"run": 'GPU end-to-end duplex_energies_dcal(device="cuda")', "strings": len(seqs),
                 "seconds": round(wall, 4), "per_s": round(len(seqs) / wall)})
    cpu_seqs = seqs[: args.cpu_count]
    E.duplex_energies_dcal(cpu_seqs[:100], device="cpu")  # JIT (or cache load)
    cpu = None

    def cpu_run():
        nonlocal cpu
        cpu = E.duplex_energies_dcal(cpu_seqs, device="cpu", threads=cores)

    wall, cpu_s = timed(cpu_run, args.repeats)
    rows.append({"run": f"CPU compiled engine, {cores} threads", "strings": len(cpu_seqs),
                 "seconds": round(wall, 4), "per_s": round(len(cpu_seqs) / wall)})
    mismatches = int(np.count_nonzero(gpu[: len(cpu_seqs)] != cpu))
    for r in rows:
        print(r, file=sys.stderr)

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    gpu_name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    kernel_rate = len(seqs) / best_kernel.kernel
    result = {
        "benchmark": "energy_gpu", "date": date.today().isoformat(), "host": platform.node(), "gpu": gpu_name,
        "cores": cores, "command": "python bench/energy_gpu.py " + " ".join(sys.argv[1:]),
        "workload": {"strings": len(seqs), "distinct": len(set(seqs)),
                     "length_min": int(lengths.min()), "length_mean": round(float(lengths.mean()), 1),
                     "length_max": int(lengths.max()), "mirnas": source, "build_s": round(build_s, 2),
                     "model": "miranda (Turner 1999, 30 C, dangles=1)"},
        "dp_work_per_string": {k: round(v, 1) for k, v in work.items()},
        "warmup_s": round(warm_s, 2), "launches": best_kernel.launches, "results": rows,
        "check": {"strings": len(cpu_seqs), "gpu_ne_cpu": mismatches},
        "target_per_s": 5_000_000, "kernel_meets_target": kernel_rate >= 5_000_000,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"energy_gpu_{args.kind}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# GPU duplex energy benchmark ({result['date']})", "",
        f"- device: {gpu_name} (`{args.kind}`); host {cores} cores",
        f"- command: `{result['command']}`",
        f"- workload: {len(seqs):,} miRanda fold strings ({result['workload']['distinct']:,} distinct, from a pool of "
        f"{min(args.pool, len(seqs)):,} with the linker's case varied; "
        f"{source} + XXXXXXX + half complementary, half random sites; {lengths.min()}-{lengths.max()} nt, "
        f"mean {lengths.mean():.1f}), model `miranda`",
        f"- DP work per string: {work['cells']:.0f} cells, {work['pair_cells']:.0f} pair cells, "
        f"{work['loop_candidates']:.0f} bulge/interior candidates, {work['split_candidates']:.0f} multiloop splits",
        f"- check: GPU == CPU on {len(cpu_seqs):,} strings: {'yes' if mismatches == 0 else f'NO ({mismatches} differ)'}",
        f"- launches (one per length bucket): " + "; ".join(
            f"{l['kernel']} {l['strings']:,} strings, m={l['maxm']}, {l['warps']} warps x {l['blocks']} blocks"
            for l in best_kernel.launches),
        "", "| run | strings | seconds | per second |", "|---|---|---|---|",
    ]
    lines += [f"| {r['run']} | {r['strings']:,} | {r['seconds']} | {r['per_s']:,} |" for r in rows]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
