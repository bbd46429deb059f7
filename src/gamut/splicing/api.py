"""Python API: ``gamut.splice(base, exons, target, ...)`` and batch ``splice_many``."""
from __future__ import annotations

import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Sequence, Union

import numpy as np

from gamut.errors import DeviceError, UsageError
from gamut.splicing import cpu
from gamut.splicing.batch import CaseBatch
from gamut.splicing.model import (DEFAULT_GAP, DEFAULT_MATCH, DEFAULT_MISMATCH, ScoreParams, SpliceCase,
                                check_score_range, make_case)
from gamut.splicing.result import SpliceResult, Tracebacks, build_results

ENGINES = ("reference", "fast", "gpu")
SequenceLike = Union[str, np.ndarray]
CaseLike = Union[SpliceCase, tuple]

#: GPU launches are split so that one holds at most this many 4-byte cells of device state
#: (:func:`gamut.splicing.gpu.state_cells`: last/pred, chunk edges, traceback scratch).
GPU_BATCH_CELLS = 400_000_000
#: Cases per :func:`solve` call in :func:`splice_many` by default: on the GPU (whose launches are
#: split by memory anyway; fewer calls, fuller launches), and on CPUs or a cluster.
GPU_CASES_PER_CALL = 4096
CASES_PER_CALL = 256


def choose_engine(device: str = "auto", engine: str | None = None) -> str:
    """``reference``, ``fast`` or ``gpu``: ``engine`` if given, else from ``device``."""
    from gamut.cuda import resolve_device

    if engine is not None:
        if engine not in ENGINES:
            raise UsageError(f"unknown engine '{engine}' (choose from {', '.join(ENGINES)})")
        if engine == "gpu":
            resolve_device("cuda")
        return engine
    return "gpu" if resolve_device(device, "splice") == "cuda" else "fast"


def _make_case(item: CaseLike, index: int, params: ScoreParams) -> SpliceCase:
    """A prepared case from a :class:`SpliceCase` or a ``(base, exons, target[, name])`` tuple."""
    if isinstance(item, SpliceCase):
        return item
    return make_case(item[0], item[1], item[2], params, name=item[3] if len(item) > 3 else f"case{index}")


def _gpu_groups(batch: CaseBatch) -> list[CaseBatch]:
    """``batch`` cut into consecutive launches of at most :data:`GPU_BATCH_CELLS` cells of device
    state each (:func:`gamut.splicing.gpu.state_cells`); one launch when it fits."""
    from gamut.splicing.gpu import state_cells

    cells = np.cumsum(state_cells(batch))
    if not len(batch) or cells[-1] <= GPU_BATCH_CELLS:
        return [batch] if len(batch) else []
    groups, lo = [], 0
    while lo < len(batch):
        base = cells[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(cells, base + GPU_BATCH_CELLS, side="right")))
        groups.append(CaseBatch(batch.cases[lo:hi]))
        lo = hi
    return groups


def _check_score_ranges(cases: Sequence[SpliceCase], params: ScoreParams) -> None:
    """Every case's score range, before any work (cases built without parameters were not checked;
    the GPU functions check again per launch, as they may be called directly)."""
    for case in cases:
        check_score_range(case, params.max_abs)


def forward(cases: Sequence[SpliceCase], params: ScoreParams, engine: str, threads: int | None = None):
    """``(last, pred)`` per case with the named engine (downloaded from the GPU for ``gpu``)."""
    _check_score_ranges(cases, params)
    if engine == "reference":
        return [cpu.forward_reference(c, params.matrix, params.gap) for c in cases]
    if engine == "fast":
        if len(cases) == 1:
            return [cpu.forward_fast(cases[0], params.matrix, params.gap)]
        return cpu.forward_fast_many(cases, params.matrix, params.gap, threads)
    from gamut.splicing.gpu import forward_gpu_many

    return [pair for group in _gpu_groups(CaseBatch(cases))
            for pair in forward_gpu_many(group.cases, params.matrix, params.gap)]


def _gpu_inconsistent(message: str) -> DeviceError:
    return DeviceError(f"the GPU engine gave an inconsistent result ({message})")


def solve(cases: Sequence[SpliceCase], params: ScoreParams, engine: str, threads: int | None = None,
          timing=None) -> list[SpliceResult]:
    """Forward pass and traceback with ``engine`` for prepared cases.

    ``gpu``: both on the device, launches of many cases (``timing``: a
    :class:`gamut.splicing.gpu.GpuTiming` to add the device times to). CPU engines: forward passes,
    then tracebacks, of several cases on ``threads`` threads (default: all cores; the compiled
    code releases the GIL). Every result is checked (:func:`gamut.splicing.result.build_results`);
    an inconsistent GPU result raises :class:`DeviceError`.
    """
    if engine == "gpu":
        from gamut.splicing.gpu import solve_gpu, stopwatch

        _check_score_ranges(cases, params)

        stage = stopwatch(timing)
        results: list[SpliceResult] = []
        groups = _gpu_groups(CaseBatch(cases))
        stage("batch")
        for group in groups:
            tracebacks = solve_gpu(group, params.matrix, params.gap, timing=timing)
            stage(None)  # solve_gpu timed its own stages
            results.extend(build_results(group, tracebacks, params.matrix, params.gap, engine, _gpu_inconsistent))
            stage("results")
        return results

    def trace(item: tuple[SpliceCase, tuple[np.ndarray, np.ndarray]]):
        case, (last, pred) = item
        return cpu.traceback(case, params.matrix, params.gap, last, pred)

    items = list(zip(cases, forward(cases, params, engine, threads)))
    workers = min(len(items), threads or os.cpu_count() or 1)
    if workers <= 1:
        traced = [trace(item) for item in items]
    else:
        with ThreadPoolExecutor(workers) as pool:
            traced = list(pool.map(trace, items))
    return build_results(CaseBatch(cases), Tracebacks.concatenate(traced), params.matrix, params.gap, engine)


def splice(
    base: SequenceLike,
    exons: Sequence[tuple[int, int]] | np.ndarray,
    target: SequenceLike,
    *,
    match: int = DEFAULT_MATCH,
    mismatch: int = DEFAULT_MISMATCH,
    gap: int = DEFAULT_GAP,
    matrix: Sequence[Sequence[int]] | np.ndarray | None = None,
    device: str = "auto",
    engine: str | None = None,
    name: str = "case",
) -> SpliceResult:
    """The exact spliced alignment of ``target`` to a chain of candidate ``exons`` of ``base``.

    ``exons`` are 0-based half-open ``(start, end)`` pairs on ``base`` (any order, may overlap);
    the chain takes exons in increasing position without overlap. Scores: ``match``/``mismatch``
    per aligned pair (or a 4x4 ACGT ``matrix``), ``gap`` (negative) per gap symbol. ``device``
    is ``auto``/``cpu``/``cuda``; ``engine`` (``reference``/``fast``/``gpu``) overrides it.
    Returns a :class:`SpliceResult` (``.score``, ``.chain`` as indices into ``exons``,
    ``.alignment``).
    """
    params = ScoreParams(match, mismatch, gap, matrix)
    case = make_case(base, exons, target, params, name=name)
    return solve([case], params, choose_engine(device, engine))[0]


def splice_many(
    cases: Iterable[CaseLike],
    *,
    match: int = DEFAULT_MATCH,
    mismatch: int = DEFAULT_MISMATCH,
    gap: int = DEFAULT_GAP,
    matrix: Sequence[Sequence[int]] | np.ndarray | None = None,
    device: str = "auto",
    engine: str | None = None,
    threads: int | None = None,
    batch_size: int | None = None,
    progress: Callable[[int], None] | None = None,
    cluster: Any = None,
    retries: int = 2,
) -> list[SpliceResult]:
    """Batch mode: ``cases`` are ``(base, exons, target[, name])`` tuples or :class:`SpliceCase`.

    Cases run ``batch_size`` at a time (on the GPU, launches split by device memory; on CPUs, one
    case per thread; default :data:`GPU_CASES_PER_CALL` on the GPU, :data:`CASES_PER_CALL`
    otherwise); ``progress`` is called with the number of cases finished after each batch. With ``cluster`` (``"local:N"``,
    ``"tcp://HOST:PORT"`` or a ``distributed.Client``) the batches run on Dask workers (each one
    as here, on its CPU or GPU); results come back in the order of ``cases``.
    """
    params = ScoreParams(match, mismatch, gap, matrix)
    if cluster is not None:
        from gamut.cluster import require_dask

        require_dask()
    else:
        chosen = choose_engine(device, engine)
    prepared = [_make_case(c, i, params) for i, c in enumerate(cases)]
    if batch_size is None:
        batch_size = GPU_CASES_PER_CALL if cluster is None and chosen == "gpu" else CASES_PER_CALL
    if cluster is not None:
        settings = {"match": match, "mismatch": mismatch, "gap": gap, "matrix": matrix, "device": device,
                    "engine": engine, "threads": threads, "batch_size": batch_size}
        return _splice_on_cluster(prepared, settings, cluster, batch_size, progress, retries)
    results: list[SpliceResult] = []
    for lo in range(0, len(prepared), batch_size):
        chunk = prepared[lo:lo + batch_size]
        results.extend(solve(chunk, params, chosen, threads))
        if progress is not None:
            progress(len(chunk))
    return results


def _splice_batch(settings: dict, cases: list[SpliceCase]) -> list[SpliceResult]:
    """One partition of a cluster run: :func:`splice_many` on a worker."""
    return splice_many(cases, **settings)


def _splice_on_cluster(cases: list[SpliceCase], settings: dict, cluster: Any, batch_size: int,
                       progress: Callable[[int], None] | None, retries: int) -> list[SpliceResult]:
    """Partitions of ``batch_size`` cases on the cluster, gathered in order."""
    from gamut.cluster import connect, default_threads, run_in_order

    starts = range(0, len(cases), batch_size)
    out: list[list[SpliceResult] | None] = [None] * len(starts)
    with connect(cluster, device=settings["device"], analysis="splice") as conn:
        settings = {**settings, "threads": default_threads(conn, cluster, settings["threads"])}
        tasks = ((k, (cases[lo:lo + batch_size],)) for k, lo in enumerate(starts))
        for k, results in run_in_order(conn, _splice_batch, settings, tasks, retries=retries,
                                       key_prefix=f"gamut-splice-{uuid.uuid4().hex}"):
            out[k] = results
            if progress is not None:
                progress(len(results))
    return [r for part in out for r in part]  # type: ignore[union-attr]
