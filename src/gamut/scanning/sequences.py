"""Sequences as the alignment engines and the hit builder take them: one set concatenated once.

A scan holds its queries and its references as two :class:`SequenceSet` objects; engines and
:func:`gamut.scanning.hits.chunk_hits` address sequences by index into them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SequenceSet:
    """Sequences concatenated once for the engines and :func:`~gamut.scanning.hits.chunk_hits`: letters (uint8), class codes (int8), offsets."""

    ids: list[str]
    letters: np.ndarray
    codes: np.ndarray
    offsets: np.ndarray  # int64, len(ids) + 1
    is_ascii: bool  # every letter is ASCII (case mapping bytewise equals str.upper/lower)

    @classmethod
    def build(cls, ids: list[str], sequences: list[bytes], codes: list[np.ndarray] | None = None,
              encode: Callable[[bytes], np.ndarray] | None = None) -> "SequenceSet":
        """The set of ``sequences`` with their class ``codes`` (one array per sequence), or with
        ``encode(letters)`` applied once to the letters joined end to end."""
        joined = b"".join(sequences)
        offsets = np.zeros(len(sequences) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, sequences), np.int64, len(sequences)), out=offsets[1:])
        if encode is not None:
            flat_codes = np.asarray(encode(joined), np.int8)
        else:
            flat_codes = np.concatenate(codes).astype(np.int8, copy=False) if codes else np.zeros(0, np.int8)
        return cls(list(ids), np.frombuffer(joined, np.uint8), flat_codes, offsets, joined.isascii())

    @classmethod
    def from_codes(cls, codes: list[np.ndarray]) -> "SequenceSet":
        """A set of class-code sequences only (letters 'N'): what the alignment engines need."""
        return cls.build([str(k) for k in range(len(codes))], [b"N" * len(c) for c in codes],
                         [np.asarray(c, np.int8) for c in codes])

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def sequence(self, k: int) -> bytes:
        return self.letters[self.offsets[k] : self.offsets[k + 1]].tobytes()

    def class_codes(self, k: int) -> np.ndarray:
        return self.codes[self.offsets[k] : self.offsets[k + 1]]

