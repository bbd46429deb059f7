"""Accessibility throughput: the CPU engine (ViennaRNA's local partition function) on the UTR-like
references of ``bench/scan_e2e.py`` (lengths of human 3'UTRs, letters from the C. elegans region),
W=80, L=40, u=1..20, on one process and on every core, in nucleotides per second (and per core).
The GPU engine of issue 28 is not built yet: its column stays empty.

    python bench/access.py --refs 200 --data ../shared/data
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scan_e2e  # noqa: E402  (the utr references)


def timed(sequences: list[str], threads: int, args) -> float:
    from gamut.access.cpu import unpaired_many
    from gamut.access.model import AccessParams

    params = AccessParams(args.window, args.span, args.max_unpaired)
    began = time.perf_counter()
    unpaired_many(sequences, params, threads)
    return time.perf_counter() - began


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refs", type=int, default=200, help="first N of the 6,150 utr references (default 200)")
    ap.add_argument("--window", type=int, default=80)
    ap.add_argument("--span", type=int, default=40)
    ap.add_argument("--max-unpaired", type=int, default=20)
    ap.add_argument("--data", type=Path, default=scan_e2e.SHARED)
    ap.add_argument("--kind", default=platform.node())
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = ap.parse_args()
    refs = [seq for _, seq in scan_e2e.utr_references(args.data, args.refs)]
    total = sum(len(s) for s in refs)
    cores = len(os.sched_getaffinity(0))
    one = timed(refs[: max(1, len(refs) // 4)], 1, args)  # a quarter on one process
    one_nt = sum(len(s) for s in refs[: max(1, len(refs) // 4)])
    every = timed(refs, cores, args)
    row = {"refs": len(refs), "nt": total, "window": args.window, "span": args.span, "max_unpaired": args.max_unpaired,
           "cores": cores, "one_process_nt_per_s": one_nt / one, "all_cores_s": every,
           "all_cores_nt_per_s": total / every, "per_core_nt_per_s": total / every / cores,
           "utr_set_estimate_s": scan_e2e.UTR_TOTAL / (total / every)}
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python bench/access.py " + " ".join(sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"access_{args.kind}"
    stem.with_suffix(".json").write_text(json.dumps({"date": date, "command": command, "row": row}, indent=1))
    lines = [f"# Accessibility, CPU engine ({args.kind})", "", f"- date: {date}", f"- command: `{command}`",
             f"- machine: {cores} cores, Python {platform.python_version()}; references: the first {len(refs)} utr "
             f"references of bench/scan_e2e.py ({total:,} nt); W={args.window}, L={args.span}, u=1..{args.max_unpaired}",
             "", "| engine | processes | seconds | nt/s | nt/s per core | whole utr set (12.4 Mb), estimated |",
             "| --- | ---: | ---: | ---: | ---: | ---: |",
             f"| CPU (ViennaRNA) | 1 | {one:.2f} (a quarter of the set) | {row['one_process_nt_per_s']:,.0f} | "
             f"{row['one_process_nt_per_s']:,.0f} | {scan_e2e.UTR_TOTAL / row['one_process_nt_per_s']:,.0f} s |",
             f"| CPU (ViennaRNA) | {cores} | {every:.2f} | {row['all_cores_nt_per_s']:,.0f} | "
             f"{row['per_core_nt_per_s']:,.0f} | {row['utr_set_estimate_s']:,.0f} s |",
             "| GPU | - | not built yet (issue 28) | | | |"]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
