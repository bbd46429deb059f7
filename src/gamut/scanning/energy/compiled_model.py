"""The ``miranda`` energy model as the compiled engines take it (the Numba engine of
:mod:`gamut.scanning.energy.cpu` and the CUDA engine of :mod:`gamut.scanning.energy.gpu`): letter
codes and pair types of the old Vienna library, fold strings packed as bytes, and the parameter
tables with the loop costs derived from them (miranda-model §9).

Letters as the old library sees them: case-insensitive for pairing, T = U; ``X`` pairs only with
``K`` (as G with C) and counts as G in mismatch/dangle terms, ``K`` counts as C there; every other
letter (N, IUPAC codes, the ``-`` placeholder) cannot pair and is an unknown base.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

from gamut.scanning.energy.tables import INF, EnergyTables, energy_tables

TURN = 3       # minimum hairpin loop size
MAXLOOP = 30   # largest interior loop / bulge

# Letter codes: 0 unknown, 1 A, 2 C, 3 G, 4 U (and T), 5 X, 6 K; case-insensitive.
CODE = np.zeros(256, dtype=np.int8)
for _letters, _code in (("Aa", 1), ("Cc", 2), ("Gg", 3), ("UuTt", 4), ("Xx", 5), ("Kk", 6)):
    for _ch in _letters:
        CODE[ord(_ch)] = _code
CODE.setflags(write=False)
ALIAS = np.array([0, 1, 2, 3, 4, 3, 2], dtype=np.uint8)  # X counts as G, K as C in loop terms
# Pair types (old library): 1 CG, 2 GC, 3 GU, 4 UG, 5 AU, 6 UA; X-K behaves as G-C.
PAIR = np.zeros((7, 7), dtype=np.uint8)
for (_a, _b), _t in {(2, 3): 1, (3, 2): 2, (3, 4): 3, (4, 3): 4, (1, 4): 5, (4, 1): 6,
                     (5, 6): 2, (6, 5): 1}.items():
    PAIR[_a, _b] = _t
PAIR.setflags(write=False)
RTYPE = np.array([0, 2, 1, 4, 3, 6, 5, 7], dtype=np.uint8)
RTYPE.setflags(write=False)


def pack_strings(seqs: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """All fold strings as one byte array (as written) plus start offsets (len(seqs) + 1)."""
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    raw = np.frombuffer("".join(seqs).encode("latin-1", errors="replace"), dtype=np.uint8)
    return raw, offsets


def generic_loop_costs(tables: EnergyTables) -> np.ndarray:
    """lc[u1, u2]: initiation + Ninio of a generic u1 x u2 interior loop; INF for stacks, bulges
    and the 1x1, 1x2, 2x1, 2x2 loops (those have their own tables) and beyond MAXLOOP."""
    ninio, max_ninio = int(tables.scalars[0]), int(tables.scalars[1])
    lc = np.full((MAXLOOP + 1, MAXLOOP + 1), INF, dtype=np.int32)
    for u1 in range(1, MAXLOOP):
        for u2 in range(1, MAXLOOP + 1 - u1):
            if max(u1, u2) > 2:
                lc[u1, u2] = int(tables.interior[u1 + u2]) + min(max_ninio, abs(u1 - u2) * ninio)
    return lc


def tetraloop_keys(loops: np.ndarray) -> np.ndarray:
    """Each six-letter special tetraloop (closing pair + loop) as one integer: byte k of the
    entry in bits 8k..8k+7."""
    keys = (loops.astype(np.int64) << (8 * np.arange(6, dtype=np.int64))).sum(axis=1)
    if len(set(keys.tolist())) != len(keys):
        raise ValueError("duplicate special tetraloop entries")
    return keys


@njit(cache=True, nogil=True)
def hairpin_energies(hairpin, lxc, nmax):
    """Hairpin initiation by loop size 0..nmax (log-extrapolated beyond 30 nt)."""
    hp = np.empty(nmax + 1, np.int64)
    for size in range(nmax + 1):
        hp[size] = hairpin[size] if size <= 30 else hairpin[30] + int(lxc * math.log(size / 30.0))
    return hp



@functools.lru_cache(maxsize=1)
def compiled_tables() -> tuple[EnergyTables, np.ndarray]:
    """The miranda tables and their generic interior-loop costs (read-only, built once)."""
    tables = energy_tables("miranda")
    lc = generic_loop_costs(tables)
    for arr in (*tables, lc):
        if isinstance(arr, np.ndarray):
            arr.setflags(write=False)
    return tables, lc
