"""A Dask worker preload for gamut's scans on GPUs: ``dask worker ... --preload gamut.dask_preload``
(docs/cluster.md). As the worker starts, it takes the heap settings of a streaming process
(:func:`gamut.io.heap.reuse_large_buffers`: under Dask's nanny, every buffer above 128 KiB would be
mapped afresh), then creates the CUDA context of the GPU it sees and runs a
few pairs through a stripe worker's path (:func:`~gamut.scanning.pipeline.stripes.warm_worker`:
Numba's functions, the kernels' modules), as gamut's own GPU workers do, so that a scan's first
tasks on the cluster do not pay for them. A worker that sees no GPU does nothing here."""
from __future__ import annotations

from typing import Any


def dask_setup(worker: Any = None) -> None:
    """Dask's preload hook (called once, as the worker starts)."""
    from gamut.cuda.device import prewarm, visible_gpu_count
    from gamut.io.heap import reuse_large_buffers

    reuse_large_buffers()
    if visible_gpu_count() == 0:
        return
    prewarm(0)  # (the warm-up's CPU part runs while the context is made, as in gamut's own workers)
    from gamut.scanning.pipeline.stripes import warm_worker

    warm_worker()
