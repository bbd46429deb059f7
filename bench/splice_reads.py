"""Reads to exon chains, whole process (issue 29, acceptance 3): simulated reads of 1-3 kb drawn
from the isoforms of a generated genome (:mod:`gamut.splicing.simulate`; 1% errors, a fifth of
them 1-nt indels; either orientation), placed by their PAF lines, through ``gamut splice
--genome --annotation --reads --alignments`` on each device of ``--devices``, same inputs, same
run. Reports reads/s of the whole process (start-up, reading, cases, alignment, writing), the
share of reads that get the transcript they came from, and (``--stages``) the same work in
process, stage by stage, with the GPU kernels' own times. ``--devices cpu,cuda`` also checks
that both wrote the same table. Writes ``splice_reads_<kind>.{md,json}``.

    python bench/splice_reads.py --reads 100000 --devices cuda,cpu --stages --out bench/results
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
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


def stages(folder: Path, device: str) -> dict:
    """The reads mode's work in this process, stage by stage (seconds), with the device times."""
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reads", type=int, default=100_000)
    ap.add_argument("--genes", type=int, default=400)
    ap.add_argument("--devices", default="cpu")
    ap.add_argument("--stages", action="store_true",
                    help="also time the stages in process (after the runs; GPU devices only)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="whole-process runs per GPU device (the median is reported; the CPU runs --cpu-runs)")
    ap.add_argument("--cpu-runs", type=int, default=1)
    ap.add_argument("--kind", default=platform.node())
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args()
    rows, staged = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        began = time.perf_counter()
        data = make_inputs(folder, args.reads, args.genes)
        print(f"inputs: {data} in {time.perf_counter() - began:.1f} s", flush=True)
        for device in args.devices.split(","):
            out = folder / f"chains_{device}.tsv"
            cmd = [sys.executable, "-m", "gamut", "splice", "--genome", str(folder / "genome.fa"), "--annotation",
                   str(folder / "genes.gtf"), "--reads", str(folder / "reads.fa"), "--alignments",
                   str(folder / "reads.paf"), "--device", device, "-o", str(out)]
            times = []
            for _ in range(args.cpu_runs if device == "cpu" else args.repeat):
                began = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                times.append(time.perf_counter() - began)
            seconds = float(np.median(times))
            import pandas as pd

            table = pd.read_csv(out, sep="\t", keep_default_na=False)
            right = float((table["transcript"] == table["read_id"].str.split("_", n=1).str[1]).mean())
            rows.append({"device": device, "seconds": round(seconds, 3), "runs": [round(t, 3) for t in times],
                         "reads_per_s": round(data["reads"] / seconds), "right_transcript": right,
                         "sha256": hashlib.sha256(out.read_bytes()).hexdigest()})
            print(f"{device}: {seconds:.2f} s ({times}), {data['reads'] / seconds:,.0f} reads/s, "
                  f"right transcript {right:.2%}", flush=True)
        if args.stages:
            for device in [d for d in args.devices.split(",") if d != "cpu"]:
                staged[device] = stages(folder, device)
                print(f"stages {device}: {staged[device]}", flush=True)
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python bench/splice_reads.py " + " ".join(sys.argv[1:])
    same = len({r["sha256"] for r in rows}) == 1
    lines = [f"# Reads to exon chains, whole process ({args.kind})", "", f"- date: {date}", f"- command: `{command}`",
             f"- host: {os.cpu_count()} cores",
             f"- {data['reads']:,} simulated reads (median {data['median_nt']:,.0f} nt, {data['min_nt']:,}-"
             f"{data['max_nt']:,}) from {data['transcripts']:,} transcripts of {data['genes']} genes, 1% errors (a "
             f"fifth 1-nt indels), either orientation; outputs identical across devices: {same}",
             "", "| device | whole process s (median) | reads/s | right transcript |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {r['device']} | {r['seconds']:.2f} | {r['reads_per_s']:,} | {r['right_transcript']:.2%} |"
              for r in rows]
    for device, parts in staged.items():
        lines += ["", f"In process on `{device}` (seconds, same run):", ""]
        lines += [f"- {name}: {value}" for name, value in parts.items()]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"splice_reads_{args.kind}"
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    stem.with_suffix(".json").write_text(json.dumps({"date": date, "command": command, "inputs": data,
                                                     "same_output": same, "rows": rows, "stages": staged}, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
