"""Issue 46's acceptance 1 and 2 on the CPU, through the host build of the GPU kernels (the same
bodies the GPU runs, compiled with g++: tests/host/turner_mfe_host.cu, turner_pf_host.cu), against
ViennaRNA: 2,000 CLIP fragments (MFE for every option set of the tests, partition function for
the first 500 and four option sets), random RNAs of 1,000-3,000 nt (MFE for every option set,
partition function for some) and, with ``--sets hairpins``, the human miRBase hairpins (MFE), each
as RNAfold reads it. A check the GPU run (``bench/fold_turner.py --check``) repeats on the device;
this one needs no GPU.

    python bench/fold_turner_host_check.py --data ../shared/data --out bench/results [--random 10]
    python bench/fold_turner_host_check.py --data ../shared/data --sets hairpins   # fold_turner_host_check_hairpins.md
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from turner_mfe_host import HostRunner, build_turner_mfe_host  # noqa: E402
from turner_mfe_reference import OPTION_SETS, check_folds, random_rnas  # noqa: E402
from turner_pf_host import HostPfRunner, build_turner_pf_host  # noqa: E402
from fold_turner import check_sets, clip_fragments, human_hairpins  # noqa: E402

from gamut.folding.turner.gpu_mfe import mfe_batch  # noqa: E402
from gamut.folding.turner.gpu_pf import pf_batch  # noqa: E402


def vienna_pf(sequence: str, options) -> tuple[float, np.ndarray]:
    import RNA

    fc = RNA.fold_compound(sequence.upper().replace("T", "U"), options.model_details())
    fc.exp_params_rescale(fc.mfe()[1])
    return fc.pf()[1], np.triu(np.array(fc.bpp())[1:, 1:], 1)


def pf_row(sequences: list[str], options, tmp: str) -> dict:
    runner = HostPfRunner(build_turner_pf_host(tmp, options), options, free_bytes=8 << 30)  # host memory, not a GPU's
    got = pf_batch(sequences, options, runner=runner)
    worst_e = worst_p = 0.0
    for sequence, result in zip(sequences, got):
        g, p = vienna_pf(sequence, options)
        worst_e = max(worst_e, abs(result.ensemble_energy - g) / max(abs(g), 1e-300))
        worst_p = max(worst_p, float(np.abs(result.probabilities - p).max(initial=0.0)))
    return {"records": len(sequences), "worst_relative_ensemble_energy": worst_e, "worst_absolute_probability": worst_p,
            "within_1e-6": bool(worst_e <= 1e-6 and worst_p <= 1e-6)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--random", type=int, default=10, help="random RNAs of 1,000-3,000 nt per option set")
    ap.add_argument("--random-pf", type=int, default=3, help="of them, how many (the shortest) get the pf check")
    ap.add_argument("--sets", default="clip,random,pf",
                    help="which rows: clip, random, hairpins (MFE), pf, pf50 (the partition function of the 50 "
                         "random RNAs of `fold_turner.py --check`, default model, a row each)")
    ap.add_argument("--part", default="0/1", help="K/N: of pf50, every N-th RNA from the K-th (runs side by side)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp()
    runner = HostRunner(build_turner_mfe_host(tmp))
    rows: dict = {}
    wanted = set(args.sets.split(","))
    frags = clip_fragments(2000, args.data / "clip" / "ago_clip_fragments.fa.gz")
    longs = random_rnas(args.random, 1000, 3000, 46)
    mfe_sets = [(name, seqs) for key, name, seqs in
                (("hairpins", "mirbase_hsa_hairpins", human_hairpins(args.data / "mirbase" / "hairpin.fa.gz") if "hairpins" in wanted else []),
                 ("clip", "clip_2000", frags), ("random", f"random_{len(longs)}_1000_3000", longs)) if key in wanted]

    def note(name: str, row: dict) -> None:
        rows[name] = row
        print(name, row, flush=True)
        save(args, rows)

    for options in OPTION_SETS:
        for name, seqs in mfe_sets:
            start = time.perf_counter()
            energies, structures = mfe_batch(seqs, options, runner=runner)
            check_folds(seqs, options, energies, structures)  # raises on the first difference
            note(f"{name} MFE {options}", {"records": len(seqs), "identical_mfe_and_optimal_structure": len(seqs),
                                           "seconds": round(time.perf_counter() - start, 1)})
    if "pf50" in wanted:
        k, n = (int(x) for x in args.part.split("/"))
        longs50 = check_sets(argparse.Namespace(random_count=50))["random_1000_3000"]
        for i in range(k, len(longs50), n):
            start = time.perf_counter()
            row = pf_row([longs50[i]], OPTION_SETS[0], tmp)
            note(f"random_1000_3000[{i}] ({len(longs50[i])} nt) pf {OPTION_SETS[0]}",
                 {**row, "seconds": round(time.perf_counter() - start, 1)})
    for options in OPTION_SETS[:4] if "pf" in wanted else ():
        note(f"clip_500 pf {options}", pf_row(frags[:500], options, tmp))
        note(f"random_{args.random_pf} pf {options}", pf_row(sorted(longs, key=len)[:args.random_pf], options, tmp))
    return 0


def save(args, rows: dict) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / ("fold_turner_host_check" + ("" if args.sets == "clip,random,pf" else "_" + args.sets.replace(",", "_"))
                       + ("" if args.part == "0/1" else "_part" + args.part.replace("/", "of")))
    report = {"date": dt.datetime.now().isoformat(timespec="seconds"), "command": " ".join(sys.argv), "rows": rows}
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    lines = ["# Issue 46 acceptance 1 and 2 on the CPU: the host build of the GPU kernels against ViennaRNA", "",
             f"- date: {report['date']}; command: `python {report['command']}`",
             "- MFE rows: every energy ViennaRNA's integer, every structure optimal by ViennaRNA's evaluation and "
             "ViennaRNA's own where the optimum is unique (checked up to 300 nt); the run stops at the first difference",
             "", "| set, options | result |", "| --- | --- |"]
    lines += [f"| {name} | {json.dumps(row)} |" for name, row in rows.items()]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
