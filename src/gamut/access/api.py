"""The Python API of accessibility: :func:`accessibility` and its result, :class:`Accessibility`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gamut.access.model import (DEFAULT_MAX_UNPAIRED, DEFAULT_SPAN, DEFAULT_WINDOW, AccessParams, energy_to_open,
                                 widened_site)
from gamut.errors import UsageError
from gamut.io.fasta import named_records

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Accessibility:
    """One sequence's accessibility. ``unpaired[i, u - 1]`` (shape (n, max_unpaired)) is the
    probability that the ``u`` letters ending at 0-based position ``i`` are all unpaired (NaN where
    ``i < u - 1``: RNAplfold's ``_lunp`` convention)."""

    name: str
    sequence: str
    params: AccessParams
    unpaired: np.ndarray

    def __len__(self) -> int:
        return len(self.sequence)

    @property
    def opening_energy(self) -> np.ndarray:
        """``-RT ln P(unpaired)`` in kcal/mol at 37 C (same shape; +inf where the probability is 0)."""
        return energy_to_open(self.unpaired)

    def site_opening_energy(self, start: int, end: int, upstream: int = 0, downstream: int = 0) -> float:
        """Opening energy of 1-based positions ``start..end``, widened by ``upstream`` letters before
        and ``downstream`` after (as far as the sequence goes; PITA takes 3 and 15 around a site).
        The stretch may hold at most ``max_unpaired`` letters."""
        if upstream < 0 or downstream < 0:
            raise UsageError(f"flanks must be >= 0, got {upstream} and {downstream}")
        if 1 <= start <= end <= len(self):
            start, end = (int(v) for v in widened_site(start, end, len(self), upstream, downstream))
        u = end - start + 1
        if not (1 <= start <= end <= len(self)) or u > self.params.max_unpaired:
            raise UsageError(f"{self.name}: positions {start}..{end} are not a stretch of 1..{self.params.max_unpaired}"
                             f" letters of a sequence of {len(self)}")
        return float(energy_to_open(self.unpaired[end - 1, u - 1]))  # one cell, not the whole table

    def cells(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The defined cells, by position then ``u``: 1-based ``end``, ``u`` and the probability."""
        rows, cols = np.nonzero(~np.isnan(self.unpaired))
        return rows + 1, cols + 1, self.unpaired[rows, cols]

    def table(self) -> pd.DataFrame:
        """One row per position and stretch length: ``name``, ``end`` (1-based), ``u``, ``unpaired``,
        ``opening_energy``, without the undefined (NaN) ones."""
        import pandas as pd

        end, u, prob = self.cells()
        return pd.DataFrame({"name": self.name, "end": end, "u": u, "unpaired": prob,
                             "opening_energy": energy_to_open(prob)})


def accessibility(sequences: Any, window: int = DEFAULT_WINDOW, span: int = DEFAULT_SPAN,
                  max_unpaired: int = DEFAULT_MAX_UNPAIRED, device: str = "auto", threads: int | None = None,
                  name: str = "sequence") -> Accessibility | list[Accessibility]:
    """Accessibility of one sequence (an :class:`Accessibility`) or of a list of sequences or
    ``(name, sequence)`` pairs (a list, folded in batches).

    ``window``, ``span`` and ``max_unpaired`` are RNAplfold's ``-W``, ``-L`` and ``-u``. ``device``:
    ``cpu`` folds with ViennaRNA on ``threads`` processes (default every core), ``cuda`` with our
    kernels on the GPU (the same numbers to about 1e-12), ``auto`` takes the GPU where one is usable.
    """
    from gamut.access.engines import make_folder

    params = AccessParams(window, span, max_unpaired)
    single = isinstance(sequences, str)
    records = [(name, sequences)] if single else named_records(sequences)
    with make_folder(params, device, threads) as folder:
        folded = folder.fold([seq for _, seq in records])
    results = [Accessibility(rec_name, seq, params, up) for (rec_name, seq), up in zip(records, folded)]
    return results[0] if single else results
