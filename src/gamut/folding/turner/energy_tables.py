"""Integer free energies (dcal/mol) of the Turner model for the GPU kernels (``cuda/kernels/turner_mfe.cu``).

The energies are ViennaRNA's own for the given :class:`~gamut.folding.turner.options.TurnerOptions`
(``RNA.param`` of their model details: ViennaRNA rescales every table to the temperature), copied
into one flat int32 buffer whose offsets reach the kernels as ``-D`` options (``-DE_STACK=0`` ...).
The layout does not depend on the options, so one compiled module serves them all; only the
buffer's values change.

Two tables are derived here rather than read: the generic interior loops' size and asymmetry
energy by gaps (``GEN[n1][n2] = internal_loop[n1 + n2] + min(MAX_NINIO, |n1 - n2| * ninio)``,
31 x 31) and the hairpin energy by size up to the longest sequence of a call
(:func:`hairpin_sizes`: above 30 letters ``hairpin[30] + int(lxc * log(size / 30))``, computed by
Python's ``math.log``, the C library's ``log`` that ViennaRNA calls, so the truncation is the same).
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from gamut.folding.turner.options import TurnerOptions
from gamut.scanning.energy.tables import flat_tables, loop_keys, vienna_table

#: Longest hairpin, bulge and interior loop that ViennaRNA tabulates; interior loops and bulges of
#: more unpaired letters are not formed at all (ViennaRNA's MAXLOOP).
MAXLOOP = 30
#: Our "infinite" energy: far above any real one, and sums of a few stay inside int32.
INF = 100_000_000
#: Letter codes as ViennaRNA's: A, C, G, U (and T) in either case 1..4, N 0; 255: a letter we refuse.
CODES = np.full(256, 255, np.uint8)
for _code, _letters in enumerate(("Nn", "Aa", "Cc", "Gg", "UuTt")):
    for _letter in _letters:
        CODES[ord(_letter)] = _code
#: The pair type of (j, i) for the type of (i, j).
RTYPE = np.array([0, 2, 1, 4, 3, 6, 5, 7], np.int32)


class TurnerTables(NamedTuple):
    """``values``: the flat int32 buffer; ``defines``: its layout (``-DE_*`` offsets and the counts of
    special hairpins), the same for every option; ``lxc`` and ``hairpin``: for :func:`hairpin_sizes`."""

    values: np.ndarray
    defines: tuple[str, ...]
    lxc: float
    hairpin: np.ndarray


def _ints(value, shape: tuple[int, ...]) -> np.ndarray:
    """A ViennaRNA int table of ``shape``, its infinite entries at our :data:`INF`."""
    table = vienna_table(value, shape, np.int64)
    return np.where(table >= 10_000_000, INF, table)


def _special(keys: np.ndarray, energies) -> tuple[np.ndarray, np.ndarray]:
    """Keys and energies of one kind of special hairpin (one key no loop has when there are none)."""
    energy = np.array(list(energies)[: keys.size], np.int64)
    if keys.size == 0:  # keep the buffer's layout: one entry no sequence matches
        return np.array([-1]), np.array([0])
    return keys, energy


@functools.lru_cache(maxsize=16)
def turner_tables(options: TurnerOptions) -> TurnerTables:
    """The model's integer energies for ``options``, read from ViennaRNA once per options and process."""
    import RNA

    md = options.model_details()
    P = RNA.param(md)
    pair = np.array(md.pair, np.int64)[:5, :5]
    internal = _ints(P.internal_loop, (MAXLOOP + 1,))
    ninio = int(_ints(P.ninio, (5,))[2])
    n1, n2 = np.meshgrid(np.arange(MAXLOOP + 1), np.arange(MAXLOOP + 1), indexing="ij")
    size = np.minimum(n1 + n2, MAXLOOP)
    gen = np.where(n1 + n2 <= MAXLOOP, internal[size] + np.minimum(int(RNA.MAX_NINIO), np.abs(n1 - n2) * ninio), INF)
    gen = np.minimum(gen, INF)  # loops of 0 or 1 letters are not generic
    tetra_k, tetra_e = _special(loop_keys(P.Tetraloops, 6), P.Tetraloop_E)
    tri_k, tri_e = _special(loop_keys(P.Triloops, 5), P.Triloop_E)
    hex_k, hex_e = _special(loop_keys(P.Hexaloops, 8), P.Hexaloop_E)
    hairpin = _ints(P.hairpin, (MAXLOOP + 1,))
    parts = [
        ("STACK", _ints(P.stack, (8, 8))),
        ("HP", hairpin),
        ("BULGE", _ints(P.bulge, (MAXLOOP + 1,))),
        ("INT", internal),
        ("GEN", gen),
        ("MMH", _ints(P.mismatchH, (8, 5, 5))),
        ("MMI", _ints(P.mismatchI, (8, 5, 5))),
        ("MM1N", _ints(P.mismatch1nI, (8, 5, 5))),
        ("MM23", _ints(P.mismatch23I, (8, 5, 5))),
        ("MMM", _ints(P.mismatchM, (8, 5, 5))),
        ("MMEXT", _ints(P.mismatchExt, (8, 5, 5))),
        ("D5", _ints(P.dangle5, (8, 5))),
        ("D3", _ints(P.dangle3, (8, 5))),
        ("INT11", _ints(P.int11, (8, 8, 5, 5))),
        ("INT21", _ints(P.int21, (8, 8, 5, 5, 5))),
        ("INT22", _ints(P.int22, (8, 8, 5, 5, 5, 5))),
        ("MLINTERN", _ints(P.MLintern, (8,))),
        # TerminalAU, MLclosing, MLbase, ninio, MAX_NINIO
        ("SCALARS", np.array([P.TerminalAU, P.MLclosing, P.MLbase, ninio, int(RNA.MAX_NINIO)])),
        ("PAIR", pair),
        ("RTYPE", RTYPE),
        ("TETRA", tetra_k), ("TETRA_E", tetra_e),
        ("TRI", tri_k), ("TRI_E", tri_e),
        ("HEX", hex_k), ("HEX_E", hex_e),
    ]
    if max(np.abs(np.asarray(table, np.int64)).max(initial=0) for _, table in parts) > INF:
        raise ValueError("a ViennaRNA energy outside the range of the kernels' tables")
    values, offsets = flat_tables([(name, np.asarray(table, np.int64)) for name, table in parts], "E", np.int32)
    defines = [f"-DN_TETRA={tetra_k.size}", f"-DN_TRI={tri_k.size}", f"-DN_HEX={hex_k.size}", *offsets]
    hairpin.setflags(write=False)
    return TurnerTables(values, tuple(defines), float(P.lxc), hairpin.astype(np.int32))


def hairpin_sizes(tables: TurnerTables, longest: int) -> np.ndarray:
    """Hairpin energy by loop size 0 .. ``longest`` (int32): ViennaRNA's table up to 30 letters, its
    extrapolation ``hairpin[30] + int(lxc * log(size / 30))`` beyond."""
    out = np.empty(max(longest, MAXLOOP) + 1, np.int32)
    out[: MAXLOOP + 1] = tables.hairpin
    base = int(tables.hairpin[MAXLOOP])
    for size in range(MAXLOOP + 1, out.size):
        out[size] = base + int(tables.lxc * math.log(size / 30.0))
    return out

