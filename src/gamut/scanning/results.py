"""A scanned chunk's results, as the code after the scan loop reads them: :class:`ChunkResult` (the
chunk's pairs and hit columns, and what is computed from them once: site columns, genome
coordinates, opening energies) with :class:`SiteColumns` and :class:`RectLayout`.

Plain data, below every module that reads it: the scan loop
(:mod:`gamut.scanning.pipeline.scan_loop`) makes the results, the site modules
(:mod:`gamut.scanning.sites`, :mod:`gamut.scanning.site_access`) fill them in, the sinks
(:mod:`gamut.scanning.sinks`) format them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gamut.scanning.params import SITE_TYPES

if TYPE_CHECKING:
    from gamut.scanning.hits import HitTable


@dataclass(frozen=True)
class RectLayout:
    """A rectangle's pairs (queries ``q0..q0+rows-1``, each against ``width`` references of a
    stripe beginning at reference ``r0`` of ``n_refs``, query after query) in the scan's output
    order, in O(1) memory: each pair's number there (:meth:`ordinals`), the pairs that begin their
    query there (:meth:`query_starts`: miRanda's text prints the query's header there) and the
    chunk's pair where each query's row begins (:attr:`row_starts`: where the writer interleaves
    the stripes)."""

    q0: int
    rows: int
    r0: int
    width: int
    n_refs: int

    def ordinals(self, pairs: np.ndarray) -> np.ndarray:
        """The output-order numbers of the chunk's pairs ``pairs`` (indices into the chunk)."""
        pairs = np.asarray(pairs, np.int64)
        row, column = np.divmod(pairs, max(self.width, 1))
        return (self.q0 + row) * self.n_refs + self.r0 + column

    def query_starts(self) -> np.ndarray:
        """The chunk's pairs that are the first of their query in the output order."""
        return self.row_starts if self.r0 == 0 else np.zeros(0, np.int64)

    @property
    def row_starts(self) -> np.ndarray:
        return np.arange(self.rows, dtype=np.int64) * self.width


@dataclass
class SiteColumns:
    """Per hit of a chunk (every hit, reported or not): site type code (index into
    :data:`~gamut.scanning.params.SITE_TYPES`), ``t1``, ``dist_to_end``, ``supp_pairs``,
    ``local_au`` and the seed's span (:func:`gamut.scanning.sites.site_columns` computes them)."""

    site: np.ndarray  # int8
    t1: np.ndarray  # int64
    dist_to_end: np.ndarray  # int64
    supp_pairs: np.ndarray  # int8
    local_au: np.ndarray  # float32 percent, NaN without flanking letters
    seed_start: np.ndarray  # int64, 1-based inclusive
    seed_end: np.ndarray  # int64

    def take(self, rows: np.ndarray) -> SiteColumns:
        return SiteColumns(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))

    def names(self) -> np.ndarray:
        """The site types as strings (object array)."""
        return np.asarray(SITE_TYPES, dtype=object)[self.site]


@dataclass
class ChunkResult:
    """A chunk of scanned pairs and their hits. Pair p's miRanda running counter is ``counter0 + p + 1``."""

    pairs: np.ndarray  # int64 (n, 2): query index, reference index
    hits: HitTable  # energies and reported flags set
    counter0: int
    #: Site types and context of every hit (:func:`gamut.scanning.sites.chunk_sites`), once computed.
    sites: SiteColumns | None = None
    #: ``(genome map, genome coordinates of the reported hits)`` (:func:`gamut.scanning.sinks.columns.hit_genome`),
    #: once computed: every output of the chunk maps its hits once.
    genome: tuple | None = None
    #: ``--accessibility``: every hit's site opening energy, kcal/mol (:mod:`gamut.scanning.site_access`).
    dg_open: np.ndarray | None = None
    #: Where the pairs sit in the scan's output order, for a chunk that is not a run of it (a
    #: rectangle of one GPU's stripe of references, :mod:`gamut.scanning.pipeline.stripes`); None:
    #: pair p is number ``counter0 + p``, and a pair starts its query where the query changes.
    layout: RectLayout | None = None

    def __len__(self) -> int:
        return int(self.pairs.shape[0])

    def ordinal(self, pairs: np.ndarray) -> np.ndarray:
        """The output-order numbers of the chunk's pairs ``pairs`` (indices into the chunk)."""
        return self.counter0 + pairs if self.layout is None else self.layout.ordinals(pairs)
