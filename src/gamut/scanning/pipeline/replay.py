"""Aligning a two-pass scan once (``--accessibility``, :mod:`gamut.scanning.pipeline.access_scan`):
the first pass aligns through a :class:`RecordingEngine`, which keeps every chunk's alignments in a
compact form while they fit a memory budget; the second pass gets them back from a
:class:`ReplayEngine` instead of aligning again (a chunk not kept is aligned again).

The alignments do not depend on what differs between the passes (energies, site filters), and both
passes cut the same pairs into the same chunks, so a chunk is found again by its first pair and
size. Kept: the pairs that have survivors and every survivor's columns (no array per pair).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from gamut.io.memory import available_memory
from gamut.scanning.alignments import AlignmentEngine, ChunkAlignments
from gamut.scanning.params import ScanParams
from gamut.scanning.sequences import SequenceSet

#: The most host memory the kept alignments may take: this share of the memory available at the
#: start, and at most :data:`MAX_REPLAY_BYTES`.
REPLAY_SHARE = 0.25
MAX_REPLAY_BYTES = 4 << 30

_SURVIVOR_FIELDS = ("score", "i_end", "j_end", "i_start", "j_start", "op_start", "op_end", "ops")


def replay_budget() -> int:
    """Bytes the kept alignments of a scan may take (:data:`REPLAY_SHARE` of the available memory)."""
    free = available_memory()
    return MAX_REPLAY_BYTES if free is None else int(min(MAX_REPLAY_BYTES, free * REPLAY_SHARE))


@dataclass(frozen=True)
class KeptAlignments:
    """A chunk's :class:`ChunkAlignments` without its per-pair arrays: the pairs with survivors
    (``pairs_with``) and their survivor rows, then every survivor column as it was."""

    n_pairs: int
    pairs_with: np.ndarray
    sv_start: np.ndarray
    sv_stop: np.ndarray
    survivors: tuple[np.ndarray, ...]

    @classmethod
    def of(cls, alignments: ChunkAlignments) -> KeptAlignments:
        pairs_with, sv_start, sv_stop = alignments.survivor_ranges()
        return cls(alignments.n_pairs, pairs_with, sv_start, sv_stop,
                   tuple(getattr(alignments, name) for name in _SURVIVOR_FIELDS))

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.pairs_with, self.sv_start, self.sv_stop, *self.survivors))

    def restore(self) -> ChunkAlignments:
        return ChunkAlignments(self.sv_start, self.sv_stop, *self.survivors, pairs_with=self.pairs_with,
                               size=self.n_pairs)


def chunk_key(pairs: np.ndarray) -> tuple[int, int, int]:
    """A chunk of consecutive pairs by its first pair and size."""
    pairs = np.asarray(pairs).reshape(-1, 2)
    if pairs.shape[0] == 0:
        return (-1, -1, 0)
    return int(pairs[0, 0]), int(pairs[0, 1]), int(pairs.shape[0])


class _Wrapped:
    """An engine's attributes, for an engine that stands in for it."""

    def __init__(self, engine: AlignmentEngine) -> None:
        self.engine = engine
        self.name = engine.name
        self.energy_device = engine.energy_device
        self.occupies_cores = engine.occupies_cores
        self.preferred_chunk_cells = engine.preferred_chunk_cells
        self.preferred_chunk_pairs = engine.preferred_chunk_pairs


class RecordingEngine(_Wrapped):
    """Aligns through ``engine`` and keeps every chunk's alignments while they fit ``budget`` bytes
    (once one does not, it keeps no more)."""

    def __init__(self, engine: AlignmentEngine, budget: int) -> None:
        super().__init__(engine)
        self.budget = int(budget)
        self.kept: dict[tuple[int, int, int], KeptAlignments] = {}
        self.kept_bytes = 0
        self.full = False
        self._lock = threading.Lock()

    def align(self, queries: SequenceSet, references: SequenceSet, pairs: np.ndarray,
              params: ScanParams) -> ChunkAlignments:
        out = self.engine.align(queries, references, pairs, params)
        if not self.full:
            kept = KeptAlignments.of(out)
            with self._lock:
                if self.kept_bytes + kept.nbytes > self.budget:
                    self.full = True
                else:
                    self.kept[chunk_key(pairs)] = kept
                    self.kept_bytes += kept.nbytes
        return out

    def forget(self, key: tuple[int, int, int]) -> None:
        """Let go of a chunk's alignments (by :func:`chunk_key`): its result is held whole."""
        with self._lock:
            kept = self.kept.pop(key, None)
            if kept is not None:
                self.kept_bytes -= kept.nbytes

    def replay(self) -> ReplayEngine:
        """The engine of the second pass: these alignments, then ``engine`` for the chunks not kept."""
        return ReplayEngine(self.engine, self.kept)


class ReplayEngine(_Wrapped):
    """Gives back kept alignments (each once: memory is released as the pass goes) and aligns the
    chunks it does not hold with ``engine``; ``replayed``/``aligned`` count the chunks."""

    def __init__(self, engine: AlignmentEngine, kept: dict[tuple[int, int, int], KeptAlignments]) -> None:
        super().__init__(engine)
        self.kept = dict(kept)
        #: Replayed chunks take no core: post-processing beside them may take every core.
        self.occupies_cores = engine.occupies_cores and not self.kept
        self.replayed = 0
        self.aligned = 0
        self._lock = threading.Lock()

    def align(self, queries: SequenceSet, references: SequenceSet, pairs: np.ndarray,
              params: ScanParams) -> ChunkAlignments:
        with self._lock:
            kept = self.kept.pop(chunk_key(pairs), None)
        if kept is not None and kept.n_pairs == np.asarray(pairs).reshape(-1, 2).shape[0]:
            self.replayed += 1
            return kept.restore()
        self.aligned += 1
        return self.engine.align(queries, references, pairs, params)
