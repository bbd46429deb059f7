"""Pass 1 of the CUDA engine in 16-bit lanes against int32, and segment lengths, on the transcriptome set.

    python bench/pass1_probe.py --data .data --out DIR [--gpu 0] [--copies 10] [--kind KIND]

The ``transcriptome`` case of ``bench/scan_e2e.py`` with ``--noenergy --score-threshold 160``: the
engine alone (in this process, after a warm-up) over the runner's chunks, once one chunk at a time (its
stage times are then the GPU's) and once two at a time (as the runner aligns them), for each tuning
variant. Every variant's results must be the same (an order-free digest of every survivor); the probe
fails otherwise. Writes ``pass1_probe_<kind>.json`` and ``.md`` into ``--out``.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scan_e2e  # noqa: E402
from scan_engine_probe import Utilisation, load  # noqa: E402

#: (name, GpuTuning keywords)
VARIANTS = (
    ("int32", {"packed": False}),
    ("packed", {}),
    ("int32, segments >= 1024", {"packed": False, "min_seg": 1024}),
    ("packed, segments >= 1024", {"min_seg": 1024}),
    ("packed, segments >= 2048", {"min_seg": 2048}),
)


def digest(chunk) -> tuple[int, int]:
    """(survivors, an order-free sum over them) of a chunk's results."""
    m = (1 << 61) - 1
    fields = (chunk.score, chunk.i_end, chunk.j_end, chunk.i_start, chunk.j_start, chunk.op_end - chunk.op_start)
    mixed = np.zeros(chunk.score.shape[0], np.uint64)
    for k, a in enumerate(fields):
        mixed = mixed * np.uint64(1_000_003) + (a.astype(np.int64) + 7 * k).astype(np.uint64)
    return int(chunk.score.shape[0]), int(mixed.sum(dtype=np.uint64)) % m


def timed(engine, scan_input, chunks: list, at_once: int, gpu: int) -> dict:
    qs, rs, params = scan_input.query_set, scan_input.reference_set, scan_input.params
    engine.stats.clear()
    align = lambda pairs: engine.align(qs, rs, pairs, params)  # noqa: E731
    with Utilisation(gpu) as use:
        start = time.perf_counter()
        if at_once == 1:
            got = [digest(align(p)) for p in chunks]
        else:
            with ThreadPoolExecutor(at_once) as pool:
                got = [digest(r) for r in pool.map(align, chunks)]
        wall = time.perf_counter() - start
    stats = {k: round(v, 3) if isinstance(v, float) else v for k, v in engine.stats.items()}
    return {"at_once": at_once, "wall_s": round(wall, 3), "gpu_util_mean": round(use.mean, 1),
            "survivors": sum(n for n, _ in got), "digest": sum(d for _, d in got) % ((1 << 61) - 1), "stats": stats}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=scan_e2e.SHARED)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--copies", type=int, default=scan_e2e.TRANSCRIPTOME_COPIES)
    ap.add_argument("--kind", default="probe")
    ap.add_argument("--variants", default="", help="comma-separated indices into VARIANTS (default all)")
    args = ap.parse_args()
    from scan_e2e import warm_engine

    from gamut.scanning.engines.gpu import GpuEngine
    from gamut.scanning.engines.gpu_plan import GpuTuning

    variants = [VARIANTS[int(k)] for k in args.variants.split(",")] if args.variants else list(VARIANTS)
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        mirs = [r for r in scan_e2e.read_fasta(args.data / "mirbase" / "mature.fa.gz") if r[0].startswith("hsa-")]
        query = scan_e2e.write_fasta(tmp / "hsa.fa", mirs)
        ref = scan_e2e.write_fasta(tmp / "t.fa", scan_e2e.transcriptome_references(args.data, args.copies))
        scan_input = load(query, ref)
        for name, knobs in variants:
            engine = GpuEngine([args.gpu], tuning=GpuTuning(**knobs))
            chunks = list(scan_input.chunks(engine.preferred_chunk_cells, engine.preferred_chunk_pairs))
            warm_engine(engine, scan_input, chunks)
            for at_once in (1, engine.concurrent_chunks):
                row = {"variant": name, "knobs": knobs, "chunks": len(chunks),
                       **timed(engine, scan_input, chunks, at_once, args.gpu)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    same = len({(r["survivors"], r["digest"]) for r in rows}) == 1
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"kind": args.kind, "copies": args.copies, "same_results": same, "rows": rows,
              "command": " ".join(sys.argv)}
    (args.out / f"pass1_probe_{args.kind}.json").write_text(json.dumps(report, indent=1))
    lines = [f"# Pass 1 in 16-bit lanes and segment lengths, transcriptome x{args.copies}, --noenergy -sc 160 "
             f"({args.kind})", "", f"Same survivors in every row: {same}.", "",
             "| variant | at once | wall s | GPU util % | pass1 s | verify+repair s | suppress s | trace s | tasks | "
             "repaired | survivors |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        s = r["stats"]
        lines.append(f"| {r['variant']} | {r['at_once']} | {r['wall_s']} | {r['gpu_util_mean']} | {s.get('pass1_s')} | "
                     f"{s.get('verify_repair_s')} | {s.get('suppress_s')} | {s.get('trace_s')} | {s.get('tasks')} | "
                     f"{s.get('repaired_tasks')} | {r['survivors']} |")
    (args.out / f"pass1_probe_{args.kind}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
