"""Pairs that know they are a run of miRanda's output order (every reference for the first query,
then the second, ...): :class:`PairRun`, made by :meth:`gamut.scanning.pipeline.pairs.ScanInput.pair_range`
for every chunk of an unrestricted scan, and read by engines with :func:`run_of` in O(1)."""
from __future__ import annotations

import numpy as np
from numba import njit


class PairRun(np.ndarray):
    """Pairs ``first..first+n-1`` of the output order over ``n_refs`` references, as an int64
    (n, 2) array of (query, reference) that says so: an engine can take the run from
    :attr:`run` in O(1) instead of checking every pair. Only :meth:`of_range` makes one, read-only;
    any array derived from it (a slice, a copy, a sum) is plain pairs again (``run`` is None)."""

    run: tuple[int, int] | None = None  # (first, n_refs)

    @classmethod
    def of_range(cls, start: int, stop: int, n_refs: int) -> PairRun:
        """Pairs ``start..stop-1`` of the output order over ``n_refs`` (> 0) references."""
        out = np.empty((max(int(stop) - int(start), 0), 2), np.int64)
        _fill_pairs(out, int(start), int(n_refs))
        out.flags.writeable = False  # the run must stay what it says
        pairs = out.view(cls)
        pairs.run = (int(start), int(n_refs))
        return pairs

    def __array_finalize__(self, obj) -> None:
        self.run = None

    def __reduce__(self):  # pickled (e.g. to a worker process) as plain pairs
        return np.asarray(self).__reduce__()


def run_of(pairs: np.ndarray, n_refs: int) -> int | None:
    """The output-order number of ``pairs[0]`` when ``pairs`` is a :class:`PairRun` over
    ``n_refs`` references, else None (O(1): nothing is checked pair by pair)."""
    run = getattr(pairs, "run", None)
    if run is None or run[1] != n_refs or pairs.ndim != 2:
        return None
    return run[0]


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
