"""The several-GPU scan's serial prefix, measured on a machine without a GPU: the striped runner
(``gamut scan --gpus 0,1``'s design) with two worker processes scanning with the host build of the
kernels, on a few queries against a large reference set, so that reading the inputs, planning and
handing each worker its stripe show in the timeline as in a GPU run (the alignment itself is the
CPU's, and slow: keep the queries few).

    GAMUT_TIMELINE=tl.jsonl python bench/striped_prefix_cpu.py QUERIES.fa REFERENCES.fa OUT.tsv [--workers 2]
    python bench/timeline.py tl.jsonl --out tl

Used to check a change to the hand-over of the stripes before a GPU run (2026-11-28: records sent
as one buffer made the workers' receiving slower on the development VM; that change was reverted).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    from scan_host import build_scan_host, host_engine_factory

    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.job import ScanJob
    from gamut.scanning.pipeline.partitioned import run_partitioned
    from gamut.scanning.pipeline.runners import make_sinks

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("queries")
    ap.add_argument("references")
    ap.add_argument("output")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    lib = build_scan_host(tempfile.mkdtemp())
    began = time.perf_counter()
    job = ScanJob.from_files(args.queries, args.references, ScanParams(noenergy=True, score_threshold=160),
                             outputs=[(args.output, "tsv")], device="cpu", threads=1, progress=False)
    read = time.perf_counter()
    run_partitioned(job, make_sinks(job), host_engine_factory(lib), gpu_workers=[0] * args.workers)
    print(json.dumps({"read_s": round(read - began, 3), "striped_run_s": round(time.perf_counter() - read, 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
