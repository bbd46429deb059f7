"""Benchmark of the exact spliced alignment: MCUPS and time per case.

Workloads (generated, seeded): the paper-shaped set of 1,010 cases (Tables I-II of Nolasco &
Moreano), an IL1RAPL1-sized case (2,168,787 nt base, 1,878 exons, ~2,355 nt target), the
largest cases of the set and, with ``--wide``, one case of a 300,000 nt target
(:func:`wide_case` of ``tests/splice_generate.py``). Cells = target length x total exon length (the
paper's equation 3). End-to-end rows time what ``api.solve`` returns (scores, chains and
alignments), next to the forward and traceback kernel times of the same runs. Writes
``bench/results/splice_<device-kind>.json`` (raw) and ``.md`` (tables).

    python bench/splice.py                       # GPU when present, plus the CPU fast engine
    python bench/splice.py --device cpu --cases 100 --scale 0.5
    python bench/splice.py --device cuda --check --variants auto --repeat 3 --wide
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from gamut.splicing import cpu
from gamut.splicing.api import solve
from gamut.splicing.model import ScoreParams, make_case

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test suite's case generator
from splice_generate import il1rapl1_like_case, paper_like_cases, wide_case  # noqa: E402


def median_time(fn, repeat: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def same_result(a, b) -> bool:
    """Two engines' results agree: score, chain, exons, spans and the alignment column by column."""
    return ((a.score, a.chain, a.exons, a.target_spans) == (b.score, b.chain, b.exons, b.target_spans)
            and a.alignment.base == b.alignment.base and a.alignment.target == b.alignment.target
            and np.array_equal(a.alignment.base_pos, b.alignment.base_pos)
            and np.array_equal(a.alignment.target_pos, b.alignment.target_pos))


def device_kind(device: str) -> tuple[str, str]:
    if device == "cuda":
        import cupy as cp

        name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"].decode()
        kind = "h100" if "H100" in name else "h200" if "H200" in name else name.split()[-1].lower()
        return kind, name
    model = platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            model = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return "cpu", f"{model} ({os.cpu_count()} cores)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1010)
    parser.add_argument("--scale", type=float, default=1.0, help="shrink the generated set (quick runs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--variants", default="auto,8:16,8:8,4:16,16:4",
                        help="GPU COLS:MAX_WARPS variants to time ('auto': the engine's defaults)")
    parser.add_argument("--skip-il1", action="store_true")
    parser.add_argument("--skip-cpu", action="store_true", help="do not time the CPU fast engine")
    parser.add_argument("--check", action="store_true",
                        help="check GPU last/pred arrays and results (score, chain, alignment) against the CPU fast engine")
    parser.add_argument("--wide", action="store_true", help="add one case of a --wide-target nt target")
    parser.add_argument("--wide-target", type=int, default=300_000)
    parser.add_argument("--largest", type=int, default=132, help="size of the 'largest cases' batch")
    parser.add_argument("--out-dir", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--json-only", help="write the JSON here instead (no .md)")
    args = parser.parse_args(argv)

    from gamut.cuda import resolve_device

    device = resolve_device(args.device)
    kind, device_name = device_kind(device)
    params = ScoreParams()
    t0 = time.perf_counter()
    generated = paper_like_cases(args.cases, seed=args.seed, scale=args.scale)
    cases = [make_case(g.base, g.exons, g.target, params, name=g.name) for g in generated]
    gen_s = time.perf_counter() - t0
    workloads = {"paper_set": cases, "paper_set_first50": cases[:50]}
    by_cells = sorted(cases, key=lambda c: -c.cells)
    workloads["largest"] = by_cells[: args.largest]
    if not args.skip_il1:
        g = il1rapl1_like_case(seed=args.seed)
        workloads["il1rapl1_like"] = [make_case(g.base, g.exons, g.target, params, name=g.name)]
    if args.wide:
        g = wide_case(target_length=args.wide_target, seed=args.seed)
        workloads["wide"] = [make_case(g.base, g.exons, g.target, params, name=g.name)]
    info = {
        name: {
            "cases": len(cs),
            "cells": int(sum(c.cells for c in cs)),
            "exons_mean": float(np.mean([c.n_exons for c in cs])),
            "target_mean": float(np.mean([c.target.size for c in cs])),
            "base_mean": float(np.mean([c.base.size for c in cs])),
        }
        for name, cs in workloads.items()
    }
    results: dict = {
        "device": device_name, "device_kind": kind, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "generation_s": gen_s, "workloads": info, "runs": [], "loadavg_start": os.getloadavg()[0],
    }

    def record(workload: str, engine: str, seconds: float, times: list[float], **extra) -> None:
        cells = info[workload]["cells"]
        row = {"workload": workload, "engine": engine, "seconds": seconds, "times": times,
               "ms_per_case": 1000 * seconds / info[workload]["cases"], "mcups": cells / seconds / 1e6, **extra}
        results["runs"].append(row)
        print(f"{workload:14s} {engine:28s} {seconds * 1000:10.2f} ms  {row['mcups']:12.1f} MCUPS", flush=True)

    cpu_results: dict[str, list] = {}
    if device == "cuda":
        from gamut.splicing.gpu import GpuTiming, forward_gpu_many
        from gamut.splicing.gpu_layout import MAX_WARPS

        variants = [(None, MAX_WARPS) if v == "auto" else tuple(int(x) for x in v.split(":"))
                    for v in args.variants.split(",") if v]
        for cols, warps in variants:  # the forward pass alone, last/pred downloaded
            label = "auto" if cols is None else cols
            forward_gpu_many(cases[:4], params.matrix, params.gap, cols=cols, max_warps=warps)  # compile
            for name, cs in workloads.items():
                kernel_times = []

                def run():
                    timing = GpuTiming()
                    forward_gpu_many(cs, params.matrix, params.gap, cols=cols, max_warps=warps, timing=timing)
                    kernel_times.append(timing.kernel)

                wall, times = median_time(run, args.repeat)
                record(name, f"gpu cols={label} warps={warps} forward (last/pred downloaded)", wall, times)
                record(name, f"gpu cols={label} warps={warps} kernel", statistics.median(kernel_times), kernel_times)
        solve(cases[:4], params, "gpu")  # compile (or load) both kernels before timing
        for name, cs in workloads.items():  # what the API returns: chains and alignments, all on the device
            timings: list[GpuTiming] = []

            def run_solve():
                timing = GpuTiming()
                solve(cs, params, "gpu", timing=timing)
                timings.append(timing)

            wall, times = median_time(run_solve, max(3, args.repeat))
            forward_k = statistics.median(t.kernel for t in timings)
            traceback_k = statistics.median(t.traceback for t in timings)
            stages = {key: statistics.median(t.stages.get(key, 0.0) for t in timings)
                      for key in sorted({k for t in timings for k in t.stages})}
            copies = {key: statistics.median(t.device.get(key, 0.0) for t in timings)
                      for key in sorted({k for t in timings for k in t.device})}
            record(name, "gpu end to end (api solve: scores, chains, alignments)", wall, times,
                   forward_kernel_s=forward_k, traceback_kernel_s=traceback_k,
                   device_s=statistics.median(t.total for t in timings), e2e_over_kernels=wall / (forward_k + traceback_k),
                   host_stages_s=stages, device_copies_s=copies)
            print("    stages (host ms): " + ", ".join(f"{k} {v * 1000:.2f}" for k, v in stages.items())
                  + " | device copies (ms): " + ", ".join(f"{k} {v * 1000:.2f}" for k, v in copies.items()), flush=True)
            record(name, "gpu forward kernel (same runs)", forward_k, [t.kernel for t in timings])
            record(name, "gpu traceback kernel (same runs)", traceback_k, [t.traceback for t in timings])
        if args.check:
            arrays_differ = results_differ = 0
            for name, cs in workloads.items():
                got = forward_gpu_many(cs, params.matrix, params.gap)  # the engine's defaults
                want = cpu.forward_fast_many(cs, params.matrix, params.gap)
                for (a, b), (c, d) in zip(got, want):
                    arrays_differ += int(not (np.array_equal(a, c) and np.array_equal(b, d)))
                del got, want
                cpu_results[name] = solve(cs, params, "fast")
                on_gpu = solve(cs, params, "gpu")
                results_differ += sum(not same_result(a, b) for a, b in zip(on_gpu, cpu_results[name]))
            results["check_mismatches"] = arrays_differ
            results["check_result_mismatches"] = results_differ
            print(f"check: {arrays_differ} cases with last/pred differing between GPU and CPU fast engine, "
                  f"{results_differ} with results (score, chain, alignment) differing", flush=True)

    if not args.skip_cpu:
        threads = os.cpu_count()
        solve(cases[:2], params, "fast")  # compile
        cpu.forward_reference(cases[0], params.matrix, params.gap)
        for name, cs in workloads.items():
            if name == "largest" and device == "cpu":
                continue
            wall, times = median_time(lambda: cpu_results.__setitem__(name, solve(cs, params, "fast")), 1)
            record(name, f"cpu fast end to end (api solve, {threads} threads)", wall, times)
            if len(cs) == 1:
                wall, times = median_time(lambda: cpu.forward_fast(cs[0], params.matrix, params.gap), 1)
                record(name, f"cpu fast forward (one case, {threads} threads tiled)", wall, times)
                if name != "wide":
                    wall, times = median_time(lambda: cpu.forward_fast(cs[0], params.matrix, params.gap, parallel=False), 1)
                    record(name, "cpu fast forward (one case, 1 thread)", wall, times)
            else:
                wall, times = median_time(lambda: cpu.forward_fast_many(cs, params.matrix, params.gap), 1)
                record(name, f"cpu fast forward ({threads} threads, case per thread)", wall, times)
            if name not in ("paper_set", "largest", "wide"):
                wall, times = median_time(lambda: [cpu.forward_reference(c, params.matrix, params.gap) for c in cs], 1)
                record(name, "cpu reference forward (1 thread)", wall, times)

    results["loadavg_end"] = os.getloadavg()[0]
    if args.json_only:
        Path(args.json_only).write_text(json.dumps(results, indent=1))
        return 0
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"splice_{kind}.json").write_text(json.dumps(results, indent=1))
    lines = [
        f"# Spliced alignment benchmark ({kind})", "",
        f"- device: {device_name}", f"- date: {results['date']}", f"- command: `python bench/{results['command']}`",
        f"- 1-minute load average at start/end: {results['loadavg_start']:.2f} / {results['loadavg_end']:.2f}"
        " (above 0: other jobs were sharing the cores)",
        "", "| workload | cases | Gcells | engine | time (ms) | ms/case | MCUPS |", "| --- | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for r in results["runs"]:
        w = info[r["workload"]]
        lines.append(f"| {r['workload']} | {w['cases']} | {w['cells'] / 1e9:.3f} | {r['engine']} | "
                     f"{r['seconds'] * 1000:.2f} | {r['ms_per_case']:.3f} | {r['mcups']:.0f} |")
    e2e = [r for r in results["runs"] if "forward_kernel_s" in r]
    if e2e:
        lines += ["", "End to end on the GPU (what `api.solve` returns) against the kernels of the same runs:", "",
                  "| workload | end to end (ms) | forward kernel (ms) | traceback kernel (ms) | e2e / kernels | "
                  "CPU fast end to end (ms) |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in e2e:
            cpu_row = next((c for c in results["runs"] if c["workload"] == r["workload"]
                            and c["engine"].startswith("cpu fast end to end")), None)
            cpu_ms = f"{cpu_row['seconds'] * 1000:.0f}" if cpu_row else ""
            lines.append(f"| {r['workload']} | {r['seconds'] * 1000:.2f} | {r['forward_kernel_s'] * 1000:.2f} | "
                         f"{r['traceback_kernel_s'] * 1000:.2f} | {r['e2e_over_kernels']:.2f} | {cpu_ms} |")
    if e2e and any(r.get("host_stages_s") for r in e2e):
        keys = sorted({k for r in e2e for k in r.get("host_stages_s", {})})
        lines += ["", "Where the end-to-end time goes (medians, ms): host wall clock per stage of `api.solve` "
                  "(`wait`: the host waiting for the kernels), and the device's upload/download copies:", "",
                  "| workload | " + " | ".join(keys) + " | sum | device upload | device download |",
                  "| --- |" + " ---: |" * (len(keys) + 3)]
        for r in e2e:
            st, dv = r.get("host_stages_s", {}), r.get("device_copies_s", {})
            lines.append(f"| {r['workload']} | " + " | ".join(f"{st.get(k, 0) * 1000:.2f}" for k in keys)
                         + f" | {sum(st.values()) * 1000:.2f} | {dv.get('upload', 0) * 1000:.2f} | "
                         f"{dv.get('download', 0) * 1000:.2f} |")
    if "check_mismatches" in results:
        lines += ["", f"GPU vs CPU fast engine: {results['check_mismatches']} cases with differing last/pred arrays, "
                  f"{results['check_result_mismatches']} with differing results (score, chain, alignment)."]
    (out / f"splice_{kind}.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
