"""The exon stream the GPU kernel sweeps, laid out on the host (no CuPy here).

A case's sorted exons become one stream of rows: for exon ``k`` an *entry* row, then one row
per exon symbol, padded with no-op rows to a multiple of ``ROWS`` (the rows a lane computes per
step), so that a tile of ``ROWS`` rows never spans two exons. Each row is one byte:

- 0..4: the base symbol of a DP row, plus :data:`FINISH_BIT` on the exon's last row;
- :data:`ENTRY_CODE`: the exon's entry row; :data:`PAD_CODE`: a no-op row (keeps the row above).

Predecessor folding is planned here too. The entry row of exon ``k`` needs the best last row of
the exons ``l`` with ``end_l <= start_k``; since exons are sorted by start, that set grows with
``k`` and exon ``l`` joins it at ``elig[l]``, the first exon starting at or after ``end_l``.
Folding is a max with ties to the smaller index, so its order does not matter: an exon whose
successor is already eligible (``elig[l] == l + 1``) is folded into the running best as soon as
its last row is computed (:data:`FOLD_NOW`); an exon that overlaps the next ones is *parked*
until the entry of ``elig[l]`` (in a shared-memory slot of the kernel, or re-read from the global
``last`` array when all ``slots`` are busy: :data:`FOLD_GLOBAL`), and an exon that no exon can
follow is never folded (:data:`FOLD_NEVER`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

#: Rows a lane computes per step (the kernel's ROWS); every exon's segment is padded to it.
ROWS = 4
ENTRY_CODE = 5
PAD_CODE = 6
FINISH_BIT = 8
#: Finish actions (``fin``): fold right away, never, or park in the global array; >= 0 is a slot.
FOLD_NOW = -2
FOLD_NEVER = -3
FOLD_GLOBAL = -1


@njit(cache=True)
def _assign_slots(elig, slots):  # pragma: no cover - compiled
    """Finish action of every exon (see the module docstring); greedy slot reuse."""
    k_total = elig.shape[0]
    fin = np.empty(k_total, np.int32)
    busy_until = np.zeros(max(slots, 1), np.int64)  # entry index at which the slot is read
    for l in range(k_total):
        e = elig[l]
        if e >= k_total:
            fin[l] = FOLD_NEVER
        elif e == l + 1:
            fin[l] = FOLD_NOW
        else:
            fin[l] = FOLD_GLOBAL
            for s in range(slots):
                if busy_until[s] <= l:
                    busy_until[s] = e
                    fin[l] = s
                    break
    return fin


@dataclass(frozen=True)
class StreamPlan:
    """One case's padded stream and fold plan (arrays as the kernel reads them)."""

    stream: np.ndarray  # uint8, rows codes (length: a multiple of ROWS)
    fin: np.ndarray  # int32 (K,): finish action of each sorted exon
    fold_ptr: np.ndarray  # int32 (K+1,): fold[fold_ptr[k]:fold_ptr[k+1]] are folded at entry k
    fold: np.ndarray  # int32 (F, 2): (exon, slot or FOLD_GLOBAL)

    @property
    def rows(self) -> int:
        return int(self.stream.shape[0])


def segment_lengths(starts: np.ndarray, ends: np.ndarray, rows: int = ROWS) -> np.ndarray:
    """Stream rows of each exon: entry row plus its symbols, rounded up to a multiple of ``rows``."""
    lengths = np.asarray(ends, np.int64) - np.asarray(starts, np.int64)
    return (lengths + rows) // rows * rows


def build_plan(base: np.ndarray, starts: np.ndarray, ends: np.ndarray, slots: int, rows: int = ROWS) -> StreamPlan:
    """The stream and fold plan of sorted exons ``(starts, ends)`` on ``base`` with ``slots`` park slots."""
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    k_total = starts.shape[0]
    lengths = ends - starts
    seg = segment_lengths(starts, ends, rows)
    seg_off = np.zeros(k_total + 1, np.int64)
    np.cumsum(seg, out=seg_off[1:])
    stream = np.full(int(seg_off[-1]), PAD_CODE, np.uint8)
    stream[seg_off[:-1]] = ENTRY_CODE
    total = int(lengths.sum())
    first = np.zeros(k_total, np.int64)
    if k_total > 1:
        np.cumsum(lengths[:-1], out=first[1:])
    within = np.arange(total, dtype=np.int64) - np.repeat(first, lengths)
    stream[np.repeat(seg_off[:-1] + 1, lengths) + within] = base[np.repeat(starts, lengths) + within]
    stream[seg_off[:-1] + lengths] |= FINISH_BIT
    elig = np.searchsorted(starts, ends, side="left").astype(np.int64)
    fin = _assign_slots(elig, int(slots))
    parked = np.flatnonzero(fin >= FOLD_GLOBAL)
    order = parked[np.argsort(elig[parked], kind="stable")]
    fold = np.stack([order, fin[order]], axis=1).astype(np.int32).reshape(-1, 2)
    fold_ptr = np.zeros(k_total + 1, np.int32)
    np.cumsum(np.bincount(elig[order], minlength=k_total + 1)[:k_total], out=fold_ptr[1:])
    return StreamPlan(stream, fin, fold_ptr, fold)
