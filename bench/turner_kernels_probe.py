"""The Turner GPU kernels alone, warm, in this process (issue 46): MFE of one 4,000-nt and one
20,000-nt random RNA and of 1,000,000 windows of 50 nt, and the partition function with pair
probabilities of one 3,000-nt RNA; each with its GPU time (CUDA events, MFE) and the call's wall time.

    python bench/turner_kernels_probe.py [--windows 1000000] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from gamut.folding.turner.gpu_mfe import CupyRunner, mfe_batch
from gamut.folding.turner.gpu_pf import pf_batch
from gamut.folding.turner.options import TurnerOptions


def random_rna(rng: np.random.Generator, n: int) -> str:
    return np.frombuffer(b"ACGU", np.uint8)[rng.integers(0, 4, n)].tobytes().decode()


def timed_mfe(sequences: list[str], options: TurnerOptions, runner: CupyRunner) -> dict:
    runner.kernel_s = 0.0
    start = time.perf_counter()
    energies, structures = mfe_batch(sequences, options, runner=runner)
    return {"sequences": len(sequences), "wall_s": round(time.perf_counter() - start, 4),
            "gpu_s": round(runner.kernel_s, 4), "first_energy": int(energies[0])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=1_000_000)
    ap.add_argument("--out")
    args = ap.parse_args()
    rng = np.random.default_rng(46)
    options = TurnerOptions()
    runner = CupyRunner(0)
    mfe_batch([random_rna(rng, 50)] * 64 + [random_rna(rng, 1500)], options, runner=runner)  # compile, warm
    pf_batch([random_rna(rng, 200)], options)
    report = {}
    for n in (4000, 20000):
        report[f"mfe_{n}"] = timed_mfe([random_rna(rng, n)], options, runner)
        print(n, report[f"mfe_{n}"], flush=True)
    letters = random_rna(rng, args.windows + 49)
    windows = [letters[k:k + 50] for k in range(args.windows)]
    report["mfe_windows_50"] = timed_mfe(windows, options, runner)
    print("windows", report["mfe_windows_50"], flush=True)
    seq = random_rna(rng, 3000)
    start = time.perf_counter()
    result = pf_batch([seq], options)[0]
    report["pf_3000"] = {"wall_s": round(time.perf_counter() - start, 4), "ensemble_energy": result.ensemble_energy}
    print("pf", report["pf_3000"], flush=True)
    if args.out:
        with open(args.out, "w") as out:
            json.dump(report, out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
