"""How many worker processes a scan on several GPUs starts on each GPU (a module of its own, below
the job and the runners, which both read it)."""
from __future__ import annotations

import os
from collections.abc import Sequence

from gamut.errors import UsageError

#: Worker processes per GPU of a scan on several distinct GPUs (``GAMUT_WORKERS_PER_GPU`` sets it).
#: A stripe worker's own host work (its interpreter: task tables, hits, rendering), not its GPU,
#: bounds it, so two per GPU overlap one's host work with the other's kernels: ``--gpus 0,1`` ran
#: as ``0,0,1,1`` took 4.20 s after start-up instead of 5.45 s on 2x H200 (32 cores), and 4.82 s
#: instead of 7.09 s on the 4x H200 host (64 cores; default mode 10.71 s instead of 16.34 s),
#: outputs identical (bench/results/scan_scaling_nvidia-h200-x2-2026-11-28c-lanes.md,
#: scan_scaling_nvidia-h200-x4-2026-11-28.md).
WORKERS_PER_GPU = 2


def worker_lanes(gpus: Sequence[int]) -> list[int]:
    """The GPU of each worker process of a scan on ``gpus``: each of several distinct GPUs
    :data:`WORKERS_PER_GPU` times (``0,1`` -> ``0,0,1,1``); a list that already names a GPU more
    than once (``0,0``) is the user's own placement, kept as given."""
    gpus = [int(g) for g in gpus]
    if len(gpus) < 2 or len(set(gpus)) < len(gpus):
        return gpus
    raw = os.environ.get("GAMUT_WORKERS_PER_GPU", "").strip()
    try:
        per = int(raw) if raw else WORKERS_PER_GPU
    except ValueError:
        raise UsageError(f"GAMUT_WORKERS_PER_GPU must be a whole number, got '{raw}'") from None
    if per < 1:
        raise UsageError(f"GAMUT_WORKERS_PER_GPU must be at least 1, got {per}")
    return [g for g in gpus for _ in range(per)]
