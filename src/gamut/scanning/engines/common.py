"""What the alignment engines share: diagonal suppression (miranda-model §6), growable arrays and
the tables derived from the last query set."""
from __future__ import annotations

from typing import Callable, Generic, TypeVar

import numpy as np
from numba import njit

from gamut.scanning.alignments import DIAGONAL_WINDOW
from gamut.scanning.params import ScanParams

T = TypeVar("T")


@njit(cache=True, nogil=True)
def grow_array(arr, size):
    """A copy of ``arr`` with room for at least ``size`` items (at least doubled)."""
    out = np.empty(max(2 * arr.shape[0], size), dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out


@njit(cache=True, nogil=True)
def order_and_suppress(scores, rows, cols, query_length, ref_length):
    """Sort candidates (score desc, j asc, i asc) and drop those within 6 diagonals of a better one.

    Returns the indices of the survivors, in processing order (miranda-model §6).
    """
    n = scores.shape[0]
    span_i = np.int64(query_length + 1)
    span_j = np.int64(ref_length + 1) * span_i
    top = np.int64(scores.max()) if n > 0 else np.int64(0)
    low = np.int64(scores.min()) if n > 0 else np.int64(0)
    if (top - low + 1) < (np.int64(1) << 62) // span_j:  # one packed key per candidate
        keys = np.empty(n, np.int64)
        for k in range(n):
            keys[k] = (top - scores[k]) * span_j + np.int64(cols[k]) * span_i + rows[k]
        order = np.argsort(keys)
    else:  # scores too far apart to pack: stable sorts, least significant key first
        cell = np.empty(n, np.int64)
        for k in range(n):
            cell[k] = np.int64(cols[k]) * span_i + rows[k]
        order = np.argsort(cell, kind="mergesort")
        order = order[np.argsort(-scores[order], kind="mergesort")]
    # A candidate survives iff no earlier survivor lies within DIAGONAL_WINDOW diagonals.
    offset = query_length + DIAGONAL_WINDOW
    blocked = np.zeros(ref_length + query_length + 2 * DIAGONAL_WINDOW + 2, np.uint8)
    keep = np.empty(n, np.int64)
    s = 0
    for k in range(n):
        idx = order[k]
        d = cols[idx] - rows[idx] + offset
        if blocked[d]:
            continue
        keep[s] = idx
        s += 1
        for x in range(d - DIAGONAL_WINDOW, d + DIAGONAL_WINDOW + 1):
            blocked[x] = 1
    return keep[:s]


class QueryCache(Generic[T]):
    """What an engine derives from a query set and the parameters (``build(queries, params)``),
    kept while the same set and parameters come back: a scan aligns one query set against chunk
    after chunk of references, so the tables are built once per scan, not once per chunk."""

    def __init__(self, build: Callable[[object, ScanParams], T]) -> None:
        self._build = build
        self._last: tuple | None = None  # (queries, params, built)

    def get(self, queries, params: ScanParams) -> T:
        last = self._last
        if last is None or last[0] is not queries or last[1] != params:
            last = self._last = (queries, params, self._build(queries, params))
        return last[2]
