"""The ViennaRNA energy engine: the reference of the compiled engines, and the engine that gives
structures and folds the ``vienna2004`` model (see :mod:`gamut.scanning.energy.cpu`).

ViennaRNA itself (``RNA.fold_compound``) with the rebuilt parameter set, hard constraints for the
X linker and soft constraints for the tetraloop case rules; chunks of strings run in a process pool.
"""
from __future__ import annotations

import math
import multiprocessing

import numpy as np

from gamut.scanning.energy.compiled_model import ALIAS, CODE, PAIR, compiled_tables
from gamut.scanning.energy.tables import (
    EnergyTables,
    tetraloop_energy_table,
    vienna_model_details,
    vienna_parameters,
)

VIENNA_LETTER = "NACGUGC"  # code -> letter ViennaRNA sees (X as G, K as C; pairing constrained)


def _vienna_compound(seq: str, model: str, md, params, tetra: dict[str, int],
                     tables: EnergyTables | None):
    """A ViennaRNA fold compound for ``seq`` with the letter rules as constraints."""
    import RNA

    codes = [int(CODE[b]) if b < 256 else 0 for b in map(ord, seq)]
    letters = "".join(VIENNA_LETTER[c] for c in codes)
    fc = RNA.fold_compound(letters, md, RNA.OPTION_MFE)
    fc.params_subst(params)
    xs = [k + 1 for k, c in enumerate(codes) if c == 5]
    ks = [k + 1 for k, c in enumerate(codes) if c == 6]
    if xs and ks:
        # X pairs only with K (and K only with X): forbid every other pair they could form.
        n = len(codes)
        partners = {5: set(ks), 6: set(xs)}
        for pos in xs + ks:
            allowed = partners[codes[pos - 1]]
            for other in range(1, n + 1):
                if other != pos and other not in allowed and codes[other - 1] in (1, 2, 3, 4):
                    fc.hc_add_bp(min(pos, other), max(pos, other),
                                 RNA.CONSTRAINT_CONTEXT_NONE | RNA.CONSTRAINT_CONTEXT_NO_REMOVE)
    elif xs or ks:
        mask = "".join("x" if c in (5, 6) else "." for c in codes)
        fc.hc_add_from_db(mask, RNA.CONSTRAINT_DB_DEFAULT)
    if model == "miranda":
        # The old library looks tetraloops up on the string as written: cancel ViennaRNA's
        # bonus (it upper-cases) where the written letters are not an entry of the table.
        for i in range(len(letters) - 5):
            word = letters[i:i + 6]
            if word in tetra and seq[i:i + 6] != word:
                tp = int(PAIR[codes[i], codes[i + 5]])
                if tp == 0:
                    continue
                regular = (int(tables.hairpin[4])
                           + int(tables.mismatch_h[tp, ALIAS[codes[i + 1]], ALIAS[codes[i + 4]]]))
                fc.sc_add_bp(i + 1, i + 6, (regular - tetra[word]) / 100.0)
    return fc


def _vienna_chunk(args: tuple[list[str], str, list[str] | None]) -> list[tuple[str, int]]:
    """Fold (or, given structures, evaluate) a chunk of sequences with ViennaRNA."""
    seqs, model, structures = args
    md = vienna_model_details(model)
    params = vienna_parameters(model)
    tetra = tetraloop_energy_table(model) if model == "miranda" else {}
    tables = compiled_tables()[0] if model == "miranda" else None
    out = []
    for k, seq in enumerate(seqs):
        if not seq:
            out.append(("", 0))
            continue
        fc = _vienna_compound(seq, model, md, params, tetra, tables)
        if structures is None:
            structure, energy = fc.mfe()
        else:
            structure = structures[k]
            energy = fc.eval_structure(structure)
        out.append((structure, int(round(energy * 100))))
    return out


def vienna_folds(seqs: list[str], model: str, threads: int,
                  structures: list[str] | None = None) -> tuple[np.ndarray, list[str]]:
    if not seqs:
        return np.zeros(0, np.int64), []
    chunk = max(1, min(256, math.ceil(len(seqs) / (4 * threads))))
    jobs = [(seqs[k:k + chunk], model, None if structures is None else structures[k:k + chunk])
            for k in range(0, len(seqs), chunk)]
    if threads <= 1 or len(jobs) == 1:
        results = [r for job in jobs for r in _vienna_chunk(job)]
    else:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(min(threads, len(jobs))) as pool:
            results = [r for part in pool.imap(_vienna_chunk, jobs) for r in part]
    energies = np.fromiter((e for _, e in results), dtype=np.int64, count=len(results))
    return energies, [s for s, _ in results]
