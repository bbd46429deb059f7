"""Reads to exon chains, whole process (issue 29, acceptance 3; issue 44 item 9): simulated reads
of 1-3 kb drawn from the isoforms of a generated genome (:mod:`gamut.splicing.simulate`; 1% errors,
a fifth of them 1-nt indels; either orientation) through ``gamut splice --genome --annotation
--reads`` on each device of ``--devices``, same inputs, same run, placed two ways (``--placements``):
by their PAF lines (``paf``: ``--alignments reads.paf``) and by minimap2's spliced mapping in the
process (``mappy``: no ``--alignments``; ``--threads`` threads, default all cores). Reports reads/s
of the whole process (start-up, reading, placement, cases, alignment, writing), the share of reads
that get the transcript they came from, whether every run wrote the same table as the first (the
PAF run of the first device), and (``--stages``) the same work in process, stage by stage, with the
GPU kernels' own times and the placement alone. Writes ``splice_reads_<kind>.{md,json}``.

    python bench/splice_reads.py --reads 100000 --devices cuda,cpu --stages --out bench/results
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def make_inputs(folder: Path, reads: int, genes: int) -> dict:
    """Genome, annotation, reads and PAF of the simulation (seeded) in ``folder``."""
    from gamut.splicing.simulate import simulated_genome, simulated_reads

    rng = np.random.default_rng(29)
    genome = simulated_genome(rng, genes, exon_length=(150, 500), exons=(5, 10))
    drawn, paf = simulated_reads(rng, genome, reads, rate=0.01, indel_share=0.2, lengths=(1000, 3000))
    (folder / "genome.fa").write_text(">chr1\n" + genome.sequence + "\n")
    (folder / "genes.gtf").write_text(genome.gtf())
    with open(folder / "reads.fa", "w") as handle:
        handle.writelines(f">{name}\n{seq}\n" for name, seq in drawn)
    (folder / "reads.paf").write_text("\n".join(paf) + "\n")
    lengths = np.array([len(s) for _, s in drawn])
    return {"reads": len(drawn), "median_nt": float(np.median(lengths)), "min_nt": int(lengths.min()),
            "max_nt": int(lengths.max()), "transcripts": len(genome.transcripts), "genes": genes}


def stages(folder: Path, device: str, threads: int | None, mapped: bool) -> dict:
    """The reads mode's work in this process, stage by stage (seconds), with the device times; with
    ``mapped``, also minimap2's placement of the reads alone on ``threads`` threads."""
    from gamut.io.annotation import read_annotation
    from gamut.io.fasta import read_fasta
    from gamut.splicing.read_outputs import write_read_chains
    from gamut.splicing.reads import assign_reads, read_placements

    clock, out = time.perf_counter(), {}

    def stage(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        out[name] = round(now - clock, 3)
        clock = now

    genome = {r.name: r.sequence.upper() for r in read_fasta(folder / "genome.fa", unique=True)}
    annotation = read_annotation(folder / "genes.gtf", features=("exon",))
    reads = [(r.name, r.sequence.upper()) for r in read_fasta(folder / "reads.fa", unique=True)]
    stage("read inputs")
    placements = read_placements(folder / "reads.paf")
    stage("read placements")
    if mapped:
        from gamut.splicing.read_mapping import ReadMapper
        from gamut.splicing.reads import GPU_READS_PER_CALL as size

        mapper = ReadMapper(folder / "genome.fa", threads)
        stage(f"index the genome (minimap2, {mapper.threads} threads)")
        for _ in mapper.placed_batches(reads[k:k + size] for k in range(0, len(reads), size)):
            pass
        stage(f"place the reads alone (minimap2, {mapper.threads} threads)")
        assign_reads(genome, annotation, reads, mapper, device=device)
        stage("assign, placed by minimap2 (placement, cases, alignment, naming)")
    timing = None
    if device == "cuda":
        from gamut.splicing.gpu import GpuTiming

        timing = GpuTiming()
    chains = assign_reads(genome, annotation, reads, placements, device=device, timing=timing)
    stage("assign (cases, alignment, naming)")
    write_read_chains(chains, str(folder / f"stages_{device}.tsv"))
    stage("write TSV")
    if timing is not None:
        out["forward kernel"] = round(timing.kernel, 3)
        out["traceback kernel"] = round(timing.traceback, 3)
        out["GPU host stages"] = {k: round(v, 3) for k, v in timing.stages.items()}
    return out


def placement_scaling(folder: Path, counts: list[int]) -> list[dict]:
    """minimap2's placement of the reads alone, in this process, on each thread count (the index
    built once): seconds, reads/s, and the process' CPU seconds over them (the cores its threads
    got: a shared host's other work takes some)."""
    from gamut.io.fasta import read_fasta
    from gamut.splicing.read_mapping import ReadMapper
    from gamut.splicing.reads import GPU_READS_PER_CALL as size

    reads = [(r.name, r.sequence) for r in read_fasta(folder / "reads.fa", unique=True)]
    mapper = ReadMapper(folder / "genome.fa", max(counts))
    out = []
    for threads in counts:
        mapper.threads = threads
        began, cpu = time.perf_counter(), time.process_time()
        for _ in mapper.placed_batches(reads[k:k + size] for k in range(0, len(reads), size)):
            pass
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        out.append({"threads": threads, "seconds": round(seconds, 3), "reads_per_s": round(len(reads) / seconds),
                    "cpu_seconds": round(cpu, 3), "cores_used": round(cpu / seconds, 2)})
        print(f"placement alone on {threads} threads: {seconds:.2f} s, {len(reads) / seconds:,.0f} reads/s, "
              f"{cpu:.2f} CPU s", flush=True)
    return out


def run_rows(folder: Path, data: dict, args: argparse.Namespace) -> list[dict]:
    """One row per device and placement: the whole process timed (median of its runs)."""
    import pandas as pd

    rows = []
    for device in args.devices.split(","):
        # An untimed run first, as any run after the first finds them: Numba's and the kernels' caches filled.
        subprocess.run([sys.executable, "-m", "gamut", "splice", "--genome", str(folder / "genome.fa"), "--annotation",
                        str(folder / "genes.gtf"), "--reads", str(folder / "reads.fa"), "--device", device,
                        "--alignments", str(folder / "reads.paf"), "-o", str(folder / "warm.tsv")],
                       check=True, capture_output=True)
        for placement in args.placements.split(","):
            out = folder / f"chains_{device}_{placement}.tsv"
            cmd = [sys.executable, "-m", "gamut", "splice", "--genome", str(folder / "genome.fa"), "--annotation",
                   str(folder / "genes.gtf"), "--reads", str(folder / "reads.fa"), "--device", device, "-o", str(out)]
            if placement == "paf":
                cmd += ["--alignments", str(folder / "reads.paf")]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            times, cpu = [], []
            for _ in range(args.cpu_runs if device == "cpu" else args.repeat):
                began, used = time.perf_counter(), _children_cpu()
                subprocess.run(cmd, check=True, capture_output=True)
                times.append(time.perf_counter() - began)
                cpu.append(_children_cpu() - used)
            seconds = float(np.median(times))
            table = pd.read_csv(out, sep="\t", keep_default_na=False)
            right = float((table["transcript"] == table["read_id"].str.split("_", n=1).str[1]).mean())
            rows.append({"device": device, "placement": placement, "threads": args.threads or os.cpu_count(),
                         "seconds": round(seconds, 3), "runs": [round(t, 3) for t in times],
                         "cpu_seconds": round(float(np.median(cpu)), 3),
                         "reads_per_s": round(data["reads"] / seconds), "right_transcript": right,
                         "sha256": hashlib.sha256(out.read_bytes()).hexdigest()})
            rows[-1]["same_table"] = rows[-1]["sha256"] == rows[0]["sha256"]
            print(f"{device}, {PLACEMENTS[placement]}: {seconds:.2f} s ({times}), {data['reads'] / seconds:,.0f} "
                  f"reads/s, right transcript {right:.2%}, same table {rows[-1]['same_table']}", flush=True)
    return rows


def _children_cpu() -> float:
    """CPU seconds (user and system) of this process' finished children."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


#: How each run places the reads.
PLACEMENTS = {"paf": "PAF given (--alignments)", "mappy": "minimap2 in process (mappy)"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reads", type=int, default=100_000)
    ap.add_argument("--genes", type=int, default=400)
    ap.add_argument("--devices", default="cpu")
    ap.add_argument("--placements", default="paf,mappy",
                    help="paf (--alignments given), mappy (minimap2 in process), or both (default)")
    ap.add_argument("--threads", type=int, help="gamut splice --threads (default: all cores)")
    ap.add_argument("--placement-threads", metavar="N,N,...",
                    help="also time minimap2's placement alone in process on these thread counts (e.g. 1,2,4,8,16)")
    ap.add_argument("--stages", action="store_true",
                    help="also time the stages in process (after the runs; GPU devices only)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="whole-process runs per GPU device (the median is reported; the CPU runs --cpu-runs)")
    ap.add_argument("--cpu-runs", type=int, default=1)
    ap.add_argument("--kind", default=platform.node())
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args()
    unknown = set(args.placements.split(",")) - set(PLACEMENTS)
    if unknown:
        ap.error(f"--placements: unknown {', '.join(sorted(unknown))} (choose from {', '.join(PLACEMENTS)})")
    mapped = "mappy" in args.placements.split(",")
    if (mapped or args.placement_threads) and importlib.util.find_spec("mappy") is None:
        ap.error("the mappy run needs minimap2's binding: pip install mappy (or --placements paf)")
    staged, scaling = {}, []
    load = [round(os.getloadavg()[0], 2)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        began = time.perf_counter()
        data = make_inputs(folder, args.reads, args.genes)
        print(f"inputs: {data} in {time.perf_counter() - began:.1f} s", flush=True)
        rows = run_rows(folder, data, args)
        if args.placement_threads:
            scaling = placement_scaling(folder, [int(n) for n in args.placement_threads.split(",")])
        if args.stages:
            for device in [d for d in args.devices.split(",") if d != "cpu"]:
                staged[device] = stages(folder, device, args.threads, mapped)
                print(f"stages {device}: {staged[device]}", flush=True)
    load.append(round(os.getloadavg()[0], 2))
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python bench/splice_reads.py " + " ".join(sys.argv[1:])
    same = all(r["same_table"] for r in rows)
    lines = [f"# Reads to exon chains, whole process ({args.kind})", "", f"- date: {date}", f"- command: `{command}`",
             f"- host: {os.cpu_count()} cores; 1-minute load average before and after the runs: {load[0]}, {load[1]}",
             f"- {data['reads']:,} simulated reads (median {data['median_nt']:,.0f} nt, {data['min_nt']:,}-"
             f"{data['max_nt']:,}) from {data['transcripts']:,} transcripts of {data['genes']} genes, 1% errors (a "
             f"fifth 1-nt indels), either orientation; every run wrote the same table: {same}",
             "", "| device | placement | threads | whole process s (median) | reads/s | CPU s | right transcript | "
             "same table |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    lines += [f"| {r['device']} | {PLACEMENTS[r['placement']]} | {r['threads']} | {r['seconds']:.2f} | "
              f"{r['reads_per_s']:,} | {r['cpu_seconds']:.2f} | {r['right_transcript']:.2%} | {r['same_table']} |"
              for r in rows]
    if scaling:
        lines += ["", "minimap2's placement alone, in process (index built once; same run):", "",
                  "| threads | s | reads/s | CPU s | cores used (CPU s / s) |", "| ---: | ---: | ---: | ---: | ---: |"]
        lines += [f"| {r['threads']} | {r['seconds']:.2f} | {r['reads_per_s']:,} | {r['cpu_seconds']:.2f} | "
                  f"{r['cores_used']:.2f} |" for r in scaling]
    for device, parts in staged.items():
        lines += ["", f"In process on `{device}` (seconds, same run):", ""]
        lines += [f"- {name}: {value}" for name, value in parts.items()]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"splice_reads_{args.kind}"
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    record = {"date": date, "command": command, "inputs": data, "same_output": same, "load_average": load,
              "rows": rows, "stages": staged, "placement_scaling": scaling}
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
