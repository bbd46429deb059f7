"""Dask clusters for gamut: connect to ``local:N``, ``tcp://HOST:PORT`` or a ``distributed.Client``,
and run tasks with a bounded window of work in flight, delivering results in order.

Dask is optional: nothing here imports it at module level, and asking for a cluster without it
installed is a one-line :class:`~gamut.errors.UsageError` naming ``pip install 'gamut[dask]'``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from gamut.errors import UsageError

DASK_HINT = "pip install 'gamut[dask]'"
#: Seconds to wait for the first worker of a cluster given by address.
WORKER_WAIT_S = 300


def require_dask():
    """The ``distributed`` module, or a clear error when Dask is not installed."""
    try:
        import distributed
    except ImportError:
        raise UsageError(f"--cluster needs Dask's distributed scheduler: {DASK_HINT}") from None
    return distributed


@dataclass
class Connection:
    """A client on a cluster; ``close()`` shuts down what :func:`connect` started (nothing else)."""

    client: Any
    description: str
    _closers: list[Callable[[], None]] = field(default_factory=list)

    @property
    def n_workers(self) -> int:
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def close(self) -> None:
        for closer in reversed(self._closers):
            try:
                closer()
            except Exception:  # shutting down: a worker already gone is no error
                pass
        self._closers.clear()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def local_worker_specs(n: int | None, cuda: bool, gpus: Sequence[int]) -> dict[str, dict]:
    """Nanny options of each local worker: one thread each; with CUDA, one worker per GPU,
    pinned to it with ``CUDA_VISIBLE_DEVICES``."""
    if cuda:
        chosen = list(gpus) if n is None else list(gpus)[:n]
        if n is not None and len(chosen) < n:
            raise UsageError(f"--cluster local:{n} with --device cuda needs {n} GPUs ({len(gpus)} available)")
        return {f"gamut-gpu{g}": {"nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": str(g)}} for g in chosen}
    count = n if n is not None else (os.cpu_count() or 1)
    return {f"gamut-{k}": {"nthreads": 1} for k in range(count)}


def parse_local(spec: str) -> int | None:
    """``local`` -> None (one worker per GPU or core), ``local:N`` -> N."""
    if spec == "local":
        return None
    try:
        n = int(spec.split(":", 1)[1])
    except ValueError:
        n = 0
    if n < 1:
        raise UsageError(f"--cluster expects local:N with N >= 1 or tcp://HOST:PORT, got '{spec}'")
    return n


def connect(cluster: Any, *, device: str = "auto", gpus: str | Sequence[int] | None = None,
            analysis: str = "scan") -> Connection:
    """A :class:`Connection` for ``cluster``: ``"local"``/``"local:N"`` (a local cluster of worker
    processes started here), a scheduler address (``tcp://HOST:PORT``, ``tls://...``), a
    ``distributed.Client`` or a cluster object (``LocalCluster``, dask-jobqueue, dask-kubernetes)."""
    distributed = require_dask()
    if isinstance(cluster, distributed.Client):
        return Connection(cluster, f"cluster {cluster.scheduler.address}")
    if isinstance(cluster, str) and (cluster == "local" or cluster.startswith("local:")):
        return _local(parse_local(cluster), device, gpus, analysis)
    if isinstance(cluster, str):
        if "://" not in cluster and ":" not in cluster:
            raise UsageError(f"--cluster expects local:N or a scheduler address like tcp://HOST:PORT, got '{cluster}'")
        try:
            client = distributed.Client(cluster, timeout=30)
        except OSError as exc:
            raise UsageError(f"cannot reach the Dask scheduler at {cluster}: {exc}") from None
        conn = Connection(client, f"cluster {cluster}", [client.close])
    else:  # a cluster object
        client = distributed.Client(cluster)
        conn = Connection(client, f"cluster {getattr(cluster, 'scheduler_address', cluster)}", [client.close])
    _wait_for_a_worker(conn)
    return conn


def _wait_for_a_worker(conn: Connection) -> None:
    try:
        conn.client.wait_for_workers(1, timeout=WORKER_WAIT_S)
    except Exception:
        conn.close()
        raise UsageError(f"no Dask worker joined the {conn.description} within {WORKER_WAIT_S} s") from None


def _local(n: int | None, device: str, gpus, analysis: str) -> Connection:
    """Start a local cluster of worker processes (one thread each) and connect to it."""
    import logging

    from distributed import Client, Nanny, Scheduler, SpecCluster
    from distributed.system import MEMORY_LIMIT

    from gamut.cuda import available_gpus, parse_gpus, resolve_device

    cuda = resolve_device(device, analysis) == "cuda"
    gpu_ids = (parse_gpus(gpus) if gpus is not None else list(available_gpus())) if cuda else []
    specs = local_worker_specs(n, cuda, gpu_ids)
    memory = int(MEMORY_LIMIT / max(1, len(specs)))
    workers = {name: {"cls": Nanny, "options": {**opts, "memory_limit": memory, "host": "127.0.0.1",
                                                     "silence_logs": logging.ERROR, "dashboard": False}}
               for name, opts in specs.items()}
    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "port": 0, "dashboard": False,
                                                  "dashboard_address": "127.0.0.1:0"}}
    cluster = SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR, name="gamut")
    client = Client(cluster)
    conn = Connection(client, f"local cluster of {len(specs)} workers", [cluster.close, client.close])
    try:
        client.wait_for_workers(len(specs), timeout=120)
    except Exception:
        conn.close()
        raise
    return conn


def default_threads(conn: Connection, cluster: Any, threads: int | None) -> int | None:
    """Engine threads per worker: ``threads``, or for a local cluster the cores shared among its workers."""
    if threads is not None or not isinstance(cluster, str) or not cluster.startswith("local"):
        return threads
    return max(1, (os.cpu_count() or 1) // conn.n_workers)


def run_in_order(
    conn: Connection,
    fn: Callable,
    shared: Any,
    tasks: Iterable[tuple[int, tuple]],
    *,
    retries: int = 2,
    window: int | None = None,
    held: Callable[[], int] = lambda: 0,
    key_prefix: str = "gamut",
) -> Iterator[tuple[int, Any]]:
    """Run ``fn(shared, *args)`` for each ``(key, args)`` of ``tasks`` on the cluster; yield
    ``(key, result)`` as tasks finish (in any order).

    ``shared`` (e.g. the sequences) is sent to every worker once. Tasks in flight plus results
    the caller still holds out of order (``held()``) stay within ``window`` (default: 4 per
    worker), which bounds memory. A task whose worker dies is recomputed elsewhere by Dask; one
    that raises is retried ``retries`` times before its error is raised here.
    """
    from distributed import as_completed

    client = conn.client
    [shared_future] = client.scatter([shared], broadcast=True, hash=False)
    limit = max(1, window or 4 * conn.n_workers)
    todo = iter(tasks)
    inflight: dict[str, tuple[int, Any]] = {}
    done = as_completed()

    def refill() -> None:
        while len(inflight) + held() < limit or not inflight:
            item = next(todo, None)
            if item is None:
                return
            key, args = item
            future = client.submit(fn, shared_future, *args, key=f"{key_prefix}-{key}", retries=retries, pure=False)
            inflight[future.key] = (key, future)
            done.add(future)

    try:
        refill()
        for future in done:
            key, _ = inflight.pop(future.key)
            result = future.result()
            future.release()
            yield key, result
            refill()
    finally:
        for _, future in inflight.values():
            future.cancel()
        shared_future.release()
