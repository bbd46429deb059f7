"""The letters the Turner model folds, checked for a whole batch at once.

ViennaRNA reads A, C, G, U (T as U) in either case and lets N pair with nothing; any other
letter (an IUPAC code such as R, a digit, a gap) is refused here, before any engine runs, with
the record named. The check runs on the batch's letters end to end (one ``bytes.translate``),
not per record, so that a million short records cost milliseconds.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gamut.errors import InputError
from gamut.io.packed import PackedSequences

#: The letters a sequence may hold (either case).
LETTERS = b"ACGUTNacgutn"
#: T -> U in either case: the sequence as RNAfold prints it (case kept).
TO_RNA = bytes.maketrans(b"Tt", b"Uu")


def record_name(names: Sequence[str] | None, index: int) -> str:
    """The name of record ``index``: its own, or ``sequence_{index + 1}`` for unnamed sequences."""
    return names[index] if names is not None else f"sequence_{index + 1}"


def check_letters(sequences: Sequence[str], names: Sequence[str] | None = None) -> tuple[bytes, np.ndarray]:
    """The batch's letters end to end (ASCII bytes) and the offsets of its records (int64, n + 1).

    Raises :class:`InputError` naming the first record that is empty or holds a letter other than
    A, C, G, U, T or N (either case), and the position of that letter."""
    pack = PackedSequences.of(sequences)  # (a letter beyond Latin-1 as '?': refused below at its place)
    raw, offsets = pack.letters, pack.offsets
    empty = np.flatnonzero(offsets[1:] == offsets[:-1])
    if empty.size:
        raise InputError(f"{record_name(names, int(empty[0]))}: empty sequence (nothing to fold)")
    if raw.translate(None, LETTERS):
        table = np.ones(256, bool)
        table[np.frombuffer(LETTERS, np.uint8)] = False
        position = int(np.flatnonzero(table[np.frombuffer(raw, np.uint8)])[0])
        record = int(np.searchsorted(offsets, position, side="right") - 1)
        where = position - int(offsets[record])
        letter = raw[position:position + 1].decode("latin-1") if pack is sequences else sequences[record][where]
        raise InputError(f"{record_name(names, record)}: letter {letter!r} at position {where + 1} "
                         "cannot be folded (the Turner model reads A, C, G, U/T and N, in either case)")
    return raw, offsets
