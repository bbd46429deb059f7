"""Benchmark the GPU scan engine in the shape of GAMUT's (CUDA-miRanda's) Tables 2 and 3.

Table 2: 1, 32, 64, 128, 256 queries x 256 references of ~20 kb. Table 3: 256 x 256 with average
reference lengths 1k/5k/10k/22k. Scores only (-noenergy). For every configuration it reports:

- ``engine``: ``GpuEngine.align`` over all pairs (alignment, candidates, suppression, tracebacks),
  the median of ``--repeat`` runs after an untimed full-size one;
- ``pipeline``: the full ``run_scan`` with -noenergy (adds hit strings, overlap rule, strict),
  the engine driven in the runner's chunks;
- ``cpu``: the CPU engine in the same run on a sample of the pairs (``--cpu-cells``), GCUPS
  extrapolated from the sample, and the GPU/CPU ratio.

``--big`` adds the 2,000 queries x 20,000 references run (reference lengths log-normal, mean
about 2 kb) through the engine in large chunks, with time and peak device memory.

Writes ``bench/results/scan_gpu_<kind>.json`` (raw) and ``.md`` (table, device, date, command).
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

from gamut.scanning.hits import SequenceSet
from gamut.scanning.alphabet import encode
from gamut.scanning.fasta import SeqRecord
from gamut.scanning.params import ScanParams

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the reference CPU engine and the kernels' host build live there
COMPLEMENT = np.array([3, 2, 1, 0, 4], np.int8)
UTR_COMPOSITION = np.array([0.28, 0.21, 0.22, 0.29])  # A, C, G, U
LETTERS = np.frombuffer(b"ACGUN", np.uint8)


def query_pool() -> list[bytes]:
    """Real miRNAs from the golden test inputs (the bench runs where ../shared is absent)."""
    seen: dict[bytes, None] = {}
    for fa in sorted((ROOT / "tests" / "data" / "miranda").glob("*/query.fa")):
        seq = b""
        for line in fa.read_bytes().splitlines() + [b">"]:
            if line.startswith(b">"):
                if 15 <= len(seq) <= 30 and set(seq.upper()) <= set(b"ACGUT"):
                    seen[seq.upper()] = None
                seq = b""
            else:
                seq += line.strip()
    return list(seen)


def make_queries(n: int, rng: np.random.Generator) -> list[bytes]:
    """``n`` miRNA-like queries: real ones first, then random ones with the real length mix."""
    pool = query_pool()
    out = pool[:n]
    lengths = [len(s) for s in pool] or [22]
    while len(out) < n:
        L = int(rng.choice(lengths))
        out.append(LETTERS[rng.choice(4, L)].tobytes())
    return out


def make_references(lengths: np.ndarray, queries: list[bytes], rng: np.random.Generator) -> list[bytes]:
    """UTR-like random sequences with a planted (15% mutated) query complement every ~1.5 kb."""
    qcodes = [encode(q) for q in queries]
    out = []
    for R in lengths:
        codes = rng.choice(4, int(R), p=UTR_COMPOSITION).astype(np.int8)
        for _ in range(int(rng.poisson(R / 1500))):
            q = qcodes[int(rng.integers(len(qcodes)))]
            if codes.shape[0] > q.shape[0]:
                site = COMPLEMENT[q[::-1]]
                mutate = rng.random(site.shape[0]) < 0.15
                site = np.where(mutate, rng.integers(0, 4, site.shape[0]), site).astype(np.int8)
                pos = int(rng.integers(0, codes.shape[0] - q.shape[0] + 1))
                codes[pos : pos + q.shape[0]] = site
        out.append(LETTERS[codes].tobytes())
    return out


def device_info(host: bool) -> dict:
    if host:
        return {"gpu": "none (kernels' host build, smoke test only)", "host": platform.node(), "cpus": os.cpu_count()}
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return {"gpu": name, "gpu_count": cupy.cuda.runtime.getDeviceCount(), "cupy": cupy.__version__,
            "host": platform.node(), "cpus": os.cpu_count()}


def time_engine(engine, qs, rs, pairs, params) -> tuple[float, int]:
    t0 = time.perf_counter()
    res = engine.align(qs, rs, pairs, params)
    return time.perf_counter() - t0, survivor_count(res)


def survivor_count(res) -> int:
    """Survivors in an engine's results (the GPU engine counts without building per-pair objects)."""
    return res.survivor_count()


def time_pipeline(engine, queries, refs, params) -> tuple[float, int]:
    from gamut.scanning.pipeline.scan_loop import ScanInput, run_scan

    records_q = [SeqRecord(f"q{k}", "", s) for k, s in enumerate(queries)]
    records_r = [SeqRecord(f"r{k}", "", s) for k, s in enumerate(refs)]
    t0 = time.perf_counter()
    scan_input = ScanInput(records_q, records_r, params)
    chunk = int(getattr(engine, "preferred_chunk_cells", 64_000_000))
    hits = sum(int(res.hits.reported.sum()) for res in run_scan(scan_input, engine, chunk_cells=chunk))
    return time.perf_counter() - t0, hits


def run_config(label: str, nq: int, nr: int, mean_len: int, spread: float, args, engines, rng) -> dict:
    from scan_cpu_engine import CpuEngine

    queries = make_queries(nq, rng)
    lengths = np.maximum(1, np.round(mean_len * rng.uniform(1 - spread, 1 + spread, nr))).astype(np.int64)
    refs = make_references(lengths, queries, rng)
    qs = SequenceSet.from_codes([encode(q) for q in queries])
    rs = SequenceSet.from_codes([encode(r) for r in refs])
    pairs = np.array([(a, b) for a in range(nq) for b in range(nr)], np.int64)
    cells = int((qs.lengths()[pairs[:, 0]] * rs.lengths()[pairs[:, 1]]).sum())
    params = ScanParams(noenergy=True)
    row: dict = {"config": label, "queries": nq, "references": nr, "mean_ref_len": float(lengths.mean()),
                 "cells": cells}
    # Compile / warm up every kernel instance the configuration needs (one per query length).
    warm = np.array([(q, 0) for q in np.unique(qs.lengths(), return_index=True)[1]], np.int64)
    for name, engine in engines.items():
        engine.align(qs, rs, warm, params)
        engine.align(qs, rs, pairs, params)  # untimed full-size run: memory pools grown, caches warm
        runs = []
        for _ in range(args.repeat):
            engine.stats.clear()
            runs.append(time_engine(engine, qs, rs, pairs, params))
        t, n = sorted(runs)[len(runs) // 2]  # the median run
        row[f"{name}_engine_runs_s"] = [round(x, 4) for x, _ in runs]
        row[f"{name}_stats"] = {k: round(v, 4) for k, v in engine.stats.items()}
        if args.profile and name == "gpu1":  # an extra, untimed run under the profiler
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
            time_engine(engine, qs, rs, pairs, params)
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(10)
        row[f"{name}_engine_s"] = t
        row[f"{name}_engine_gcups"] = cells / t / 1e9
        row["survivors"] = n
    gpu = engines["gpu1"]
    t, hits = time_pipeline(gpu, queries, refs, params)
    row["gpu1_pipeline_s"] = t
    row["gpu1_pipeline_gcups"] = cells / t / 1e9
    row["hits"] = hits
    # CPU engine on a sample of pairs (same data, same run).
    cpu = CpuEngine(args.threads)
    cpu.align(qs, rs, pairs[:1], params)
    order = rng.permutation(len(pairs))
    acc, take = 0, []
    for k in order:
        take.append(k)
        acc += int(qs.lengths()[pairs[k, 0]] * rs.lengths()[pairs[k, 1]])
        if acc >= args.cpu_cells:
            break
    t0 = time.perf_counter()
    cpu.align(qs, rs, pairs[np.array(take)], params)
    tc = time.perf_counter() - t0
    row["cpu_sample_cells"] = acc
    row["cpu_gcups"] = acc / tc / 1e9
    row["cpu_est_s"] = cells / (acc / tc)
    row["gpu_vs_cpu"] = row["gpu1_engine_gcups"] / row["cpu_gcups"]
    if "gpuN" in engines:
        row["scaling"] = row["gpuN_engine_gcups"] / row["gpu1_engine_gcups"]
    print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    return row


def run_big(args, rng, make_engine) -> dict:
    """2,000 queries x 20,000 references of realistic lengths through one GPU, in big chunks."""
    nq, nr = args.big_queries, args.big_references
    queries = make_queries(nq, rng)
    lengths = np.clip(np.round(rng.lognormal(np.log(1500), 0.75, nr)), 50, 30_000).astype(np.int64)
    refs = make_references(lengths, queries, rng)
    qs = SequenceSet.from_codes([encode(q) for q in queries])
    rs = SequenceSet.from_codes([encode(r) for r in refs])
    params = ScanParams(noenergy=True)
    engine = make_engine(None)
    qlen = np.array([len(q) for q in qs], np.int64)
    cells = int(qlen.sum() * lengths.sum())
    engine.align(qs, rs, np.array([[0, 0]]), params)
    t0 = time.perf_counter()
    survivors = 0
    pairs_done = 0
    per_chunk = max(1, args.big_chunk_pairs // nr) # queries per chunk
    for q0 in range(0, nq, per_chunk):
        qi = np.arange(q0, min(nq, q0 + per_chunk))
        pairs = np.stack(np.meshgrid(qi, np.arange(nr), indexing="ij"), -1).reshape(-1, 2).astype(np.int64)
        res = engine.align(qs, rs, pairs, params)
        survivors += survivor_count(res)
        pairs_done += len(pairs)
        del res
    t = time.perf_counter() - t0
    # Post-processing cost (hit strings etc.), measured on a sample of pairs and extrapolated.
    from gamut.scanning.hits import chunk_hits

    qset = SequenceSet.build([f"q{k}" for k in range(nq)], queries, [qs.class_codes(k) for k in range(nq)])
    rset = SequenceSet.build([f"r{k}" for k in range(nr)], refs, [rs.class_codes(k) for k in range(nr)])
    sample = np.stack([rng.integers(0, nq, 200_000), rng.integers(0, nr, 200_000)], -1).astype(np.int64)
    chunk_hits(qset, rset, sample[:10], engine.align(qs, rs, sample[:10], params))  # compile
    res = engine.align(qs, rs, sample, params)
    t1 = time.perf_counter()
    chunk_hits(qset, rset, sample, res)
    post_per_pair = (time.perf_counter() - t1) / len(sample)
    row = {"config": "big", "queries": nq, "references": nr, "mean_ref_len": float(lengths.mean()),
           "cells": cells, "engine_s": t, "engine_gcups": cells / t / 1e9, "survivors": survivors,
           "pairs": pairs_done, "peak_device_bytes": engine.peak_device_bytes,
           "postprocess_s_per_pair": post_per_pair, "postprocess_est_s": post_per_pair * pairs_done,
           "stats": engine.stats}
    print(json.dumps(row), flush=True)
    return row


def write_results(rows: list[dict], big: dict | None, info: dict, args, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"scan_gpu_{args.kind}"
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python " + " ".join(sys.argv)
    stem.with_suffix(".json").write_text(json.dumps({"device": info, "date": date, "command": command,
                                                     "rows": rows, "big": big}, indent=1))
    lines = [f"# scan_gpu benchmark ({args.kind})", "", f"- device: {info}", f"- date: {date}",
             f"- command: `{command}`", "- cells = query letters x reference letters; -noenergy; times in s", "",
             "| config | queries x refs | mean ref len | Gcells | GPU engine s | GPU GCUPS | pipeline s | pipeline GCUPS "
             "| CPU GCUPS (sample) | GPU/CPU | survivors | GPU engine runs s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(
            f"| {r['config']} | {r['queries']} x {r['references']} | {r['mean_ref_len']:.0f} | {r['cells'] / 1e9:.2f} "
            f"| {r['gpu1_engine_s']:.3f} | {r['gpu1_engine_gcups']:.1f} | {r['gpu1_pipeline_s']:.3f} "
            f"| {r['gpu1_pipeline_gcups']:.1f} | {r['cpu_gcups']:.2f} | {r['gpu_vs_cpu']:.0f}x | {r['survivors']} "
            f"| {', '.join(f'{x:.3f}' for x in r.get('gpu1_engine_runs_s', []))} |")
    if any("scaling" in r for r in rows):
        lines += ["", "| config | GPUs | GCUPS | scaling vs 1 GPU |", "| --- | --- | --- | --- |"]
        for r in rows:
            if "scaling" in r:
                lines.append(f"| {r['config']} | {args.gpus} | {r['gpuN_engine_gcups']:.1f} | {r['scaling']:.2f} |")
    if big:
        lines += ["", f"Big run: {big['queries']} x {big['references']} (mean ref {big['mean_ref_len']:.0f} nt, "
                  f"{big['cells'] / 1e12:.2f} Tcells): engine {big['engine_s']:.1f} s ({big['engine_gcups']:.0f} GCUPS), "
                  f"peak device memory {big['peak_device_bytes'] / 2**30:.2f} GiB, {big['survivors']} survivors; "
                  f"CPU post-processing estimated {big['postprocess_est_s']:.0f} s "
                  f"({big['postprocess_s_per_pair'] * 1e6:.1f} us/pair)."]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", default="nvidia-h100-x1", help="device kind, used in the result file names")
    ap.add_argument("--gpus", default="0", help="GPUs for the multi-GPU column, e.g. 0,1,2,3 or all")
    ap.add_argument("--threads", type=int, default=None, help="CPU engine threads (default: all cores)")
    ap.add_argument("--cpu-cells", type=float, default=2e9, help="cells of the CPU engine's sample per config")
    ap.add_argument("--tables", default="2,3", help="which tables to run (2, 3 or both)")
    ap.add_argument("--scale-down", type=int, default=1, help="divide queries and references by this (smoke test)")
    ap.add_argument("--big", action="store_true", help="also run 2,000 x 20,000 realistic")
    ap.add_argument("--big-queries", type=int, default=2000)
    ap.add_argument("--big-references", type=int, default=20000)
    ap.add_argument("--big-chunk-pairs", type=int, default=2_000_000)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="timed engine runs per configuration (the median is reported)")
    ap.add_argument("--host", action="store_true", help="run the kernels' host build (no GPU; smoke test)")
    ap.add_argument("--profile", action="store_true", help="print a cProfile summary of each GPU engine run")
    args = ap.parse_args(argv)
    from gamut.scanning.engines.gpu import GpuEngine

    rng = np.random.default_rng(args.seed)
    info = device_info(args.host)
    if args.host:
        import tempfile

        from scan_host import HostBackend, build_scan_host

        lib = build_scan_host(tempfile.mkdtemp())

        def make_engine(ids):
            return GpuEngine([], threads=args.threads, backends=[HostBackend(lib)])

        multi = [0]
    else:
        from gamut.cuda import parse_gpus

        def make_engine(ids):
            return GpuEngine(ids or [0], threads=args.threads)

        multi = parse_gpus(args.gpus)
    engines = {"gpu1": make_engine([0])}
    if len(multi) > 1:
        engines["gpuN"] = make_engine(multi)
    scale = args.scale_down
    rows = []
    tables = args.tables.split(",")
    if "2" in tables:
        for nq in (1, 32, 64, 128, 256):
            rows.append(run_config(f"T2 q={nq}", max(1, nq // scale), 256 // scale, 20_000, 0.1, args, engines, rng))
    if "3" in tables:
        for mean in (1_000, 5_000, 10_000, 22_000):
            rows.append(run_config(f"T3 len={mean}", 256 // scale, 256 // scale, mean, 0.5, args, engines, rng))
    big = run_big(args, rng, make_engine) if args.big else None
    write_results(rows, big, info, args, Path(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
