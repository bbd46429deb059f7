"""Scan parameters (miRanda's options) and the per-row scoring scheme of the reversed query (miranda-model §4)."""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal

import numpy as np

from gamut.access.model import SiteAccess
from gamut.errors import UsageError
from gamut.numerals import number
from gamut.scanning.alphabet import BASE_SCORES, N_CLASSES

#: Site types (docs/scan.md; :mod:`gamut.scanning.sites` classifies hits), in the columns' order.
SITE_TYPES = ("8mer", "7mer-m8", "7mer-A1", "6mer", "offset-6mer", "none")

#: miRanda's 5' weighting length: the last 8 miRNA positions of the reversed query are the seed side.
SEED_LENGTH = 8
#: The engines compare scores with a threshold within this (scores never come near it).
CUTOFF_LIMIT = 2**62


@dataclass(frozen=True)
class ScanParams:
    """miRanda 3.3a settings, with its defaults.

    ``score_threshold`` (-sc; a hit needs score >= it), ``energy_threshold`` (-en, kcal/mol; a hit
    needs energy < it), ``scale`` (-scale), ``gap_open`` (-go), ``gap_extend`` (-ge), ``strict``,
    ``noenergy``, ``trim`` (-trim, 0 = off), ``energy_model`` (``"miranda"`` or ``"vienna2004"``).
    The thresholds are real numbers (miRanda's are whole: it reads them with ``atoi``), held as
    ``int`` when whole; the engines compare with :attr:`score_cutoff` and :attr:`energy_cutoff`.
    """

    score_threshold: int | float = 140
    energy_threshold: int | float = 1
    scale: float = 4.0
    gap_open: int = -9
    gap_extend: int = -4
    strict: bool = False
    noenergy: bool = False
    trim: int = 0
    energy_model: str = "miranda"
    restrict: frozenset[tuple[str, str]] | None = field(default=None, compare=False)
    #: ``--site-types``: report only hits of these types (a comma string or an iterable of names,
    #: kept as a tuple in :data:`SITE_TYPES` order so that run directories can store it as JSON).
    site_types: tuple[str, ...] | None = None
    #: ``--accessibility``: each hit's site opening energy and ddG (:mod:`gamut.scanning.site_access`).
    site_access: SiteAccess | None = None

    def __post_init__(self) -> None:
        for name in ("score_threshold", "energy_threshold"):
            object.__setattr__(self, name, _threshold(getattr(self, name), name))
        object.__setattr__(self, "scale", number(self.scale, "scale"))
        for name in ("gap_open", "gap_extend", "trim"):  # whole: never truncated into the int32 tables
            object.__setattr__(self, name, number(getattr(self, name), name, whole=True))
        object.__setattr__(self, "site_types", parse_site_types(self.site_types))
        if self.site_access is not None and not isinstance(self.site_access, SiteAccess):
            raise UsageError(f"site_access must be a SiteAccess, got {type(self.site_access).__name__}")
        if self.site_access is not None and self.site_access.ddg_threshold is not None and self.noenergy:
            raise UsageError("--ddg-threshold needs energies (it compares energy + dG_open): drop --noenergy")
        if self.gap_open > 0 or self.gap_extend > 0:
            raise UsageError("gap penalties may not be greater than 0")
        if self.trim < 0:
            raise UsageError("negative value given for -trim (reference truncation)")
        largest = abs(self.scale) * max(5, -self.gap_open, -self.gap_extend)
        if max(largest, -self.gap_open, -self.gap_extend) >= 2**31 - 1:
            raise UsageError(f"-scale {self.scale:g} with gap penalties {self.gap_open}/{self.gap_extend} makes seed "
                             f"scores or gap costs beyond the 32-bit integers miRanda scores with (limit {2**31 - 1:,})")
        if self.energy_model not in ("miranda", "vienna2004"):
            raise UsageError(f"unknown energy model '{self.energy_model}' (miranda or vienna2004)")

    @property
    def score_cutoff(self) -> int:
        """The least whole score that reaches ``score_threshold``: ``ceil`` of it (scores are whole
        numbers, so ``score >= 140.5`` is ``score >= 141``), within :data:`CUTOFF_LIMIT`. What the
        engines compare a cell's best score with."""
        return max(-CUTOFF_LIMIT, min(math.ceil(self.score_threshold), CUTOFF_LIMIT))

    @property
    def energy_cutoff(self) -> int:
        """``energy_threshold`` in whole 0.01 kcal/mol, rounded up (within :data:`CUTOFF_LIMIT`).
        Energies are whole numbers of 0.01 kcal/mol (miranda-model §9), so an energy is below the
        threshold exactly when its count of 0.01 kcal/mol is below this. A real threshold counts as
        the decimal it is written as (-20.49, not the nearest double, which lies a little above or
        below): an energy of -20.49 is not below -20.49, one of -20.50 is."""
        value = self.energy_threshold
        exact = Decimal(value) if isinstance(value, int) else Decimal(repr(float(value)))
        cutoff = int((exact * 100).to_integral_value(rounding=ROUND_CEILING))
        return max(-CUTOFF_LIMIT, min(cutoff, CUTOFF_LIMIT))


def _threshold(value, name: str) -> int | float:
    """A threshold as :class:`ScanParams` holds it: a finite real number, an ``int`` when whole."""
    real = number(value, name)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return int(real) if real.is_integer() else real


def parse_site_types(value) -> tuple[str, ...] | None:
    """A comma-separated string or an iterable of site type names -> the names in
    :data:`SITE_TYPES` order (None stays None); an unknown name is a one-line :class:`UsageError`."""
    if value is None:
        return None
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else [str(v).strip() for v in value]
    names = [v for v in names if v]
    unknown = [v for v in names if v not in SITE_TYPES]
    if unknown or not names:
        shown = ", ".join(repr(v) for v in unknown) if unknown else "none given"
        raise UsageError(f"unknown site type ({shown}); choose from {','.join(SITE_TYPES)}")
    return tuple(name for name in SITE_TYPES if name in names)


def c_trunc(x: float) -> int:
    """C's conversion of a double to int: truncation toward zero."""
    return int(math.trunc(x))


def gap_rise(params: ScanParams) -> int:
    """The most one gap step can add to a score: 0, unless a negative ``scale`` turns the seed
    rows' gap penalties (``trunc(scale * gap)``) into bonuses, which miRanda applies as computed:
    a gap in the query then gains that much per reference letter, so scores grow with the
    reference's length."""
    seed = (c_trunc(params.scale * float(params.gap_open)), c_trunc(params.scale * float(params.gap_extend)))
    return max(0, params.gap_open, params.gap_extend, *seed)


def score_bound(top: int, rise: int, ref_length: int) -> int:
    """The largest value any DP cell can hold for a query whose rows' best positive scores sum to
    ``top``, against a reference of ``ref_length`` letters: a path enters each row once (adding at
    most that row's best score) and takes at most one gap step per reference letter."""
    return int(top) + int(rise) * int(ref_length)


def exact_int_type(high: int, low: int) -> type:
    """The narrowest of int16, int32 and int64 that holds every value in [low, high] with room
    for the DP's sums; raises :class:`UsageError` when not even int64 does (no score may wrap
    or saturate)."""
    for dtype in (np.int16, np.int32, np.int64):
        limit = int(np.iinfo(dtype).max) - 2
        if high < limit and low > -limit:
            return dtype
    raise UsageError(f"these scoring parameters allow scores up to {high:,}, beyond the 64-bit range "
                     f"of gamut's engines; use a smaller -scale or gap penalties, or shorter references")


@dataclass(frozen=True)
class RowScheme:
    """Per-row scores and gap costs for a query of length L (rows 1..L of the reversed query).

    ``scores[i, x, y]``: score of reversed-query row i (class x) against reference class y;
    ``gap_open[i]``, ``gap_extend[i]``; ``seed_row[i]`` (C state fixed at -1). Row 0 is unused.
    """

    scores: np.ndarray  # int32 (L+1, 5, 5)
    gap_open: np.ndarray  # int32 (L+1,)
    gap_extend: np.ndarray  # int32 (L+1,)
    seed_row: np.ndarray  # uint8 (L+1,)


def row_scheme(length: int, params: ScanParams) -> RowScheme:
    """Build the scoring rows of miranda-model §4 for a query of ``length`` letters."""
    L = length
    W = L - SEED_LENGTH
    seed_scores = np.trunc(params.scale * BASE_SCORES.astype(np.float64)).astype(np.int32)
    scores = np.zeros((L + 1, N_CLASSES, N_CLASSES), dtype=np.int32)
    gap_open = np.zeros(L + 1, dtype=np.int32)
    gap_extend = np.zeros(L + 1, dtype=np.int32)
    seed_row = np.zeros(L + 1, dtype=np.uint8)
    seed_open = c_trunc(params.scale * float(params.gap_open))
    seed_ext = c_trunc(params.scale * float(params.gap_extend))
    for i in range(1, L + 1):
        if L > 3 and 3 <= i <= L - 1:
            scores[i] = BASE_SCORES if i <= W else seed_scores
        if i <= W or i == L:
            gap_open[i], gap_extend[i] = params.gap_open, params.gap_extend
        else:
            gap_open[i], gap_extend[i] = seed_open, seed_ext
            seed_row[i] = 1
    return RowScheme(scores, gap_open, gap_extend, seed_row)


@dataclass(frozen=True)
class QueryTables:
    """Everything the DP needs about one query: reversed classes and per-row scores and gaps.

    ``profile[c, i]`` is the score of reversed-query row i against reference class c (row 0 = 0).
    """

    qrev: np.ndarray  # int8 (L,)
    profile: np.ndarray  # int32 (5, L+1)
    gap_open: np.ndarray  # int32 (L+1,)
    gap_extend: np.ndarray  # int32 (L+1,)
    seed_row: np.ndarray  # uint8 (L+1,)


def query_tables(codes: np.ndarray, params: ScanParams, scheme: RowScheme | None = None) -> QueryTables:
    """Build :class:`QueryTables` for a query given its class codes (5'->3').

    ``scheme`` may pass ``row_scheme(len(codes), params)`` when many queries share a length.
    """
    codes = np.asarray(codes)
    if scheme is None:
        scheme = row_scheme(codes.shape[0], params)
    return _tables_of(codes[None, :], scheme)[0]


def same_length_tables(queries, which: np.ndarray, length: int, scheme: RowScheme) -> list[QueryTables]:
    """:func:`query_tables` of the queries ``which`` of a :class:`~gamut.scanning.sequences.SequenceSet`,
    all ``length`` letters long, under ``scheme`` (``row_scheme(length, params)``), built together."""
    which = np.asarray(which, np.int64)
    if which.size == 0:
        return []
    return _tables_of(queries.codes[queries.offsets[which][:, None] + np.arange(length)], scheme)


def _tables_of(codes: np.ndarray, scheme: RowScheme) -> list[QueryTables]:
    """:class:`QueryTables` of each row of ``codes`` (queries of one length, class codes 5'->3')."""
    qrev = np.ascontiguousarray(codes[:, ::-1], dtype=np.int8)
    length = qrev.shape[1]
    profile = np.zeros((qrev.shape[0], N_CLASSES, length + 1), dtype=np.int32)
    rows = np.arange(1, length + 1)
    for c in range(N_CLASSES):
        profile[:, c, 1:] = scheme.scores[rows, qrev, c]
    return [QueryTables(qrev[k], profile[k], scheme.gap_open, scheme.gap_extend, scheme.seed_row)
            for k in range(qrev.shape[0])]
