"""RNA letters for folding: validation and the small integer codes the engines work on.

Codes: A=0, C=1, G=2, U=3 (T is read as U); every other IUPAC letter (N, R, Y, ...) is 4 and
never pairs. Pairs scored by Nussinov's model: AU, UA, GC, CG, GU and UG.
"""
from __future__ import annotations

import numpy as np

from gamut.errors import InputError

#: Letters accepted in a sequence to fold (upper case; lower case is accepted too).
IUPAC = "ACGUTNRYKMSWBDHV"
#: Bit ``5*a + b`` is set when codes ``a`` and ``b`` pair (AU, UA, CG, GC, GU, UG).
BOND_MASK = sum(1 << (5 * a + b) for a, b in ((0, 3), (3, 0), (1, 2), (2, 1), (2, 3), (3, 2)))

_TABLE = np.full(256, 255, dtype=np.uint8)
for _letter in IUPAC:
    _TABLE[ord(_letter)] = _TABLE[ord(_letter.lower())] = 4
for _letter, _code in (("A", 0), ("C", 1), ("G", 2), ("U", 3), ("T", 3)):
    _TABLE[ord(_letter)] = _TABLE[ord(_letter.lower())] = _code


def encode(sequence: str, *, where: str = "sequence") -> np.ndarray:
    """Return the ``uint8`` codes of ``sequence``; raise :class:`InputError` naming ``where`` on a bad letter."""
    raw = np.frombuffer(sequence.encode("ascii", errors="replace"), dtype=np.uint8)
    codes = _TABLE[raw]
    bad = np.flatnonzero(codes == 255)
    if bad.size:
        pos = int(bad[0])
        raise InputError(
            f"{where}: letter '{sequence[pos]}' at position {pos + 1} is not a nucleotide "
            f"(expected A, C, G, U/T or an IUPAC code such as N)"
        )
    return codes
