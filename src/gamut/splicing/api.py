"""Python API: ``gamut.splice(base, exons, target, ...)`` and batch ``splice_many``."""
from __future__ import annotations

import uuid
from typing import Any, Callable, Iterable, Sequence, Union

import numpy as np

from gamut.splicing.engines import ENGINES, choose_engine
from gamut.splicing.model import (DEFAULT_GAP, DEFAULT_MATCH, DEFAULT_MISMATCH, ScoreParams, SpliceCase,
                                  check_score_range, make_case)
from gamut.splicing.result import SpliceResult

SequenceLike = Union[str, np.ndarray]
CaseLike = Union[SpliceCase, tuple]

#: Cases per :func:`solve` call in :func:`splice_many` by default: on the GPU (whose launches are
#: split by memory anyway; fewer calls, fuller launches), and on CPUs or a cluster.
GPU_CASES_PER_CALL = 4096
CASES_PER_CALL = 256


def _make_case(item: CaseLike, index: int, params: ScoreParams) -> SpliceCase:
    """A prepared case from a :class:`SpliceCase` or a ``(base, exons, target[, name])`` tuple."""
    if isinstance(item, SpliceCase):
        return item
    return make_case(item[0], item[1], item[2], params, name=item[3] if len(item) > 3 else f"case{index}")


def _check_score_ranges(cases: Sequence[SpliceCase], params: ScoreParams) -> None:
    """Every case's score range, before any work (cases built without parameters were not checked;
    the GPU functions check again per launch, as they may be called directly)."""
    for case in cases:
        check_score_range(case, params.max_abs)


def forward(cases: Sequence[SpliceCase], params: ScoreParams, engine: str, threads: int | None = None):
    """``(last, pred)`` per case with the named engine (downloaded from the GPU for ``gpu``)."""
    _check_score_ranges(cases, params)
    return ENGINES[engine].forward(cases, params, threads)


def solve(cases: Sequence[SpliceCase], params: ScoreParams, engine: str, threads: int | None = None,
          timing=None) -> list[SpliceResult]:
    """Forward pass and traceback with the named engine (:data:`gamut.splicing.engines.ENGINES`)
    for prepared cases.

    ``gpu``: both on the device, launches of many cases (``timing``: a
    :class:`gamut.splicing.gpu.GpuTiming` to add the device times to). CPU engines: forward passes,
    then tracebacks, of several cases on ``threads`` threads (default: all cores). Every result is
    checked (:func:`gamut.splicing.result.build_results`); an inconsistent GPU result raises
    :class:`DeviceError`.
    """
    _check_score_ranges(cases, params)
    return ENGINES[engine].solve(cases, params, threads, timing)


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
    is ``auto``/``cpu``/``cuda``; ``engine`` (``reference``/``fast``/``gpu``: a name of
    :data:`gamut.splicing.engines.ENGINES`) overrides it.
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
        batch_size = GPU_CASES_PER_CALL if cluster is None and ENGINES[chosen].device == "cuda" else CASES_PER_CALL
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
