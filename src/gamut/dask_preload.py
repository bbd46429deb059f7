"""A Dask preload for gamut's scans on GPUs (docs/cluster.md): ``dask scheduler ... --preload
gamut.dask_preload`` and ``dask worker ... --preload gamut.dask_preload``.

On the scheduler, it imports the modules that name gamut's cluster tasks' functions
(:data:`TASK_MODULES`): a scheduler unpickles every task it is sent, and the first task of gamut's
that a fresh scheduler saw waited 0.2-0.25 s for those imports (a cluster's first scan only).

On a worker, it takes the heap settings of a streaming process
(:func:`gamut.io.heap.reuse_large_buffers`: under Dask's nanny, every buffer above 128 KiB would be
mapped afresh), then creates the CUDA context of the GPU it sees and runs a
few pairs through a stripe worker's path (:func:`~gamut.scanning.pipeline.stripes.warm_worker`:
Numba's functions, the kernels' modules), as gamut's own GPU workers do, so that a scan's first
tasks on the cluster do not pay for them. A worker that sees no GPU does no more."""
from __future__ import annotations

import importlib
from typing import Any

#: The modules of the functions that gamut's cluster tasks run (scan stripes and partitions, spliced
#: alignment batches).
TASK_MODULES = ("gamut.scanning.pipeline.ahead", "gamut.scanning.pipeline.partitions", "gamut.splicing.api")


def dask_setup(server: Any = None) -> None:
    """Dask's preload hook (called once, as the scheduler or the worker starts)."""
    if _is_scheduler(server):
        for name in TASK_MODULES:
            importlib.import_module(name)
        return
    from gamut.cuda.device import prewarm, visible_gpu_count
    from gamut.io.heap import reuse_large_buffers

    reuse_large_buffers()
    if visible_gpu_count() == 0:
        return
    context = prewarm(0)  # (the warm-up's CPU part runs while the context is made, as in gamut's own workers)
    from gamut.scanning.pipeline.stripes import warm_worker

    warm_worker(context)


def _is_scheduler(server: Any) -> bool:
    if server is None:
        return False
    from distributed import Scheduler

    return isinstance(server, Scheduler)
