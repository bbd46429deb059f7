"""The CPU accessibility engine: ViennaRNA's own local partition function (``RNA.pfl_fold_up``),
one process per core over many sequences. It is the reference for any other engine."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from gamut.access.model import AccessParams, energy_to_open, rna_letters
from gamut.errors import GamutError
from gamut.io.threads import SpawnedProcesses

#: The shortest window that can hold a base pair: i, three hairpin letters, j.
MIN_PAIRED_WINDOW = 5
#: Windows from which ViennaRNA 2.8's ``pfl_fold_up`` was seen to crash its process (a segmentation
#: fault, on GC-rich sequences from 400 letters on): such folds run in worker processes, whose
#: crash becomes an error instead of ending gamut.
CRASH_PRONE_WINDOW = 300


def unpaired_probabilities(sequence: str, params: AccessParams) -> np.ndarray:
    """(n, max_unpaired) float64: ``[i, u - 1]`` is the probability that the ``u`` letters ending at
    0-based position ``i`` are all unpaired; NaN where ``i < u - 1`` (RNAplfold's ``NA``)."""
    letters = rna_letters(sequence)
    n = len(letters)
    out = np.full((n, params.max_unpaired), np.nan)
    if n == 0:
        return out
    window, span = params.for_length(n)
    u_max = min(params.max_unpaired, window)  # ViennaRNA requires u <= window (longer ones are NaN: u > n)
    if window < MIN_PAIRED_WINDOW:
        # No pair fits in a window (a hairpin holds at least 3 letters): every stretch is unpaired.
        # ViennaRNA 2.8's pfl_fold_up aborts the whole process on sequences of 3 or 4 letters.
        out[:, :u_max] = 1.0
    else:
        import RNA

        raw = np.asarray(RNA.pfl_fold_up(letters, u_max, window, span), dtype=np.float64)  # 1-based rows, columns
        out[:, :u_max] = raw[1:, 1:]
    rows = np.arange(n)[:, None]
    out[rows < np.arange(params.max_unpaired)[None, :]] = np.nan
    return out


def _fold_one(item: tuple[str, AccessParams]) -> np.ndarray:
    return unpaired_probabilities(*item)


def stretch_energies(sequence: str, params: AccessParams, ends: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Opening energies (kcal/mol, ``-RT ln P``) of the stretches of ``lengths`` letters ending at
    0-based ``ends``, folded with ``params``' window and span (``max_unpaired`` is ignored: the
    longest stretch, up to the window, is folded); NaN for a stretch longer than the window (a
    stretch is scored inside one window)."""
    ends, lengths = np.asarray(ends, np.int64), np.asarray(lengths, np.int64)
    out = np.full(ends.shape[0], np.nan)
    if ends.shape[0] == 0:
        return out
    longest = max(1, min(int(lengths.max()), params.window))
    table = unpaired_probabilities(sequence, AccessParams(params.window, params.span, longest))
    ok = lengths <= longest
    out[ok] = energy_to_open(table[ends[ok], lengths[ok] - 1])
    return out


def _stretches_one(item: tuple[str, AccessParams, np.ndarray, np.ndarray]) -> np.ndarray:
    return stretch_energies(*item)


class CpuFolder:
    """Folds batches of sequences on ``threads`` processes (default: every core), kept for the
    folder's life (a ``with`` block): ViennaRNA holds Python's lock while it folds, and worker
    processes are spawned (forking a process with threads is unsafe), so they are started once."""

    name = "cpu"

    def __init__(self, params: AccessParams, threads: int | None = None) -> None:
        self.params = params
        self.workers = max(1, threads or os.cpu_count() or 1)
        self._processes = SpawnedProcesses(self.workers)

    def __enter__(self) -> CpuFolder:
        return self

    def __exit__(self, *exc) -> None:
        self._processes.close()

    def record_groups(self, records: Sequence) -> Iterator[Sequence]:
        """Consecutive groups of ``records`` to fold at a time (output in order, memory bounded):
        four per process."""
        size = 4 * self.workers
        for a in range(0, len(records), size):
            yield records[a:a + size]

    def fold(self, sequences: Sequence[str]) -> list[np.ndarray]:
        """:func:`unpaired_probabilities` of every sequence, in order."""
        return self._map(_fold_one, [(s, self.params) for s in sequences])

    def stretches(self, sequences: Sequence[str], ends: Sequence[np.ndarray], lengths: Sequence[np.ndarray],
                  progress: Callable[[int], None] | None = None) -> list[np.ndarray]:
        """:func:`stretch_energies` of every sequence (its ``ends`` and ``lengths``), in order;
        ``progress`` is called with each folded sequence's length."""
        items = [(s, self.params, e, n) for s, e, n in zip(sequences, ends, lengths)]
        return self._map(_stretches_one, items, progress)

    def _map(self, fn, items: list[tuple], progress: Callable[[int], None] | None = None) -> list[np.ndarray]:
        """``fn`` of every item (a sequence first), in order, on the folder's processes (always in
        worker processes from :data:`CRASH_PRONE_WINDOW` on, where ViennaRNA may crash)."""
        if (self.workers == 1 or len(items) < 2) and self.params.window < CRASH_PRONE_WINDOW:
            done = map(fn, items)
            order = list(range(len(items)))
        else:
            # Longest first, so that no worker is left with a long one at the end; results back in order.
            order = sorted(range(len(items)), key=lambda k: -len(items[k][0]))
            done = self._processes.pool().map(fn, [items[k] for k in order])
        out: list[np.ndarray] = [np.empty(0)] * len(items)
        try:
            for k, result in zip(order, done):
                out[k] = result
                if progress is not None:
                    progress(len(items[k][0]))
        except BrokenProcessPool:
            self._processes.broken()
            raise GamutError(f"ViennaRNA crashed folding with a window of {self.params.window} letters (it can on "
                             "GC-rich windows of several hundred letters); use a smaller window (-W) or --device "
                             "cuda") from None
        return out


def unpaired_many(sequences: Sequence[str], params: AccessParams, threads: int | None = None) -> list[np.ndarray]:
    """:func:`unpaired_probabilities` of every sequence, in order, on ``threads`` processes (see :class:`CpuFolder`)."""
    with CpuFolder(params, min(threads or os.cpu_count() or 1, max(1, len(sequences)))) as folder:
        return folder.fold(sequences)
