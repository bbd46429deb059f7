"""When each partition of a multi-GPU scan runs, and where: a ``gamut`` command line (``--gpus 0,1``
...) run in this process with the partitions' computation timed in every process (this one and its
GPU workers), then one line per partition (process, first pair number, pairs, seconds from this
process's start, bytes of data) and per worker start-up.

    python bench/partition_timeline.py miranda hsa.fa utr.fa --device cuda --gpus 0,1 -quiet -out o.txt

The timings go to ``$GAMUT_TIMELINE`` (default ``partition_timeline.log`` in the working directory),
one line per event, appended by every process.
"""
from __future__ import annotations

import os
import sys
import time

T0 = time.time()
LOG = os.environ.get("GAMUT_TIMELINE", "partition_timeline.log")


def _log(*fields) -> None:
    with open(LOG, "a") as f:
        f.write(" ".join(str(x) for x in fields) + "\n")


def timed_compute(task, index, start, stop, prev):
    """:func:`gamut.scanning.pipeline.partitions.compute_partition`, timed."""
    from gamut.scanning.pipeline import partitions

    began = time.time()
    data = partitions.compute_partition(task, index, start, stop, prev)
    size = sum(len(d) for d in data) if isinstance(data, tuple) else len(data)
    _log("part", os.getpid(), index, start, stop - start, f"{began:.3f}", f"{time.time():.3f}", size)
    return data


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
    out = ["| event | process | partition | first pair | pairs | from s | to s | bytes |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for f in lines:
        if f[0] == "part":
            out.append(f"| partition | {f[1]} | {f[2]} | {int(f[3]):,} | {int(f[4]):,} | {float(f[5]) - t0:.2f} | "
                       f"{float(f[6]) - t0:.2f} | {int(f[7]):,} |")
        elif f[0] == "warm":
            out.append(f"| worker engine made | {f[1]} | | | | {float(f[2]) - t0:.2f} | {float(f[3]) - t0:.2f} | |")
        elif f[0] == "end":
            out.append(f"| process ends | | | | | | {float(f[1]) - t0:.2f} | |")
    return "\n".join(out)


def main() -> int:
    from gamut.cli import main as gamut_main
    from gamut.scanning.pipeline import partitioned

    partitioned.compute_partition = timed_compute
    partitioned.engine_chunking = timed_warm
    if os.path.exists(LOG):
        os.unlink(LOG)
    _log("start", f"{T0:.3f}")
    code = gamut_main(sys.argv[1:])
    _log("end", f"{time.time():.3f}")
    print(report(LOG))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
