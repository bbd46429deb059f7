"""Accessibility throughput: ViennaRNA's local partition function (the CPU engine) against gamut's
GPU engine, on the UTR-like references of ``bench/scan_e2e.py`` (lengths of human 3'UTRs, letters
from the C. elegans region; all 6,150 = 12.4 Mb by default), W=80, L=40, u=1..20, in one run.

- CPU engine: one process on an eighth of the first ``--cpu-refs`` references, then every core on
  all of them (nt/s, and nt/s per core); the set is a slice since the whole one takes minutes.
- GPU engine (``--gpu``): the whole set through ``GpuFolder.fold`` (sequences in, NumPy tables of
  every position and u out), after a warm-up; kernel seconds (device events) beside it; its
  numbers on the CPU slice compared with ViennaRNA's (largest relative difference).
- Whole processes (``--cli-refs`` references): ``gamut access refs.fa -o out.parquet`` with
  ``--device cpu`` (every core) and ``--device cuda``.
- Scan (``--scan``): ``gamut scan`` of the 1,921 human miRNAs against the whole set (TSV, default
  mode, ``--device cuda``) with and without ``--accessibility``, whole processes, median of
  ``--repeat``, after an untimed warm-up process of each.

    python bench/access.py --data ../shared/data                      # CPU only (any machine)
    python bench/access.py --data ../shared/data --gpu --scan --kind nvidia-h100-x1
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scan_e2e  # noqa: E402  (the utr references, FASTA helpers)


def params(args):
    from gamut.access.model import AccessParams

    return AccessParams(args.window, args.span, args.max_unpaired)


def cpu_rows(refs: list[str], cores: int, args) -> tuple[dict, list[np.ndarray]]:
    from gamut.access.cpu import unpaired_many

    quarter = refs[: max(1, len(refs) // 8)]
    began = time.perf_counter()
    unpaired_many(quarter, params(args), 1)
    one = time.perf_counter() - began
    began = time.perf_counter()
    tables = unpaired_many(refs, params(args), cores)
    every = time.perf_counter() - began
    total, one_nt = sum(map(len, refs)), sum(map(len, quarter))
    return {"refs": len(refs), "nt": total, "one_process_s": one, "one_process_nt": one_nt,
            "one_process_nt_per_s": one_nt / one, "all_cores_s": every, "cores": cores,
            "all_cores_nt_per_s": total / every, "per_core_nt_per_s": total / every / cores}, tables


def gpu_row(refs: list[str], check: list[np.ndarray], args) -> dict:
    from gamut.access.gpu import GpuFolder

    folder = GpuFolder(params(args))
    folder.fold(refs[:20])  # warm-up: kernels compiled or loaded, memory pool grown
    folder.runner.kernel_s = 0.0
    folder.runner.phase_s = {}
    began = time.perf_counter()
    tables = folder.fold(refs)
    seconds = time.perf_counter() - began
    worst = 0.0
    for got, expected in zip(tables, check):
        ok = ~np.isnan(expected)
        if not np.array_equal(np.isnan(got), np.isnan(expected)):
            raise SystemExit("the GPU engine's undefined cells differ from ViennaRNA's")
        if ok.any():
            worst = max(worst, float(np.max(np.abs(got[ok] - expected[ok]) / np.maximum(expected[ok], 1e-300))))
    total = sum(map(len, refs))
    return {"refs": len(refs), "nt": total, "fold_s": seconds, "kernel_s": folder.runner.kernel_s,
            "phase_s": folder.runner.phase_s,
            "nt_per_s": total / seconds, "max_relative_difference_on_cpu_slice": worst}


def whole_process(cmd: list[str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - began


def cli_rows(records: list[tuple[str, str]], tmp: Path, devices: list[str], args) -> list[dict]:
    fasta = scan_e2e.write_fasta(tmp / "cli_refs.fa", records)

    def access(source: str, out: Path, device: str) -> list[str]:
        return [sys.executable, "-m", "gamut", "access", source, "-W", str(args.window), "-L", str(args.span),
                "-u", str(args.max_unpaired), "--device", device, "-o", str(out)]

    rows = []
    for device in devices:
        whole_process(access(records[0][1][:200], tmp / "warm.tsv", device))  # warm-up: one short sequence
        out = tmp / f"access_{device}.parquet"
        rows.append({"device": device, "refs": len(records), "nt": sum(len(s) for _, s in records),
                     "wall_s": whole_process(access(str(fasta), out, device)), "output_bytes": out.stat().st_size})
    return rows


def scan_rows(records: list[tuple[str, str]], tmp: Path, args) -> list[dict]:
    mirs = [r for r in scan_e2e.read_fasta(args.data / "mirbase" / "mature.fa.gz") if r[0].startswith("hsa-")]
    queries = scan_e2e.write_fasta(tmp / "hsa.fa", mirs[:1921])
    refs = scan_e2e.write_fasta(tmp / "utr.fa", records)
    warm_refs = scan_e2e.write_fasta(tmp / "utr_warm.fa", records[:30])
    rows = []
    for label, extra in (("scan", []), ("scan --accessibility", ["--accessibility"])):
        base = [sys.executable, "-m", "gamut", "scan", str(queries)]
        tail = ["--device", "cuda", *extra]
        whole_process([*base, str(warm_refs), "-o", str(tmp / "warm_scan.tsv"), *tail])
        walls = []
        for _ in range(max(1, args.repeat)):
            out = tmp / "scan.tsv"
            out.unlink(missing_ok=True)
            walls.append(whole_process([*base, str(refs), "-o", str(out), *tail]))
        rows.append({"run": label, "walls_s": sorted(walls), "wall_s": sorted(walls)[len(walls) // 2],
                     "hits": sum(1 for _ in out.open()) - 1})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refs", type=int, default=scan_e2e.UTR_COUNT, help="utr references (default all 6,150)")
    ap.add_argument("--cpu-refs", type=int, default=200, help="the CPU engine's slice: the first N (default 200)")
    ap.add_argument("--cli-refs", type=int, default=200, help="references of the whole-process runs (default 200)")
    ap.add_argument("--gpu", action="store_true", help="also the GPU engine (and --device cuda processes)")
    ap.add_argument("--scan", action="store_true", help="also gamut scan with and without --accessibility (GPU)")
    ap.add_argument("--repeat", type=int, default=3, help="scan processes per variant (median; default 3)")
    ap.add_argument("--window", type=int, default=80)
    ap.add_argument("--span", type=int, default=40)
    ap.add_argument("--max-unpaired", type=int, default=20)
    ap.add_argument("--data", type=Path, default=scan_e2e.SHARED)
    ap.add_argument("--kind", default=platform.node())
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = ap.parse_args()
    records = scan_e2e.utr_references(args.data, args.refs)
    refs = [seq for _, seq in records]
    cores = len(os.sched_getaffinity(0))
    result: dict = {"set": {"refs": len(refs), "nt": sum(map(len, refs))}}
    result["cpu"], cpu_tables = cpu_rows(refs[:args.cpu_refs], cores, args)
    print(json.dumps(result["cpu"]), flush=True)
    if args.gpu:
        result["gpu"] = gpu_row(refs, cpu_tables, args)
        print(json.dumps(result["gpu"]), flush=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        result["cli"] = cli_rows(records[:args.cli_refs], tmp, ["cpu", "cuda"] if args.gpu else ["cpu"], args)
        print(json.dumps(result["cli"]), flush=True)
        if args.scan:
            result["scan"] = scan_rows(records, tmp, args)
            print(json.dumps(result["scan"]), flush=True)
    write(result, args, cores)
    return 0


def write(result: dict, args, cores: int) -> None:
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python bench/access.py " + " ".join(sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"access_{args.kind}"
    stem.with_suffix(".json").write_text(json.dumps({"date": date, "command": command, "machine": {
        "kind": args.kind, "cores": cores, "python": platform.python_version()}, **result}, indent=1))
    c, s = result["cpu"], result["set"]
    lines = [f"# Accessibility, CPU and GPU engines ({args.kind})", "", f"- date: {date}", f"- command: `{command}`",
             f"- machine: {cores} cores, Python {platform.python_version()}; references: utr references of "
             f"bench/scan_e2e.py, {s['refs']:,} ({s['nt']:,} nt); W={args.window}, L={args.span}, "
             f"u=1..{args.max_unpaired}", "",
             "| engine | processes | references | nt | seconds | nt/s | nt/s per core | kernel s |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
             f"| CPU (ViennaRNA) | 1 | {max(1, c['refs'] // 8)} | {c['one_process_nt']:,} | {c['one_process_s']:.2f} | "
             f"{c['one_process_nt_per_s']:,.0f} | {c['one_process_nt_per_s']:,.0f} | |",
             f"| CPU (ViennaRNA) | {cores} | {c['refs']} | {c['nt']:,} | {c['all_cores_s']:.2f} | "
             f"{c['all_cores_nt_per_s']:,.0f} | {c['per_core_nt_per_s']:,.0f} | |"]
    if "gpu" in result:
        g = result["gpu"]
        lines.append(f"| GPU (gamut) | 1 GPU | {g['refs']:,} | {g['nt']:,} | {g['fold_s']:.2f} | {g['nt_per_s']:,.0f} | "
                     f"| {g['kernel_s']:.2f} |")
        lines += ["", "GPU kernel phases (s): " + ", ".join(f"{k} {v:.3f}" for k, v in g["phase_s"].items()) + "."]
        lines += ["", f"GPU / CPU on every core: **{g['nt_per_s'] / c['all_cores_nt_per_s']:.1f}x** (nt/s). "
                  f"The GPU's probabilities on the CPU slice differ from ViennaRNA's by at most "
                  f"{g['max_relative_difference_on_cpu_slice']:.2g} (relative)."]
    lines += ["", "Whole `gamut access` processes (Parquet output):", "",
              "| device | references | nt | wall s | output bytes |", "| --- | ---: | ---: | ---: | ---: |"]
    lines += [f"| {r['device']} | {r['refs']} | {r['nt']:,} | {r['wall_s']:.2f} | {r['output_bytes']:,} |"
              for r in result["cli"]]
    if "scan" in result:
        lines += ["", "Whole `gamut scan` processes, 1,921 human miRNAs x the set, TSV, `--device cuda`:", "",
                  "| run | wall s (median) | walls | hits |", "| --- | ---: | --- | ---: |"]
        lines += [f"| {r['run']} | {r['wall_s']:.2f} | {', '.join(f'{w:.2f}' for w in r['walls_s'])} | {r['hits']:,} |"
                  for r in result["scan"]]
        base, acc = result["scan"][0]["wall_s"], result["scan"][1]["wall_s"]
        lines += ["", f"With `--accessibility` / without: **{acc / base:.2f}x**."]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
