"""Sequences kept end to end in one buffer (:class:`PackedSequences`), for batches of many short
records: the FASTA reader of :mod:`gamut.io.fasta_columns` gives them, the Turner fold's letter
check and GPU engine take them as they are."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np


class PackedSequences(Sequence):
    """Sequences kept end to end: ``letters`` (ASCII bytes) and ``offsets`` (int64, one more than
    sequences, from 0). A sequence of ``str`` all the same (each made when asked), so that a
    million records read from a file or checked for the API travel between the reader, the letter
    check, the engines and the writers as two buffers, not a million strings."""

    def __init__(self, letters: bytes, offsets: np.ndarray) -> None:
        self.letters = bytes(letters)
        self.offsets = np.ascontiguousarray(offsets, np.int64)
        if self.offsets.ndim != 1 or self.offsets.size < 1 or self.offsets[0] != 0 or \
                self.offsets[-1] != len(self.letters) or np.any(np.diff(self.offsets) < 0):
            raise ValueError("offsets must rise from 0 to the letters' length")

    @classmethod
    def of(cls, sequences: Sequence[str]) -> PackedSequences:
        """``sequences`` end to end (as they are when they already are :class:`PackedSequences`): one
        byte a letter, so that the offsets are the strings' own; a letter beyond Latin-1 becomes
        ``?`` (a checker that reads only ASCII letters refuses it at its place)."""
        if isinstance(sequences, PackedSequences):
            return sequences
        offsets = np.zeros(len(sequences) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, sequences), np.int64, len(sequences)), out=offsets[1:])
        return cls("".join(sequences).encode("latin-1", "replace"), offsets)

    def __len__(self) -> int:
        return int(self.offsets.shape[0]) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> PackedSequences: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return [self[k] for k in range(start, stop, step)]
            stop = max(start, stop)
            a, b = int(self.offsets[start]), int(self.offsets[stop])
            return PackedSequences(self.letters[a:b], self.offsets[start:stop + 1] - a)
        k = int(index)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(f"sequence {index} of {len(self)}")
        return self.letters[self.offsets[k]:self.offsets[k + 1]].decode("ascii")

    def __iter__(self) -> Iterator[str]:
        text = self.letters.decode("ascii")
        bounds = self.offsets.tolist()
        return (text[a:b] for a, b in zip(bounds[:-1], bounds[1:]))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedSequences):
            return self.letters == other.letters and np.array_equal(self.offsets, other.offsets)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PackedSequences({len(self):,} sequences, {len(self.letters):,} letters)"
