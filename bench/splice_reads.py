"""Reads to exon chains, whole process (issue 29, acceptance 3): simulated reads of about 1-3 kb
drawn from the isoforms of a generated genome (:mod:`gamut.splicing.simulate`; 1% errors, a fifth
of them 1-nt indels; either orientation), placed by their PAF lines, through ``gamut splice
--genome --annotation --reads --alignments`` on each device of ``--devices``, same inputs, same
run. Reports reads/s of the whole process (reading, cases, alignment, writing) and the share of
reads that get the transcript they came from; ``--devices cpu,cuda`` also checks that both wrote
the same table. Writes ``splice_reads_<kind>.{md,json}``.

    python bench/splice_reads.py --reads 100000 --devices cpu,cuda --out bench/results
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reads", type=int, default=100_000)
    ap.add_argument("--genes", type=int, default=400)
    ap.add_argument("--devices", default="cpu")
    ap.add_argument("--kind", default=platform.node())
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args()
    from gamut.splicing.simulate import simulated_genome, simulated_reads

    rng = np.random.default_rng(29)
    genome = simulated_genome(rng, args.genes, exon_length=(150, 600))
    reads, paf = simulated_reads(rng, genome, args.reads, rate=0.01, indel_share=0.2)
    lengths = np.array([len(s) for _, s in reads])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "genome.fa").write_text(">chr1\n" + genome.sequence + "\n")
        (folder / "genes.gtf").write_text(genome.gtf())
        (folder / "reads.fa").write_text("".join(f">{name}\n{seq}\n" for name, seq in reads))
        (folder / "reads.paf").write_text("\n".join(paf) + "\n")
        for device in args.devices.split(","):
            out = folder / f"chains_{device}.tsv"
            cmd = [sys.executable, "-m", "gamut", "splice", "--genome", str(folder / "genome.fa"), "--annotation",
                   str(folder / "genes.gtf"), "--reads", str(folder / "reads.fa"), "--alignments",
                   str(folder / "reads.paf"), "--device", device, "-o", str(out)]
            began = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            seconds = time.perf_counter() - began
            import pandas as pd

            table = pd.read_csv(out, sep="\t", keep_default_na=False)
            right = float((table["transcript"] == table["read_id"].str.split("_", n=1).str[1]).mean())
            rows.append({"device": device, "seconds": seconds, "reads_per_s": len(reads) / seconds,
                         "right_transcript": right, "sha256": hashlib.sha256(out.read_bytes()).hexdigest()})
            print(f"{device}: {seconds:.2f} s, {len(reads) / seconds:,.0f} reads/s, right transcript {right:.2%}",
                  flush=True)
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python bench/splice_reads.py " + " ".join(sys.argv[1:])
    same = len({r["sha256"] for r in rows}) == 1
    lines = [f"# Reads to exon chains, whole process ({args.kind})", "", f"- date: {date}", f"- command: `{command}`",
             f"- {len(reads):,} simulated reads (median {np.median(lengths):,.0f} nt, {lengths.min():,}-{lengths.max():,}), "
             f"{args.genes} genes x 3 isoforms, 1% errors (a fifth 1-nt indels); outputs identical across devices: {same}",
             "", "| device | whole process s | reads/s | right transcript |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {r['device']} | {r['seconds']:.2f} | {r['reads_per_s']:,.0f} | {r['right_transcript']:.2%} |" for r in rows]
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"splice_reads_{args.kind}"
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    stem.with_suffix(".json").write_text(json.dumps({"date": date, "command": command, "reads": len(reads),
                                                     "same_output": same, "rows": rows}, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
