"""How many worker processes a scan on several GPUs starts on each GPU (a module of its own, below the job
and the runners, which both read it)."""
from __future__ import annotations

from collections.abc import Sequence

from gamut.numerals import env_count

#: Worker processes per GPU of a scan on several distinct GPUs (``GAMUT_WORKERS_PER_GPU`` sets it).
#: A stripe worker's own host work (its interpreter: task tables, hits, rendering), not its GPU,
#: bounds it, so two per GPU overlap one's host work with the other's kernels; but each process
#: also creates a CUDA context, and those starts do not overlap across processes. Whole scans of the
#: transcriptome set: on 2x H200, 4.77 s with two per GPU against 5.46 s with one and 4.87 s with
#: three (bench/results/profile_stripes_nvidia-h200-x2-2026-11-28.md); on 4x H200, fast mode 4.63 s
#: with two against 4.36 s with one and 5.64 s with three, default mode 8.36 s against 9.12 s and
#: 9.43 s (workers_per_gpu_nvidia-h200-x4-2026-11-28c.md); outputs identical.
WORKERS_PER_GPU = 2


def worker_lanes(gpus: Sequence[int]) -> list[int]:
    """The GPU of each worker process of a scan on ``gpus``: each of several distinct GPUs
    :data:`WORKERS_PER_GPU` times (``0,1`` -> ``0,0,1,1``); a list that already names a GPU more
    than once (``0,0``) is the user's own placement, kept as given."""
    gpus = [int(g) for g in gpus]
    if len(gpus) < 2 or len(set(gpus)) < len(gpus):
        return gpus
    per = workers_per_gpu()
    return [g for g in gpus for _ in range(per)]


def workers_per_gpu() -> int:
    """:data:`WORKERS_PER_GPU`, or ``GAMUT_WORKERS_PER_GPU`` where set (a measurement knob)."""
    return env_count("GAMUT_WORKERS_PER_GPU", WORKERS_PER_GPU)
