"""Deterministic deaths for the resumable-run and cluster tests, installed from outside the package.

- As a launcher: ``python tests/scan_kill_hooks.py --die-after-partitions K ARGS...`` runs
  ``gamut ARGS...`` in a process that SIGKILLs itself once its run directory has stored K
  partitions (as a power cut or the OOM killer would end it); ``--die-after-writes K``: once it
  has written K pieces of rendered text to its output (mid-write: the output is incomplete).
- As a Dask preload (``dask worker --preload tests/scan_kill_hooks.py``, or
  ``LocalCluster(preload=[...])``): with ``GAMUT_TEST_KILL_WORKER=FILE`` in the worker's
  environment, the worker that starts the partition whose number is in FILE SIGKILLs itself,
  once (FILE is renamed to FILE.fired first).

Both wrap package functions (``RunDir.store``, ``compute_partition``); the package itself has no
test hooks.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path


def die_after_partitions(limit: int) -> None:
    """This process SIGKILLs itself right after its run directory stores its ``limit``-th partition."""
    from gamut.scanning.pipeline.rundir import RunDir

    store = RunDir.store
    stored = [0]

    def storing(self, index: int, data: bytes) -> None:
        store(self, index, data)
        stored[0] += 1
        if stored[0] >= limit:
            os.kill(os.getpid(), signal.SIGKILL)

    RunDir.store = storing


def die_after_writes(limit: int) -> None:
    """This process SIGKILLs itself right after its ``limit``-th piece of rendered text reaches
    its output (flushed to the file, through any compression)."""
    from gamut.io import textout

    write = textout.write_bytes
    written = [0]

    def writing(out, data) -> None:
        write(out, data)
        written[0] += 1
        if written[0] >= limit:
            out.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    textout.write_bytes = writing


def dask_setup(worker) -> None:
    """Dask's preload entry point: arm the worker-kill trigger named by GAMUT_TEST_KILL_WORKER."""
    trigger = os.environ.get("GAMUT_TEST_KILL_WORKER")
    if not trigger:
        return
    from gamut.scanning.pipeline import partitions

    compute = partitions.compute_partition

    def computing(task, index: int, *args):
        with contextlib.suppress(OSError, ValueError):
            if int(Path(trigger).read_text()) == index:
                os.rename(trigger, trigger + ".fired")
                os.kill(os.getpid(), signal.SIGKILL)
        return compute(task, index, *args)

    # Tasks name the function by module and name: the worker resolves it to this wrapper.
    partitions.compute_partition = computing


def main(argv: list[str]) -> int:
    if argv[:1] == ["--die-after-partitions"]:
        die_after_partitions(int(argv[1]))
        argv = argv[2:]
    elif argv[:1] == ["--die-after-writes"]:
        die_after_writes(int(argv[1]))
        argv = argv[2:]
    from gamut.cli import main as gamut_main

    return gamut_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
