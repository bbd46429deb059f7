"""Hits to bytes: how fast a sink turns a scan's chunks into its output, against plain writing.

A case of :mod:`bench.scan_e2e` (default utr, ``-quiet``) is scanned once and its chunks are kept in
memory; then, for each ``--threads`` count, the miRanda text sink formats every chunk (build and
render, no file) and, separately, writes them as ``gamut miranda`` does (``sink.write`` into a file,
header and footer included).
The same bytes written alone with ``write`` are the floor (issue #24: a miRanda text output must
not cost more than writing it). Prints a table; ``--json`` writes it too.

    python bench/text_output.py --data ../shared/data --device cuda --threads 1,4,16
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scan_e2e  # noqa: E402  (the workloads)


def scanned(query: Path, ref: Path, flags: list[str], device: str, tmp: Path) -> tuple[list, object]:
    """The case's chunk results (in memory) and its job (quiet as ``flags`` say)."""
    from gamut.scanning.engines import make_engine
    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.job import ScanJob
    from gamut.scanning.pipeline.scan_loop import scan_chunks

    job = ScanJob.from_files(str(query), str(ref), ScanParams(), output=str(tmp / "unused.txt"),
                             quiet="-quiet" in flags, device=device)
    si = job.scan_input
    engine = make_engine(device, None, None, cells=si.total_cells())
    return [result for result, _ in scan_chunks(si, engine)], job


def formatting(results: list, job, threads: int, path: Path | None) -> tuple[float, int]:
    """Seconds to format every chunk (build and render, no file), or with ``path`` to write them
    there as a scan does (``sink.write``: each chunk rendered and written behind the next one's
    building), and the bytes."""
    import numba

    from gamut.scanning.sinks import sink_class

    numba.set_num_threads(threads)
    sink = sink_class("miranda")(job.for_output(job.targets[0]))
    size = 0
    start = time.perf_counter()
    if path is None:
        for result in results:
            size += sink.build(result, True).render_array().shape[0]
        return time.perf_counter() - start, size
    with open(path, "w") as out:
        sink.start(out)
        for result in results:
            sink.write(result, True)
        sink.close()
    return time.perf_counter() - start, path.stat().st_size


def plain_write(path: Path, size: int, piece: int = 40 << 20) -> float:
    """Seconds to write ``size`` bytes in pieces of ``piece`` (about a chunk's text) to ``path``."""
    import numpy as np

    block = np.full(piece, 65, np.uint8)
    start = time.perf_counter()
    with open(path, "wb") as out:
        left = size
        while left > 0:
            out.write(block[:min(piece, left)])
            left -= piece
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", default="utr", choices=("clip", "utr"))
    ap.add_argument("--clip", type=int, default=20000)
    ap.add_argument("--mirnas", type=int, default=1921)
    ap.add_argument("--utr-refs", type=int, default=scan_e2e.UTR_COUNT)
    ap.add_argument("--data", type=Path, default=scan_e2e.SHARED)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--threads", default="1,4,16", help="comma-separated Numba thread counts")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    args.cases, args.big, args.t2_length = args.case, False, 20_000
    report: dict = {"case": args.case, "device": args.device, "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        query, ref, flags = scan_e2e.workloads(args, Path(tmp))[args.case]
        began = time.perf_counter()
        results, job = scanned(query, ref, flags, args.device, Path(tmp))
        report["scan_s"] = time.perf_counter() - began
        report["chunks"], report["hits"] = len(results), sum(len(r.hits) for r in results)
        formatting(results, job, 1, None)  # compiled code loaded
        out = Path(tmp) / "out.txt"
        for threads in (int(t) for t in args.threads.split(",")):
            fmt = min(formatting(results, job, threads, None)[0] for _ in range(args.repeat))
            timed = [formatting(results, job, threads, out) for _ in range(args.repeat)]
            both, size = min(t for t, _ in timed), timed[0][1]
            floor = min(plain_write(out, size) for _ in range(args.repeat))
            row = {"threads": threads, "bytes": size, "format_s": fmt, "format_write_s": both, "write_only_s": floor}
            report["rows"].append(row)
            print(f"threads {threads:3d}: {size / 1e9:.2f} GB  format {fmt:.3f} s ({size / fmt / 1e9:.2f} GB/s)  "
                  f"format+write {both:.3f} s  write alone {floor:.3f} s ({size / floor / 1e9:.2f} GB/s)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
