"""The CPU Turner engine: ViennaRNA itself (``RNA.fold_compound``), the reference of every other
engine, on every core.

ViennaRNA folds one sequence on one core and holds Python's lock while it does, so a batch is cut
into chunks of about equal work that worker processes fold (spawned once per engine and kept for
its life, as :class:`gamut.access.cpu.CpuFolder` does); results come back in input order. Small
work (one sequence, or less than :data:`POOL_MIN_SECONDS` of folding) runs in this process: a
worker process costs more to start than it would save.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from gamut.errors import GamutError, InputError
from gamut.folding.turner.options import TurnerOptions
from gamut.folding.turner.results import PartitionResult
from gamut.io.memory import available_memory
from gamut.io.threads import SpawnedProcesses, usable_cores

#: Seconds of one core's folding below which a batch is folded in this process.
POOL_MIN_SECONDS = 0.5
#: Chunks per worker process (so that a slow chunk does not leave the others idle).
CHUNKS_PER_WORKER = 4
#: Host memory ViennaRNA takes per n^2 letters (bytes, measured on ViennaRNA 2.8 with margin):
#: the minimum free energy, and the partition function with its pair probabilities in Python.
MFE_BYTES_PER_N2 = 12
PF_BYTES_PER_N2 = 64


def record_seconds(lengths: np.ndarray, partition: bool = False) -> np.ndarray:
    """One core's seconds to fold each sequence of ``lengths`` with ViennaRNA 2.8 (a fit to its MFE
    times: 0.8 ms at 50 nt, 0.76 s at 1,000, 21.7 s at 4,000; the partition function ~7x that)."""
    n = np.asarray(lengths, np.float64)
    return (2e-4 + 5.6e-7 * n * n + 2.0e-10 * n * n * n) * (7.0 if partition else 1.0)


def seconds_estimate(lengths: np.ndarray, partition: bool = False) -> float:
    """One core's seconds to fold all of ``lengths`` (:func:`record_seconds`)."""
    return float(np.sum(record_seconds(lengths, partition)))


def memory_needed(length: int, partition: bool = False) -> int:
    """Bytes of host memory ViennaRNA needs to fold ``length`` letters."""
    return (PF_BYTES_PER_N2 if partition else MFE_BYTES_PER_N2) * length * length + (1 << 20)


def check_memory(lengths: np.ndarray, names: Callable[[int], str], partition: bool) -> None:
    """A one-line :class:`InputError` naming the longest record when folding it alone would need
    more host memory than is available."""
    if not len(lengths):
        return
    longest = int(np.argmax(lengths))
    need = memory_needed(int(lengths[longest]), partition)
    available = available_memory()
    if available is not None and need > available:
        what = "the partition function of" if partition else "folding"
        raise InputError(f"{names(longest)}: {what} {int(lengths[longest]):,} nt on the CPU needs about "
                         f"{need / 1e9:.1f} GB of memory, only {available / 1e9:.1f} GB available")


Folded = tuple[np.ndarray, bytes, np.ndarray | None, list[np.ndarray] | None]


def fold_chunk(sequences: Sequence[str], options: TurnerOptions, partition: bool) -> Folded:
    """Fold ``sequences`` one after another with ViennaRNA: energies (int32 dcal/mol), the
    structures end to end (ASCII), and with ``partition`` the ensemble energies (kcal/mol, as
    ``fc.pf()`` gives them) and the (n, n) pair probabilities (upper triangle)."""
    import RNA

    md = options.model_details()
    flags = RNA.OPTION_MFE | (RNA.OPTION_PF if partition else 0)
    energies = np.empty(len(sequences), np.int32)
    structures = []
    ensemble = np.empty(len(sequences), np.float64) if partition else None
    probabilities: list[np.ndarray] | None = [] if partition else None
    for k, sequence in enumerate(sequences):
        # as RNAfold reads a record (and our kernels do): upper case, T as U. RNA.fold_compound
        # itself keeps a T, which then misses the special hairpins' bonuses.
        fc = RNA.fold_compound(sequence.upper().replace("T", "U"), md, flags)
        structure, energy = fc.mfe()
        energies[k] = round(energy * 100)
        structures.append(structure)
        if partition:
            fc.exp_params_rescale(energy)  # as RNAfold -p: Boltzmann factors scaled around the MFE
            ensemble[k] = fc.pf()[1]
            p = np.array(fc.bpp(), np.float64)[1:, 1:]
            probabilities.append(np.triu(p, 1))
    return energies, "".join(structures).encode("ascii"), ensemble, probabilities


def _fold_job(job: tuple[Sequence[str], TurnerOptions, bool]) -> Folded:
    return fold_chunk(*job)


def chunk_bounds(lengths: np.ndarray, parts: int, partition: bool = False) -> list[tuple[int, int]]:
    """``(start, stop)`` of consecutive runs of records of about equal folding work, at most ``parts``."""
    if not len(lengths):
        return []
    seconds = record_seconds(lengths, partition)
    middle = np.cumsum(seconds) - seconds / 2  # a record goes to the part its middle falls in
    cuts = np.searchsorted(middle, float(np.sum(seconds)) * np.arange(1, parts) / parts, side="left")
    edges = np.unique(np.concatenate([[0], np.minimum(cuts, len(lengths)), [len(lengths)]]))
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


class CpuEngine:
    """ViennaRNA on ``threads`` processes (default: every core), kept for the engine's life (a
    ``with`` block)."""

    name = "cpu"

    def __init__(self, threads: int | None = None) -> None:
        self.workers = max(1, threads or usable_cores())
        self._processes = SpawnedProcesses(self.workers)

    def __enter__(self) -> CpuEngine:
        return self

    def __exit__(self, *exc) -> None:
        self._processes.close()

    def mfe(self, sequences: Sequence[str], options: TurnerOptions) -> tuple[np.ndarray, bytes]:
        """Energies (int32 dcal/mol) and structures end to end (ASCII bytes), in order."""
        energies, structures, _, _ = self.fold(sequences, options, False)
        return energies, structures

    def pf(self, sequences: Sequence[str], options: TurnerOptions) -> tuple[np.ndarray, bytes, list[PartitionResult]]:
        """As :meth:`mfe`, and each sequence's :class:`PartitionResult`."""
        energies, structures, ensemble, probabilities = self.fold(sequences, options, True)
        return energies, structures, [PartitionResult(float(g), p) for g, p in zip(ensemble, probabilities)]

    def fold(self, sequences: Sequence[str], options: TurnerOptions, partition: bool) -> Folded:
        lengths = np.fromiter(map(len, sequences), np.int64, len(sequences))
        if self.workers == 1 or len(sequences) < 2 or seconds_estimate(lengths, partition) < POOL_MIN_SECONDS:
            return fold_chunk(sequences, options, partition)
        bounds = chunk_bounds(lengths, self.workers * CHUNKS_PER_WORKER, partition)
        need = max(memory_needed(int(lengths[a:b].max()), partition) for a, b in bounds)
        available = available_memory()
        at_once = self.workers if available is None else max(1, min(self.workers, available // need))
        try:
            parts = _ordered(self._processes.pool(), [(sequences[a:b], options, partition) for a, b in bounds],
                             at_once)
        except BrokenProcessPool:
            self._processes.broken()
            raise GamutError("a ViennaRNA worker process ended unexpectedly (out of memory?); try fewer "
                             "--threads or shorter sequences") from None
        energies = np.concatenate([part[0] for part in parts])
        structures = b"".join(part[1] for part in parts)
        if not partition:
            return energies, structures, None, None
        return (energies, structures, np.concatenate([part[2] for part in parts]),
                [p for part in parts for p in part[3]])


def _ordered(pool: ProcessPoolExecutor, jobs: list, at_once: int) -> list[Folded]:
    """``_fold_job`` of every job on ``pool``, at most ``at_once`` in flight; results in order."""
    if at_once >= len(jobs):
        return list(pool.map(_fold_job, jobs))
    results: list[Folded] = []
    pending: list = []
    for job in jobs:
        pending.append(pool.submit(_fold_job, job))
        if len(pending) >= at_once:
            results.append(pending.pop(0).result())
    results += [future.result() for future in pending]
    return results
