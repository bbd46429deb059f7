"""Scoring parameters, the nucleotide alphabet and one spliced-alignment case (base, exons, target).

Exons are 0-based half-open ``(start, end)`` intervals on the base. A case keeps them sorted by
``(start, end, input index)``; ``order[s]`` is the input index of sorted exon ``s``, so every
engine works on sorted exons and results are reported in input indices.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from gamut.errors import InputError, UsageError

#: Symbol codes: A C G T, and 4 for N (any IUPAC ambiguity code).
ALPHABET = "ACGTN"
N_CODE = 4
_AMBIGUOUS = "NRYSWKMBDHV"

#: Default scores (documented in docs/splice.md): +1 match, -1 mismatch, -2 per gap symbol.
DEFAULT_MATCH = 1
DEFAULT_MISMATCH = -1
DEFAULT_GAP = -2

#: Largest absolute score any DP cell may reach; engines work in int32 with a -2**29 sentinel.
SCORE_LIMIT = 2**28


def _encoding_table() -> np.ndarray:
    table = np.full(256, 255, dtype=np.uint8)
    for code, letter in enumerate("ACGT"):
        table[ord(letter)] = table[ord(letter.lower())] = code
    table[ord("U")] = table[ord("u")] = 3
    for letter in _AMBIGUOUS:
        table[ord(letter)] = table[ord(letter.lower())] = N_CODE
    return table


#: Symbol code of every byte (255: not a letter of the alphabet).
ENCODE_TABLE = _encoding_table()


def encode(sequence: str, what: str = "sequence") -> np.ndarray:
    """Codes (uint8) of a DNA/RNA sequence: ACGT (U as T, any case), IUPAC ambiguity codes as N.

    Raises :class:`InputError` naming ``what`` and the first position of any other letter.
    """
    raw = np.frombuffer(sequence.encode("latin-1", errors="replace"), dtype=np.uint8)
    codes = ENCODE_TABLE[raw]
    bad = np.flatnonzero(codes == 255)
    if bad.size:
        pos = int(bad[0])
        raise InputError(f"{what}: unknown letter '{sequence[pos]}' at position {pos + 1}")
    return codes


_COMPLEMENT = str.maketrans("ACGTNacgtn", "TGCANtgcan")


def reverse_complement(sequence: str) -> str:
    """The reverse complement of DNA letters (other letters are kept, in reverse)."""
    return sequence.translate(_COMPLEMENT)[::-1]


def decode(codes: np.ndarray) -> str:
    """The letters of ``codes`` (inverse of :func:`encode`, ambiguity codes become N)."""
    return np.frombuffer(ALPHABET.encode(), dtype=np.uint8)[codes].tobytes().decode()


@dataclass(frozen=True)
class ScoreParams:
    """Linear-gap scoring: ``matrix[a, b]`` for base symbol a against target symbol b, ``gap`` per gap.

    Built from ``match``/``mismatch`` unless a 4x4 ACGT ``matrix`` is given; N scores ``mismatch``
    against everything (the matrix minimum when a matrix is given).
    """

    match: int = DEFAULT_MATCH
    mismatch: int = DEFAULT_MISMATCH
    gap: int = DEFAULT_GAP
    matrix: np.ndarray = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        for name in ("match", "mismatch", "gap"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value:
                raise UsageError(f"{name} must be an integer, got {value!r}")
            object.__setattr__(self, name, int(value))
        if self.gap >= 0:
            raise UsageError(f"gap must be negative, got {self.gap}")
        full = np.full((5, 5), self.mismatch, dtype=np.int32)
        if self.matrix is None:
            full[:4, :4] = self.mismatch
            np.fill_diagonal(full[:4, :4], self.match)
        else:
            given = np.asarray(self.matrix)
            if given.shape != (4, 4) or not np.all(given == np.round(given)):
                raise UsageError("matrix must be a 4x4 integer matrix over A, C, G, T")
            full[:] = int(given.min())
            full[:4, :4] = given.astype(np.int32)
        if np.abs(full).max() > 10_000 or abs(self.gap) > 10_000:
            raise UsageError("scores must lie within -10000..10000")
        full.setflags(write=False)
        object.__setattr__(self, "matrix", full)

    @property
    def max_abs(self) -> int:
        """The largest absolute score of one alignment column."""
        return int(max(np.abs(self.matrix).max(), abs(self.gap)))


@dataclass(frozen=True)
class SpliceCase:
    """One spliced alignment: base codes, sorted exons (with their input indices) and target codes."""

    base: np.ndarray  # uint8 codes
    starts: np.ndarray  # int32, sorted exons
    ends: np.ndarray  # int32
    order: np.ndarray  # int64: input index of each sorted exon
    target: np.ndarray  # uint8 codes
    name: str = "case"

    @property
    def n_exons(self) -> int:
        return int(self.starts.size)

    @property
    def cells(self) -> int:
        """DP cells updated: target length times total exon length (the paper's equation 3)."""
        return int(self.target.size) * int((self.ends - self.starts).sum())

    @property
    def stream_rows(self) -> int:
        """Rows of the exon stream: each exon's entry row plus one row per exon symbol."""
        return int((self.ends - self.starts).sum()) + self.n_exons


def check_exons(exons: Sequence[tuple[int, int]] | np.ndarray, name: str) -> None:
    """Exons must be ``(start, end)`` pairs of integers: building the case with NumPy would
    silently truncate 2.5 to 2 (and take True as 1)."""
    if isinstance(exons, np.ndarray):
        if exons.size and (exons.dtype == np.bool_ or not np.issubdtype(exons.dtype, np.integer)):
            raise InputError(f"{name}: exon coordinates must be integers, got an array of {exons.dtype}")
        return
    for index, exon in enumerate(exons, 1):
        values = tuple(exon) if isinstance(exon, (tuple, list, np.ndarray)) else None
        if values is None or len(values) != 2:
            raise InputError(f"{name}: exon {index} must be a (start, end) pair, got {exon!r}")
        for value in values:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise InputError(f"{name}: exon {index} {tuple(values)!r}: coordinates must be integers, "
                                 f"got {value!r}")


def make_case(
    base: str | np.ndarray,
    exons: Sequence[tuple[int, int]] | np.ndarray,
    target: str | np.ndarray,
    params: ScoreParams | None = None,
    name: str = "case",
) -> SpliceCase:
    """Validate and build a :class:`SpliceCase` (exons may be unsorted and may overlap).

    Raises :class:`InputError` for an empty base or target, no exons, or an exon with
    ``start >= end``, ``start < 0`` or ``end > len(base)`` (naming the exon's input index).
    """
    base_codes = encode(base, f"{name}: base") if isinstance(base, str) else np.ascontiguousarray(base, np.uint8)
    target_codes = encode(target, f"{name}: target") if isinstance(target, str) else np.ascontiguousarray(target, np.uint8)
    if base_codes.size == 0:
        raise InputError(f"{name}: empty base sequence")
    if target_codes.size == 0:
        raise InputError(f"{name}: empty target sequence")
    if base_codes.size and base_codes.max() > N_CODE or target_codes.size and target_codes.max() > N_CODE:
        raise InputError(f"{name}: symbol codes must lie in 0..4")
    check_exons(exons, name)
    pairs = np.asarray(exons, dtype=np.int64).reshape(-1, 2) if len(exons) else np.zeros((0, 2), np.int64)
    if pairs.shape[0] == 0:
        raise InputError(f"{name}: no candidate exons")
    bad = np.flatnonzero((pairs[:, 0] < 0) | (pairs[:, 1] > base_codes.size) | (pairs[:, 0] >= pairs[:, 1]))
    if bad.size:
        index = int(bad[0])
        start, end = (int(v) for v in pairs[index])
        raise InputError(
            f"{name}: exon {index} ({start}, {end}) must satisfy 0 <= start < end <= {base_codes.size} "
            "(0-based, half-open)"
        )
    order = np.lexsort((np.arange(pairs.shape[0]), pairs[:, 1], pairs[:, 0]))
    case = SpliceCase(
        base=base_codes,
        starts=np.ascontiguousarray(pairs[order, 0], dtype=np.int32),
        ends=np.ascontiguousarray(pairs[order, 1], dtype=np.int32),
        order=order.astype(np.int64),
        target=target_codes,
        name=name,
    )
    if params is not None:
        check_score_range(case, params.max_abs)
    return case


def check_score_range(case: SpliceCase, max_abs: int) -> None:
    """Raise :class:`InputError` when a DP cell of ``case`` could reach :data:`SCORE_LIMIT` in
    absolute value (the engines' int32 cells), with columns scoring at most ``max_abs``."""
    span = int(case.base.size) + int(case.target.size) + 2
    if span * max_abs >= SCORE_LIMIT:
        raise InputError(
            f"{case.name}: scores could overflow 32-bit cells: base plus target are {span - 2:,} nt, at most "
            f"{(SCORE_LIMIT - 1) // max(max_abs, 1) - 2:,} with columns scoring up to {max_abs}"
        )
