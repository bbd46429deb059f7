"""Pairs that know their shape: a run of miRanda's output order (every reference for the first query,
then the second, ...), made by :meth:`gamut.scanning.pipeline.pairs.ScanInput.pair_range` for every
chunk of an unrestricted scan, or a rectangle (queries ``q0..q1-1``, each against references
``r0..r1-1``: a chunk of one GPU's stripe of references, :mod:`gamut.scanning.pipeline.stripes`).
Engines read the shape with :func:`run_of` and :func:`rect_of` in O(1)."""
from __future__ import annotations

import numpy as np
from numba import njit


class PairRun(np.ndarray):
    """Pairs ``first..first+n-1`` of the output order over ``n_refs`` references, as an int64
    (n, 2) array of (query, reference) that says so: an engine can take the run from
    :attr:`run` in O(1) instead of checking every pair. Only :meth:`of_range` makes one (and
    :meth:`of_rect` a rectangle, :attr:`rect`), read-only; any array derived from it (a slice, a
    copy, a sum) is plain pairs again (``run`` and ``rect`` are None)."""

    run: tuple[int, int] | None = None  # (first, n_refs)
    rect: tuple[int, int, int, int] | None = None  # (q0, q1, r0, r1)

    @classmethod
    def of_range(cls, start: int, stop: int, n_refs: int) -> PairRun:
        """Pairs ``start..stop-1`` of the output order over ``n_refs`` (> 0) references."""
        out = np.empty((max(int(stop) - int(start), 0), 2), np.int64)
        _fill_pairs(out, int(start), int(n_refs))
        out.flags.writeable = False  # the run must stay what it says
        pairs = out.view(cls)
        pairs.run = (int(start), int(n_refs))
        return pairs

    @classmethod
    def of_rect(cls, q0: int, q1: int, r0: int, r1: int) -> PairRun:
        """Queries ``q0..q1-1``, each against references ``r0..r1-1``, query after query."""
        rows, width = max(int(q1) - int(q0), 0), max(int(r1) - int(r0), 0)
        out = np.empty((rows * width, 2), np.int64)
        _fill_rect(out, int(q0), rows, int(r0), width)  # one pass, without the interpreter lock
        out.flags.writeable = False
        pairs = out.view(cls)
        pairs.rect = (int(q0), int(q0) + rows, int(r0), int(r0) + width)
        return pairs

    def __array_finalize__(self, obj) -> None:
        self.run = None
        self.rect = None

    def __reduce__(self):  # pickled (e.g. to a worker process) as plain pairs
        return np.asarray(self).__reduce__()


def run_of(pairs: np.ndarray, n_refs: int) -> int | None:
    """The output-order number of ``pairs[0]`` when ``pairs`` is a :class:`PairRun` over
    ``n_refs`` references, else None (O(1): nothing is checked pair by pair)."""
    run = getattr(pairs, "run", None)
    if run is None or run[1] != n_refs or pairs.ndim != 2:
        return None
    return run[0]


def rect_of(pairs: np.ndarray) -> tuple[int, int, int, int] | None:
    """``(q0, q1, r0, r1)`` when ``pairs`` is a rectangle made by :meth:`PairRun.of_rect`, else None."""
    rect = getattr(pairs, "rect", None)
    return rect if rect is not None and pairs.ndim == 2 else None


@njit(cache=True, nogil=True)
def _fill_pairs(out, start, n_refs):
    """``out[k] = divmod(start + k, n_refs)``, row by row (no division per pair)."""
    n = out.shape[0]
    if n == 0:
        return
    q, r = divmod(start, n_refs)
    for k in range(n):
        out[k, 0] = q
        out[k, 1] = r
        r += 1
        if r == n_refs:
            r = 0
            q += 1


@njit(cache=True, nogil=True)
def _fill_rect(out, q0, rows, r0, width):
    """``out[k * width + j] = (q0 + k, r0 + j)`` (a stripe worker's rectangles: 0.4-0.55 s of a worker's
    align threads on the transcriptome set with NumPy's repeat and tile, 2x H200)."""
    k = 0
    for q in range(q0, q0 + rows):
        for r in range(r0, r0 + width):
            out[k, 0] = q
            out[k, 1] = r
            k += 1
