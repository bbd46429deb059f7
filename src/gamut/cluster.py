"""Dask clusters for gamut: connect to ``local:N``, ``tcp://HOST:PORT`` or a ``distributed.Client``,
and run tasks with a bounded window of work in flight, delivering results in order.

Dask is optional: nothing here imports it at module level, and asking for a cluster without it
installed is a one-line :class:`~gamut.errors.UsageError` naming ``pip install 'gamut-rna[dask]'``.
"""
from __future__ import annotations

import ast
import contextlib
import os
import sys
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from gamut._version import install_hint
from gamut.errors import GamutError, UsageError

DASK_HINT = install_hint("dask")
#: Seconds to wait for the first worker of a cluster given by address.
WORKER_WAIT_S = 300


class ClusterError(GamutError):
    """The cluster could not finish the work (workers or scheduler gone, a task that killed its
    workers); ``reason`` says what happened, without advice, for callers to add their own."""

    def __init__(self, reason: str, advice: str = "check the workers' logs and run again") -> None:
        super().__init__(f"the Dask cluster failed: {reason}; {advice}")
        self.reason = reason


def check_dask_installed() -> None:
    """A clear error when Dask's ``distributed`` is not installed, without importing it (0.5 s)."""
    import importlib.util

    if importlib.util.find_spec("distributed") is None:
        raise UsageError(f"--cluster needs Dask's distributed scheduler: {DASK_HINT}")


class PendingConnection:
    """A :func:`connect` to a scheduler address made on a thread, beside this process' own work (a scan
    command reads its inputs meanwhile: importing Dask and joining the cluster took 0.5 s before
    the inputs were read); :func:`connect` given one returns its connection, raising its error."""

    def __init__(self, address: str) -> None:
        import threading

        self.address = address
        self._taken = False
        self._outcome: list[Any] = []
        self._thread = threading.Thread(target=self._connect, name="gamut-dask-connect", daemon=True)
        self._thread.start()

    def _connect(self) -> None:
        from gamut.timeline import span

        try:
            with span("join the cluster"):
                self._outcome.append(connect(self.address))
        except BaseException as exc:  # noqa: BLE001 (raised by result(), in the caller's thread)
            self._outcome.append(exc)

    def result(self) -> Connection:
        """The connection (once: its owner closes it), or the error of making it."""
        self._thread.join()
        if self._taken:
            raise RuntimeError(f"the connection to {self.address} was taken already")
        self._taken = True
        outcome = self._outcome[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def discard(self) -> None:
        """Close the connection if nobody took it (the command ended before it ran anything)."""
        if not self._taken:
            self._thread.join()
            self._taken = True
            if isinstance(self._outcome[0], Connection):
                self._outcome[0].close()

    def __str__(self) -> str:
        return self.address


def connect_soon(cluster: Any) -> Any:
    """``cluster``, or for a scheduler address (``tcp://HOST:PORT``, ...) a :class:`PendingConnection`
    to it, started now (a local cluster is started when it is needed)."""
    if not isinstance(cluster, str) or cluster == "local" or cluster.startswith("local:") or "://" not in cluster:
        return cluster
    check_dask_installed()
    return PendingConnection(cluster)


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
    #: Work sent ahead on this connection, for the runner that takes it (a scan's head start:
    #: :func:`gamut.scanning.pipeline.ahead.start_ahead`).
    ahead: Any = None
    _mailbox: Any = None

    @property
    def n_workers(self) -> int:
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def mailbox_for(self, workers: Sequence[str]) -> Any:
        """Where ``workers`` send their large results without a copy, when every one is on this
        machine: this connection's :class:`~gamut.io.fd_mailbox.Mailbox` (made on first use, closed
        with the connection); else, or where the system has none, None."""
        from gamut.io import fd_mailbox

        if not (fd_mailbox.usable() and on_this_machine(workers)):
            return None
        if self._mailbox is None:
            try:
                self._mailbox = fd_mailbox.Mailbox()
            except OSError:
                return None
            self._closers.append(self._close_mailbox)
            weakref.finalize(self, self._mailbox.close)  # (a connection never closed: at the latest at exit)
        return self._mailbox

    def _close_mailbox(self) -> None:
        mailbox, self._mailbox = self._mailbox, None
        if mailbox is not None:
            mailbox.close()

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
    """Nanny options of each local worker: one thread each, and the heap settings of a streaming
    process (:func:`gamut.io.heap.reuse_environ`); with CUDA, ``n`` GPUs (default: all of ``gpus``)
    and :func:`~gamut.scanning.pipeline.lanes.workers_per_gpu` workers on each (as ``--gpus`` runs
    them: one pipeline does not keep a GPU busy), each pinned to its GPU with ``CUDA_VISIBLE_DEVICES``
    and named after it (``gamut-gpu0-1``: GPU 0's second worker)."""
    from gamut.io.heap import reuse_environ
    from gamut.scanning.pipeline.lanes import workers_per_gpu

    heap = reuse_environ()
    if cuda:
        chosen = list(gpus) if n is None else list(gpus)[:n]
        if n is not None and len(chosen) < n:
            raise UsageError(f"--cluster local:{n} with --device cuda needs {n} GPUs ({len(gpus)} available)")
        per = workers_per_gpu()
        return {f"gamut-gpu{g}-{k}": {"nthreads": 1, "env": {**heap, "CUDA_VISIBLE_DEVICES": str(g)}}
                for g in chosen for k in range(per)}
    count = n if n is not None else (os.cpu_count() or 1)
    return {f"gamut-{k}": {"nthreads": 1, "env": dict(heap)} for k in range(count)}


def parse_local(spec: str) -> int | None:
    """``local`` -> None (every GPU, or one worker per core), ``local:N`` -> N (GPUs with CUDA, else workers)."""
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
    ``distributed.Client`` or a cluster object (``LocalCluster``, dask-jobqueue, dask-kubernetes);
    a :class:`Connection` made already is itself."""
    if isinstance(cluster, PendingConnection):
        return cluster.result()
    if isinstance(cluster, Connection):  # made already (its owner closes it)
        return cluster
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

    import dask
    from distributed import Client, Nanny, Scheduler, SpecCluster
    from distributed.system import MEMORY_LIMIT

    from gamut.cuda import available_gpus, parse_gpus, resolve_device

    spec = "local" if n is None else f"local:{n}"
    method = dask.config.get("distributed.worker.multiprocessing-method", "spawn")
    unguarded = unguarded_main_call() if method != "fork" else None
    if unguarded is not None:  # the workers would fail to start, after pages of their tracebacks
        raise UsageError(_guard_message(spec, *unguarded))
    cuda = resolve_device(device, analysis) == "cuda"
    gpu_ids = (parse_gpus(gpus) if gpus is not None else list(available_gpus())) if cuda else []
    specs = local_worker_specs(n, cuda, gpu_ids)
    memory = int(MEMORY_LIMIT / max(1, len(specs)))
    workers = {name: {"cls": Nanny, "options": {**opts, "memory_limit": memory, "host": "127.0.0.1",
                                                     "silence_logs": logging.ERROR, "dashboard": False}}
               for name, opts in specs.items()}
    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "port": 0, "dashboard": False,
                                                  "dashboard_address": "127.0.0.1:0"}}
    conn = None
    try:
        cluster = SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR, name="gamut")
        client = Client(cluster)
        conn = Connection(client, f"local cluster of {len(specs)} workers", [cluster.close, client.close])
        client.wait_for_workers(len(specs), timeout=120)
    except Exception as exc:
        if conn is not None:
            conn.close()
        unguarded = unguarded_main_call()
        if unguarded is not None and method != "fork":
            raise UsageError(_guard_message(spec, *unguarded)) from None
        first = (str(exc).strip().splitlines() or [""])[0]
        raise GamutError(f"could not start the local Dask cluster ({spec}): {type(exc).__name__}: {first}") from None
    return conn


def _guard_message(spec: str, script: str, line: int) -> str:
    return (f"{script}, line {line}, starts a local Dask cluster ({spec}) outside an "
            "'if __name__ == \"__main__\":' block; its worker processes re-run the script when they start, "
            "so put the code that runs the scan under that guard, as in "
            "'if __name__ == \"__main__\": main()'")


def unguarded_main_call() -> tuple[str, int] | None:
    """``(script, line)`` when this call comes from the top level of the main script, outside an
    ``if __name__ == "__main__":`` block; else None.

    Dask starts local workers with multiprocessing's spawn method, which re-runs the main script
    (as ``__mp_main__``) in each worker: without the guard, the worker starts a cluster of its
    own while bootstrapping, and fails. Scripts run as ``package/__main__.py``, ``-c`` code and
    notebooks are not re-run, as in :mod:`multiprocessing.spawn`.
    """
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if main is None or not script or (name and (name == "__main__" or name.endswith(".__main__"))):
        return None
    if Path(script).stem == "ipython":
        return None
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is vars(main) and frame.f_code.co_name == "<module>":
            break
        frame = frame.f_back
    if frame is None:  # called later, e.g. from an interactive prompt after the script ran
        return None
    line = frame.f_lineno
    try:
        tree = ast.parse(Path(frame.f_code.co_filename).read_text(), frame.f_code.co_filename)
    except (OSError, SyntaxError, ValueError):
        return None
    guarded = [(node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno)
               for node in ast.walk(tree) if isinstance(node, ast.If) and _is_main_test(node.test) and node.body]
    return None if any(first <= line <= last for first, last in guarded) else (script, line)


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
            and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides))


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
    label: str = "task",
) -> Iterator[tuple[int, Any]]:
    """Run ``fn(shared, *args)`` for each ``(key, args)`` of ``tasks`` on the cluster; yield
    ``(key, result)`` as tasks finish (in any order).

    ``shared`` (e.g. the sequences) is sent to every worker once. Tasks in flight plus results
    the caller still holds out of order (``held()``) stay within ``window`` (default: 4 per
    worker), which bounds memory. A task whose worker dies is recomputed elsewhere by Dask; one
    that raises is retried ``retries`` times before its error is raised here. When the cluster
    itself fails (tasks cancelled because the scheduler or the workers are gone, a task that
    killed every worker that ran it) a :class:`ClusterError` is raised, naming the task as
    ``{label} {key}``.
    """
    from distributed import as_completed

    client = conn.client
    inflight: dict[str, tuple[int, Any]] = {}
    shared_future = None
    current: list[Any] = [None]  # the key of the task whose result is being fetched

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
        with cluster_failures(label, current):
            [shared_future] = client.scatter([shared], broadcast=True, hash=False)
            limit = max(1, window or 4 * conn.n_workers)
            todo = iter(tasks)
            # Track the futures on their own client's event loop: as_completed() takes Dask's
            # default client, the latest made in this process, whose loop may be another one (its
            # futures' states then bind to the wrong loop: 'bound to a different event loop').
            done = as_completed(loop=client.loop)
            refill()
        for (key, _), result in _finished(done, inflight, refill, label, current):
            yield key, result
    finally:
        _let_go([future for _, future in inflight.values()], [shared_future])


def _finished(done, inflight: dict, refill: Callable[[], None], label: str,
              current: list[Any]) -> Iterator[tuple[tuple, Any]]:
    """``(entry, result)`` for each future of ``done`` as it finishes (``entry``: its value in
    ``inflight``, taken out; its first item the task's key), released once its result is taken;
    ``refill()`` after each. Dask's errors become :class:`ClusterError` s naming the task."""
    while True:
        with cluster_failures(label, current):
            future = next(done, None)
            if future is None:
                return
            entry = inflight.pop(future.key)
            current[0] = entry[0]
            result = future.result()
            current[0] = None
            future.release()
        yield entry, result
        with cluster_failures(label, current):
            refill()


def _let_go(unfinished: list[Any], shared: list[Any]) -> None:
    """Cancel the futures of a run that ends early and release its shared data (the cluster may be
    gone already: nothing more to do then)."""
    with contextlib.suppress(Exception):
        for future in unfinished:
            future.cancel()
        for future in shared:
            if future is not None:
                future.release()


def worker_addresses(conn: Connection) -> list[str]:
    """The cluster's workers, in a fixed order (their names, else their addresses)."""
    workers = conn.client.scheduler_info().get("workers", {})
    return sorted(workers, key=lambda address: (str(workers[address].get("name", address)), address))


def on_this_machine(addresses: Sequence[str]) -> bool:
    """Whether every worker address (``tcp://HOST:PORT``, ``inproc://...``) is of this machine: a
    loopback address, or this machine's own name or address; such workers read the same files."""
    import socket
    from urllib.parse import urlsplit

    here = {"localhost", "127.0.0.1", "::1", socket.gethostname()}
    with contextlib.suppress(OSError):
        here.update(socket.gethostbyname_ex(socket.gethostname())[2])
    for address in addresses:
        parts = urlsplit(address)
        if parts.scheme == "inproc":
            continue
        if parts.hostname is None or (parts.hostname not in here and not parts.hostname.startswith("127.")):
            return False
    return bool(addresses)


class PinnedStart:
    """The start of a :func:`run_pinned` made before the rest of it is planned: ``shared[k]`` sent
    to worker ``workers[k]`` and ``fn(shared[k], *args)`` submitted there for each ``(key, args)``
    of ``first[k]`` (the run's first task of lane k), now. :meth:`let_go` ends it when no run follows."""

    def __init__(self, conn: Connection, fn: Callable, shared: Sequence[Any], first: Sequence[tuple[Any, tuple]], *,
                 workers: Sequence[str], retries: int = 2, key_prefix: str = "gamut", label: str = "task") -> None:
        from gamut.timeline import span

        self.key_prefix = key_prefix
        self.workers = list(workers)
        self.shared: list[Any] = []
        self.first: list[tuple[Any, Any]] = []
        with cluster_failures(label, [None]):
            with span("send stripes to the cluster"):
                self.shared = [conn.client.scatter(obj, workers=[address], hash=False)
                               for obj, address in zip(shared, workers)]
            for k, (key, args) in enumerate(first):
                self.first.append((key, _submit_pinned(conn, fn, self.shared[k], args, f"{key_prefix}-{key}",
                                                       workers[k], retries)))

    def let_go(self) -> None:
        _let_go([future for _, future in self.first], self.shared)


def _submit_pinned(conn: Connection, fn: Callable, shared: Any, args: tuple, key: str, worker: str,
                   retries: int) -> Any:
    """``fn(shared, *args)`` on ``worker`` alone (where ``shared`` was sent)."""
    return conn.client.submit(fn, shared, *args, key=key, retries=retries, pure=False, workers=[worker],
                              allow_other_workers=False)


def run_pinned(
    conn: Connection,
    fn: Callable,
    shared: Sequence[Any],
    tasks: Sequence[Iterable[tuple[Any, tuple]]],
    *,
    workers: Sequence[str],
    held: Callable[[int], int] = lambda lane: 0,
    window: int = 2,
    retries: int = 2,
    key_prefix: str = "gamut",
    label: str = "task",
    start: PinnedStart | None = None,
) -> Iterator[tuple[Any, Any]]:
    """Run ``fn(shared[k], *args)`` for each ``(key, args)`` of ``tasks[k]`` on worker ``workers[k]``
    alone (``shared[k]`` is sent to that worker once) and yield ``(key, result)`` as tasks finish.
    Lane k keeps at most ``window`` of its tasks in flight or held by the caller (``held(k)``).
    A worker that dies takes its lane's shared data with it: a :class:`ClusterError`. ``start``
    (made with the same ``fn``, workers and retries; its key prefix is taken): ``shared`` was sent
    by it, and the first task of each of the lanes of ``tasks`` submitted (those of its other lanes
    are let go)."""
    from distributed import as_completed

    client = conn.client
    todo = [iter(t) for t in tasks]
    inflight: dict[str, tuple[Any, Any, int]] = {}
    lanes_inflight = [0] * len(tasks)
    futures_shared: list[Any] = []
    current: list[Any] = [None]

    def track(key: Any, future: Any, k: int) -> None:
        inflight[future.key] = (key, future, k)
        lanes_inflight[k] += 1
        done.add(future)

    def refill() -> None:
        for k, lane in enumerate(todo):
            while lane is not None and (lanes_inflight[k] + held(k) < window or lanes_inflight[k] == 0):
                item = next(lane, None)
                if item is None:
                    todo[k] = lane = None
                    break
                key, args = item
                track(key, _submit_pinned(conn, fn, futures_shared[k], args, f"{key_prefix}-{key}", workers[k],
                                          retries), k)

    try:
        if start is None:
            start = PinnedStart(conn, fn, shared, [], workers=workers, retries=retries, key_prefix=key_prefix,
                                label=label)
        futures_shared, key_prefix = start.shared, start.key_prefix
        with cluster_failures(label, current):
            done = as_completed(loop=client.loop)
            for k, (key, future) in enumerate(start.first):
                if k < len(tasks):
                    track(key, future, k)
                else:
                    future.cancel()
            refill()
        for (key, _, k), result in _finished(done, inflight, refill, label, current):
            lanes_inflight[k] -= 1
            yield key, result
    finally:
        _let_go([future for _, future, _ in inflight.values()], futures_shared)


def run_one(conn: Connection, fn: Callable, *args: Any, label: str = "a task") -> Any:
    """``fn(*args)`` on one worker of the cluster, with :func:`run_in_order`'s errors."""
    with cluster_failures(label, [None]):
        return conn.client.submit(fn, *args, pure=False).result()


@contextlib.contextmanager
def cluster_failures(label: str, current: list[Any]) -> Iterator[None]:
    """Turn Dask's errors for a failed cluster into one-line :class:`ClusterError` s
    (``current[0]``: the key of the task being waited for, if any)."""
    try:
        yield
    except ClusterError:
        raise
    except Exception as exc:
        reason = _failure_reason(exc, label if current[0] is None else f"{label} {current[0]}")
        if reason is None:
            raise
        raise ClusterError(reason) from None


def _failure_reason(exc: Exception, task: str) -> str | None:
    """What a Dask exception says about the cluster, or None for an error of the task itself."""
    from concurrent.futures import CancelledError

    from distributed.comm.core import CommClosedError
    from distributed.scheduler import KilledWorker

    if isinstance(exc, KilledWorker):
        return (f"{task} killed every worker that ran it ({exc.allowed_failures + 1} workers died; "
                "out of memory, or a crash in compiled code)")
    if isinstance(exc, CancelledError):
        why = getattr(exc, "reason", None)
        why = f"reason: {why}" if why and why != "unknown" else "the scheduler or every worker is gone"
        return f"{task} was cancelled ({why})"
    if isinstance(exc, CommClosedError):
        return "the connection to the Dask scheduler was lost"
    return None
