"""Boltzmann factors of the Turner 2004 model for the GPU kernels (``cuda/kernels/plfold.cu``): the
accessibility model's (:func:`plfold_tables`) and the global partition function's for any
:class:`~gamut.folding.turner.options.TurnerOptions` (:func:`turner_boltzmann_tables`).

The factors are ViennaRNA's own (``RNA.exp_param``: for accessibility Turner 2004 at 37 C, dangles=2,
the model of the CPU engine), copied once into two flat buffers, doubles and ints, whose offsets
reach the kernels as ``-D`` options. Taking ViennaRNA's tables rather than exponentiating the energies
ourselves keeps its rounding and its smoothing of dangle and mismatch terms, so both engines weigh
every loop alike.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from gamut.scanning.energy.tables import flat_tables, loop_keys, vienna_table

if TYPE_CHECKING:
    from gamut.folding.turner.options import TurnerOptions

#: Letter codes as ViennaRNA's of the model's letters (:func:`gamut.access.model.rna_letters`): A, C,
#: G and U (or T) in either case are 1..4, anything else is 0 (N: pairs with nothing).
CODES = np.zeros(256, np.int8)
for _code, _letters in enumerate(("Aa", "Cc", "Gg", "UuTt"), start=1):
    for _letter in _letters:
        CODES[ord(_letter)] = _code
#: The pair type of (j, i) for the type of (i, j).
RTYPE = np.array([0, 2, 1, 4, 3, 6, 5, 7], np.int32)
#: Longest hairpin, bulge and interior loop ViennaRNA tabulates (MAXLOOP).
MAXLOOP = 30


class PlfoldTables(NamedTuple):
    """Flat tables and their layout (``defines``: ``-DT_*``/``-DI_*`` offsets and counts); ``gen``:
    the generic interior loops' size and asymmetry factors by gaps (31 x 31), which a batch scales;
    ``kt``: RT of the tables' temperature in kcal/mol."""

    doubles: np.ndarray
    ints: np.ndarray
    defines: tuple[str, ...]
    gen: np.ndarray
    kt: float


def _doubles(value, shape: tuple[int, ...]) -> np.ndarray:
    """A copy of a ViennaRNA double table of ``shape``."""
    return vienna_table(value, shape, np.float64)


@functools.lru_cache(maxsize=1)
def plfold_tables() -> PlfoldTables:
    """The accessibility model's Boltzmann factors, read from ViennaRNA once per process."""
    from gamut.scanning.energy.tables import vienna_exp_parameters

    return _tables(vienna_exp_parameters("vienna2004"))


@functools.lru_cache(maxsize=8)
def turner_boltzmann_tables(options: TurnerOptions) -> PlfoldTables:
    """The Boltzmann factors of ViennaRNA's model for ``options`` (``RNA.exp_param`` of
    :meth:`~gamut.folding.turner.options.TurnerOptions.model_details`: the temperature's factors;
    dangles, noLP and the span are the kernels' business), once per process and options."""
    import RNA

    return _tables(RNA.exp_param(options.model_details()))


def _tables(E) -> PlfoldTables:
    """The flat tables of a ViennaRNA ``exp_param`` object ``E``."""
    pair = np.array(E.model_details.pair, np.int64)[:5, :5]
    tetra, tri, hexa = loop_keys(E.Tetraloops, 6), loop_keys(E.Triloops, 5), loop_keys(E.Hexaloops, 8)
    doubles = [
        ("STACK", _doubles(E.expstack, (8, 8))),
        ("HP", _doubles(E.exphairpin, (MAXLOOP + 1,))),
        ("BULGE", _doubles(E.expbulge, (MAXLOOP + 1,))),
        ("INT", _doubles(E.expinternal, (MAXLOOP + 1,))),
        ("NINIO", _doubles(E.expninio, (5, MAXLOOP + 1))[2]),
        ("MMH", _doubles(E.expmismatchH, (8, 5, 5))),
        ("MMI", _doubles(E.expmismatchI, (8, 5, 5))),
        ("MM1N", _doubles(E.expmismatch1nI, (8, 5, 5))),
        ("MM23", _doubles(E.expmismatch23I, (8, 5, 5))),
        ("MMM", _doubles(E.expmismatchM, (8, 5, 5))),
        ("MMEXT", _doubles(E.expmismatchExt, (8, 5, 5))),
        ("D5", _doubles(E.expdangle5, (8, 5))),
        ("D3", _doubles(E.expdangle3, (8, 5))),
        ("INT11", _doubles(E.expint11, (8, 8, 5, 5))),
        ("INT21", _doubles(E.expint21, (8, 8, 5, 5, 5))),
        ("INT22", _doubles(E.expint22, (8, 8, 5, 5, 5, 5))),
        ("MLINTERN", _doubles(E.expMLintern, (8,))),
        ("SCALARS", np.array([E.expTermAU, E.expMLclosing, E.expMLbase, E.lxc, E.kT])),
        ("TETRA_E", _doubles(E.exptetra, (max(1, tetra.size),))),
        ("TRI_E", _doubles(E.exptri, (max(1, tri.size),))),
        ("HEX_E", _doubles(E.exphex, (max(1, hexa.size),))),
    ]
    # Generic interior loops of n1 x n2 unpaired letters: the size and asymmetry factors, which the
    # kernels multiply by the two mismatches (precomputed per pair); each batch passes them scaled.
    internal, ninio = dict(doubles)["INT"], dict(doubles)["NINIO"]
    n1, n2 = np.meshgrid(np.arange(MAXLOOP + 1), np.arange(MAXLOOP + 1), indexing="ij")
    size = np.minimum(n1 + n2, MAXLOOP)
    gen = np.where(n1 + n2 <= MAXLOOP, internal[size] * ninio[np.abs(n1 - n2)], 0.0)
    ints = [("PAIR", pair), ("RTYPE", RTYPE), ("TETRA", tetra), ("TRI", tri), ("HEX", hexa)]
    defines = [f"-DN_TETRA={tetra.size}", f"-DN_TRI={tri.size}", f"-DN_HEX={hexa.size}"]
    doubles_buf, double_defines = flat_tables(doubles, "T", np.float64)
    ints_buf, int_defines = flat_tables(ints, "I", np.int32)
    defines += double_defines + int_defines
    gen.setflags(write=False)
    return PlfoldTables(doubles_buf, ints_buf, tuple(defines), gen, float(E.kT) / 1000.0)


def encode(sequence: str) -> np.ndarray:
    """int8 codes of a sequence as the model reads it (the codes of :func:`gamut.access.model.rna_letters`)."""
    return CODES[np.frombuffer(sequence.encode("ascii", "replace"), np.uint8)]
