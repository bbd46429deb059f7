"""When each partition of a multi-GPU scan runs, and where: a ``gamut`` command line (``--gpus 0,1``
...) run in this process with the partitions' computation timed in every process (this one and its
GPU workers), then one line per partition (process, partition, seconds from this process's start
(from the end of the process's previous partition: its pipeline begins the next partition before
one ends) and bytes of data) and per worker start-up.

    python bench/partition_timeline.py miranda hsa.fa utr.fa --device cuda --gpus 0,1 -quiet -out o.txt
    python bench/partition_timeline.py --case utr --data .data --gpus 0,1 --out timeline_utr.md

The second form scans a case of :mod:`bench.scan_e2e` (``gamut miranda ... --device cuda`` and the
case's flags)
and writes the table (with the command and date) to ``--out``. The timings go to
``$GAMUT_TIMELINE`` (default ``partition_timeline.log`` in the working directory), one line per
event, appended by every process.
"""
from __future__ import annotations

import os
import sys
import time

LOG = os.environ.get("GAMUT_TIMELINE", "partition_timeline.log")


def _log(*fields) -> None:
    with open(LOG, "a") as f:
        f.write(" ".join(str(x) for x in fields) + "\n")


def timed_partitions(task, taken):
    """:func:`gamut.scanning.pipeline.partitions.compute_partitions`, each partition timed from the
    previous one's end in the same process (its pipeline begins a partition before the last ends)."""
    from gamut.scanning.pipeline import partitions

    began = time.time()
    for key, data in partitions.compute_partitions(task, taken):
        ended = time.time()
        size = sum(len(d) for d in data) if isinstance(data, tuple) else len(data)
        _log("part", os.getpid(), key, "-", "-", f"{began:.3f}", f"{ended:.3f}", size)
        began = ended
        yield key, data


def timed_warm(task):
    """:func:`gamut.scanning.pipeline.partitions.engine_chunking` (a worker's start-up), timed."""
    from gamut.scanning.pipeline import partitions

    began = time.time()
    out = partitions.engine_chunking(task)
    _log("warm", os.getpid(), f"{began:.3f}", f"{time.time():.3f}")
    return out


def report(path: str) -> str:
    """The log as a table, times from the first line's start."""
    lines = [line.split() for line in open(path)]
    t0 = next(float(f[1]) for f in lines if f[0] == "start")
    out = ["| event | process | partition | from s | to s | bytes |",
           "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for f in lines:
        if f[0] == "part":
            out.append(f"| partition | {f[1]} | {f[2]} | {float(f[5]) - t0:.2f} | {float(f[6]) - t0:.2f} | {int(f[7]):,} |")
        elif f[0] == "warm":
            out.append(f"| worker engine made | {f[1]} | | {float(f[2]) - t0:.2f} | {float(f[3]) - t0:.2f} | |")
        elif f[0] == "end":
            out.append(f"| process ends | | | | {float(f[1]) - t0:.2f} | |")
    return "\n".join(out)


def timed_run(argv: list[str]) -> tuple[int, str]:
    """Run the ``gamut`` command line ``argv`` here with its partitions timed; its exit code and table."""
    from gamut.cli import main as gamut_main
    from gamut.scanning.pipeline import partitioned

    partitioned.compute_partitions = timed_partitions
    partitioned.engine_chunking = timed_warm
    if os.path.exists(LOG):
        os.unlink(LOG)
    _log("start", f"{time.time():.3f}")
    code = gamut_main(argv)
    _log("end", f"{time.time():.3f}")
    return code, report(LOG)


def case_run(argv: list[str]) -> int:
    """``--case NAME --data DIR --gpus LIST --out FILE``: a case of scan_e2e, timed, as markdown."""
    import argparse
    import datetime as dt
    import tempfile
    import types
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import scan_e2e

    ap = argparse.ArgumentParser(prog="partition_timeline.py")
    ap.add_argument("--case", choices=("clip", "utr"), default="utr")
    ap.add_argument("--data", type=Path, default=scan_e2e.SHARED)
    ap.add_argument("--gpus", default="0,1")
    ap.add_argument("--clip", type=int, default=20000)
    ap.add_argument("--device", default="cuda", help="cuda (cpu: no partitions, only the start and end)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = types.SimpleNamespace(data=args.data, mirnas=1921, clip=args.clip, utr_refs=scan_e2e.UTR_COUNT,
                                     cases=args.case, big=False, t2_length=20_000)
        query, ref, flags = scan_e2e.workloads(work, Path(tmp))[args.case]
        gpus = ["--gpus", args.gpus] if args.device != "cpu" else []
        cli = ["miranda", str(query), str(ref), "--device", args.device, *gpus, *flags, "-out", str(Path(tmp) / "out.txt")]
        timed_run(cli)  # warm-up: caches filled, as for any run after the first
        began = time.perf_counter()
        code, table = timed_run(cli)
        wall = time.perf_counter() - began
        if code:
            raise SystemExit(f"gamut {' '.join(cli)}: exit code {code}")
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python bench/partition_timeline.py " + " ".join(argv)
    args.out.write_text(f"# Partition timeline: {args.case}, --gpus {args.gpus}\n\n- date: {date}\n"
                        f"- command: `{command}`\n- wall (in this process, after a warm-up run): {wall:.2f} s\n\n"
                        f"{table}\n")
    print(args.out.read_text())
    return code


def main() -> int:
    if sys.argv[1:2] and sys.argv[1].startswith("--"):
        return case_run(sys.argv[1:])
    code, table = timed_run(sys.argv[1:])
    print(table)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
