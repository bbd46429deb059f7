"""miRanda's letters, base classes and pair scores (miranda-model §2-3).

Letters map to classes A, C, G, U (T = U) and "masked" (N, X and the IUPAC ambiguity letters),
case-insensitively. Scores: either masked -1, Watson-Crick +5, wobble (G-U) +1, otherwise -3.
"""
from __future__ import annotations

import numpy as np

A, C, G, U, MASKED = 0, 1, 2, 3, 4
N_CLASSES = 5

#: Letters miRanda accepts in sequence files (either case).
ALLOWED_LETTERS = frozenset("ACGUTNRYKMSWBDHVX")

#: Class code of every byte: 0..4 for miRanda's letters (:data:`ALLOWED_LETTERS`, either case), -1 otherwise.
CLASS_OF = np.full(256, -1, dtype=np.int8)
for _letter, _cls in {"A": A, "C": C, "G": G, "U": U, "T": U}.items():
    CLASS_OF[ord(_letter)] = _cls
    CLASS_OF[ord(_letter.lower())] = _cls
for _letter in "NRYKMSWBDHVX":
    CLASS_OF[ord(_letter)] = MASKED
    CLASS_OF[ord(_letter.lower())] = MASKED


def _base_scores() -> np.ndarray:
    table = np.full((N_CLASSES, N_CLASSES), -3, dtype=np.int32)
    for x, y in ((A, U), (U, A), (G, C), (C, G)):
        table[x, y] = 5
    for x, y in ((G, U), (U, G)):
        table[x, y] = 1
    table[MASKED, :] = -1
    table[:, MASKED] = -1
    return table


#: s(x, y) for query class x and reference class y.
BASE_SCORES = _base_scores()

#: Alignment map character per class pair: '|' complement, ':' wobble, ' ' otherwise.
MAP_CHARS = np.full((N_CLASSES, N_CLASSES), ord(" "), dtype=np.uint8)
MAP_CHARS[BASE_SCORES == 5] = ord("|")
MAP_CHARS[BASE_SCORES == 1] = ord(":")


#: ``bytes.translate`` table of :data:`CLASS_OF` (a byte per letter, -1 as 0xFF): one pass at C speed
#: with no temporaries (NumPy's fancy indexing widens every letter to an 8-byte index first).
_CLASS_TABLE = CLASS_OF.view(np.uint8).tobytes()


def encode(sequence: bytes | str) -> np.ndarray:
    """Class codes (int8, 0..4) of a sequence; letters outside miRanda's alphabet become -1."""
    if isinstance(sequence, str):
        sequence = sequence.encode("ascii", errors="replace")
    return np.frombuffer(bytes(sequence).translate(_CLASS_TABLE), dtype=np.int8)
