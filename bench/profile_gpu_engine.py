"""Where the GPU engine's time goes: ``engine.align`` over the runner's chunks of a case of
:mod:`bench.scan_e2e` (clip, sars, utr), after a warm-up, with the engine's per-stage seconds and
counters and the top functions of a cProfile run; with ``--stages``, also the seconds of each stage of
an in-process ``gamut miranda`` run of the case (its workload's flags). ``--chunk-pairs`` sets the
engine's pairs per chunk (to compare chunk sizes). Prints a report; ``--json`` writes it too.

    python bench/profile_gpu_engine.py --cases clip,utr --clip 20000 --data ../shared/data --stages
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
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
    scan_e2e.warm_engine(engine, scan_input, chunks)
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


def stage_times(query: Path, ref: Path, flags: list[str], device: str, tmp: Path, top: int = 0) -> dict:
    """Seconds of each post-processing stage of one in-process ``gamut miranda`` run (the main
    thread: hits, energies, site filter, sinks; ``align`` is the engine on its worker thread),
    after an untimed warm-up run, by wrapping the stages' functions; with ``top``, then a run with
    this (the writing) thread under cProfile, its ``top`` functions printed."""
    import threading

    import gamut.scanning.pipeline.scan_loop as loop
    from gamut.scanning import miranda_cli
    from gamut.scanning.hits import HitTable
    from gamut.io.textcols import TextBuilder
    from gamut.io import textout
    from gamut.scanning.sinks.base import TextSink

    times: dict[str, float] = {}
    lock = threading.Lock()

    def timed(name, fn):
        def wrapper(*a, **k):
            began = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                with lock:
                    times[name] = times.get(name, 0.0) + time.perf_counter() - began
        return wrapper

    argv = [str(query), str(ref), *flags, "--device", device, "-out", str(tmp / "stages.txt")]
    miranda_cli.main(argv)
    (tmp / "stages.txt").unlink()
    patches = [(loop, "chunk_hits"), (loop, "hit_energies"), (HitTable, "set_energies"), (TextSink, "write"),
               (TextBuilder, "render_array"), (textout, "write_bytes")]
    if os.environ.get("GAMUT_PROFILE_TEXT"):  # the text stages too (inclusive wall times on their threads)
        from gamut.io import textcols
        from gamut.scanning.sinks import columns, miranda

        patches += [(TextBuilder, "fixed"), (TextBuilder, "integers"), (TextBuilder, "records"),
                    (textcols, "_key_order"), (textcols, "_render_rows"), (miranda, "pick"),
                    (columns.ReportedHits, "__init__"), (columns.ReportedHits, "lines"),
                    (miranda.MirandaSink, "_hits"), (miranda.MirandaSink, "_footers")]
    if os.environ.get("GAMUT_PROFILE_ENERGY"):  # the energy stage's parts
        from gamut.scanning.energy import cpu as energy_cpu

        patches += [(energy_cpu, "distinct_strings"), (energy_cpu, "take_strings"), (energy_cpu, "_fold_packed")]
    saved = [(obj, name, getattr(obj, name)) for obj, name in patches]
    from gamut.scanning.engines import gpu as gpu_engine
    saved.append((gpu_engine.GpuEngine, "align", gpu_engine.GpuEngine.align))
    try:
        for obj, name, fn in saved:
            setattr(obj, name, timed(name, fn))
        began = time.perf_counter()
        miranda_cli.main(argv)
        times["whole run (in process)"] = time.perf_counter() - began
    finally:
        for obj, name, fn in saved:
            setattr(obj, name, fn)
    if top:  # the writing thread (this one) under cProfile, in a third run
        (tmp / "stages.txt").unlink()
        prof = cProfile.Profile()
        prof.enable()
        miranda_cli.main(argv)
        prof.disable()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
        print("the writing thread:\n" + text.getvalue())
    return times


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
    ap.add_argument("--chunk-pairs", type=int, default=0, help="the GPU engine's pairs per chunk (default: its own)")
    ap.add_argument("--stages", action="store_true", help="also time the post-processing stages of a run")
    ap.add_argument("--occupies-cores", choices=("0", "1"), default="",
                    help="treat the GPU engine as occupying every core (1) or not (0): post-processing beside it")
    ap.add_argument("--switch-interval", type=float, default=0.0, help="sys.setswitchinterval for the runs (seconds)")
    args = ap.parse_args()
    args.big, args.t2_length = False, 20_000
    if args.occupies_cores:
        from gamut.scanning.engines.gpu import GpuEngine

        GpuEngine.occupies_cores = args.occupies_cores == "1"
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    if args.chunk_pairs:
        import gamut.scanning.engines.gpu as gpu_engine

        gpu_engine.CHUNK_PAIRS_PER_DEVICE = args.chunk_pairs
    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case, (query, ref, flags) in scan_e2e.workloads(args, Path(tmp)).items():
            result = profile_case(query, ref, args.device, args.top)
            if args.stages:
                result["stages"] = stage_times(query, ref, flags, args.device, Path(tmp), args.top)
                print("stages:", json.dumps({k: round(v, 3) for k, v in result["stages"].items()}))
            report[case] = result
            cells = result["cells"]
            print(f"== {case}: {result['pairs']:,} pairs, {result['chunks']} chunks, engine {result['engine_s']:.3f} s "
                  f"({cells / result['engine_s'] / 1e9:.1f} G cells/s)")
            print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in result["stats"].items()}))
            print(result["profile"])
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
