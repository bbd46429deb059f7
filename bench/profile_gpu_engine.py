"""Where the GPU engine's time goes: ``engine.align`` over the runner's chunks of a case of
:mod:`bench.scan_e2e` (clip, sars, utr), after a warm-up, with the engine's per-stage seconds and
counters and the top functions of a cProfile run; with ``--cli``, also the whole ``gamut miranda``
process of each case (its workload's flags) under cProfile, after an untimed warm-up process.
Prints a report; ``--json`` writes it too.

    python bench/profile_gpu_engine.py --cases clip,utr --clip 20000 --data ../shared/data --cli
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scan_e2e  # noqa: E402  (the workloads)


def profile_case(query: Path, ref: Path, device: str, top: int) -> dict:
    from gamut.scanning.engines import make_engine
    from gamut.scanning.fasta import read_miranda_fasta
    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.pairs import ScanInput

    scan_input = ScanInput(read_miranda_fasta(query), read_miranda_fasta(ref), ScanParams(noenergy=True))
    engine = make_engine(device, None, None)
    qs, rs = scan_input.query_set, scan_input.reference_set
    chunks = list(scan_input.chunks(engine.preferred_chunk_cells, engine.preferred_chunk_pairs))
    engine.align(qs, rs, chunks[0][:64], scan_input.params)  # compile / load kernels
    engine.align(qs, rs, chunks[0], scan_input.params)
    getattr(engine, "stats", {}).clear()
    start = time.perf_counter()
    for pairs in chunks:
        engine.align(qs, rs, pairs, scan_input.params)
    plain = time.perf_counter() - start
    stats = dict(getattr(engine, "stats", {}))
    prof = cProfile.Profile()
    prof.enable()
    for pairs in chunks:
        engine.align(qs, rs, pairs, scan_input.params)
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    return {"engine_s": plain, "pairs": scan_input.n_pairs, "cells": scan_input.total_cells(),
            "chunks": len(chunks), "stats": stats, "profile": text.getvalue()}


def profile_cli(query: Path, ref: Path, flags: list[str], device: str, top: int, tmp: Path) -> str:
    """cProfile of one whole ``gamut miranda`` process (after an untimed one), top functions by cumulative time."""
    out, stats = tmp / "cli_out.txt", tmp / "cli.prof"
    cmd = ["-m", "gamut", "miranda", str(query), str(ref), *flags, "--device", device, "-out", str(out)]
    subprocess.run([sys.executable, *cmd], check=True)
    out.unlink()
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cProfile", "-o", str(stats), *cmd], check=True)
    wall = time.perf_counter() - began
    out.unlink()
    text = io.StringIO()
    pstats.Stats(str(stats), stream=text).sort_stats("cumulative").print_stats(top)
    return f"whole process under cProfile: {wall:.2f} s\n" + text.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="clip,utr")
    ap.add_argument("--clip", type=int, default=20000)
    ap.add_argument("--mirnas", type=int, default=1921)
    ap.add_argument("--utr-refs", type=int, default=scan_e2e.UTR_COUNT)
    ap.add_argument("--data", type=Path, default=scan_e2e.SHARED)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--cli", action="store_true", help="also profile the whole CLI process of each case")
    args = ap.parse_args()
    args.big, args.t2_length = False, 20_000
    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case, (query, ref, flags) in scan_e2e.workloads(args, Path(tmp)).items():
            result = profile_case(query, ref, args.device, args.top)
            if args.cli:
                result["cli_profile"] = profile_cli(query, ref, flags, args.device, args.top, Path(tmp))
            report[case] = result
            cells = result["cells"]
            print(f"== {case}: {result['pairs']:,} pairs, {result['chunks']} chunks, engine {result['engine_s']:.3f} s "
                  f"({cells / result['engine_s'] / 1e9:.1f} G cells/s)")
            print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in result["stats"].items()}))
            print(result["profile"])
            print(result.get("cli_profile", ""))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
