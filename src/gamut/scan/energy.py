"""Duplex free energies exactly as miRanda 3.3a computes them (spec section 9).

miRanda folds ``miRNA + 'XXXXXXX' + target`` as one strand with its bundled old Vienna library
(Turner 1999, 30 C, dangles=1) and reports the minimum free energy. Two engines give identical
energies for the ``miranda`` model:

- ``compiled``: a Numba Zuker/dangles=1 minimum-free-energy kernel over ViennaRNA's own tables,
  batched and parallel over sequences (``prange``); energies only.
- ``vienna``: ViennaRNA itself (``RNA.fold_compound``) with the rebuilt parameter set, hard
  constraints for the X linker and soft constraints for tetraloop case rules; gives structures too.
  Runs in a process pool.

Letters as the old library sees them: case-insensitive for pairing, T = U; ``X`` pairs only with
``K`` (as G with C) and counts as G in mismatch/dangle terms, ``K`` counts as C there; every other
letter (N, IUPAC codes, the ``-`` placeholder) cannot pair and is an unknown base. The special
tetraloop bonus applies only where the six letters are upper-case and spelled with U, as written.

The ``vienna2004`` model is ViennaRNA's modern default (Turner 2004, 37 C, dangles=2) with the same
letter mapping, the tetraloop table applied to the upper-cased sequence; it uses the vienna engine.
"""
from __future__ import annotations

import functools
import math
import multiprocessing
import os
from typing import Sequence

import numpy as np
from numba import njit, prange

from gamut.errors import InputError, UsageError
from gamut.scan.energy_params import (
    INF,
    EnergyTables,
    check_model,
    energy_tables,
    tetraloop_energy_table,
    vienna_model_details,
    vienna_parameters,
)

ENGINES = ("auto", "compiled", "vienna")
TURN = 3       # minimum hairpin loop size
MAXLOOP = 30   # largest interior loop / bulge

# Letter codes: 0 unknown, 1 A, 2 C, 3 G, 4 U (and T), 5 X, 6 K; case-insensitive.
_CODE = np.zeros(256, dtype=np.int8)
for _letters, _code in (("Aa", 1), ("Cc", 2), ("Gg", 3), ("UuTt", 4), ("Xx", 5), ("Kk", 6)):
    for _ch in _letters:
        _CODE[ord(_ch)] = _code
_CODE.setflags(write=False)
_ALIAS = np.array([0, 1, 2, 3, 4, 3, 2], dtype=np.uint8)  # X counts as G, K as C in loop terms
# Pair types (old library): 1 CG, 2 GC, 3 GU, 4 UG, 5 AU, 6 UA; X-K behaves as G-C.
_PAIR = np.zeros((7, 7), dtype=np.uint8)
for (_a, _b), _t in {(2, 3): 1, (3, 2): 2, (3, 4): 3, (4, 3): 4, (1, 4): 5, (4, 1): 6,
                     (5, 6): 2, (6, 5): 1}.items():
    _PAIR[_a, _b] = _t
_PAIR.setflags(write=False)
_RTYPE = np.array([0, 2, 1, 4, 3, 6, 5, 7], dtype=np.uint8)
_RTYPE.setflags(write=False)
_VIENNA_LETTER = "NACGUGC"  # code -> letter ViennaRNA sees (X as G, K as C; pairing constrained)


# ----------------------------------------------------------------------------------------------
# Encoding
# ----------------------------------------------------------------------------------------------
def _as_strings(sequences: Sequence[str] | str) -> list[str]:
    if isinstance(sequences, str):
        raise UsageError("duplex_energies expects a sequence of fold strings, not one string")
    out = list(sequences)
    for k, s in enumerate(out):
        if not isinstance(s, str):
            raise InputError(f"fold string #{k + 1} is {type(s).__name__}, not text")
    return out


def _pack(seqs: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """All fold strings as one byte array (as written) plus start offsets (len(seqs) + 1)."""
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    raw = np.frombuffer("".join(seqs).encode("latin-1", errors="replace"), dtype=np.uint8)
    return raw, offsets


# ----------------------------------------------------------------------------------------------
# Compiled engine (Numba): the old library's dangles=1 recursions
# ----------------------------------------------------------------------------------------------
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


@njit(cache=True, nogil=True)
def _mfe_one(raw, start, n, pair, rtype, code_of, alias, stack, hairpin, bulge, lc, lc_row_min,
             mm_h, mm_i, d5, d3, int11, int21, int22, scalars, lxc, tl, tl_e,
             S, S1, tetra, pt, c, c_intr, c_aur, c_aut, cmin, rmin, seed, g1, g2, fml, fml_t, dml):
    """Minimum free energy (dcal/mol) of raw[start:start+n] under the old dangles=1 model.

    S .. dml are work buffers (vectors of m, matrices of m x m, m >= n + 2). Hot loops index
    with unsigned integers (no negative-index checks) over rows stored so that they run forward:
    ``c_intr[p, R - q]`` and ``c_aur[p, R - q]`` (R = m - 1), ``c_aut[q, p]``, ``fml_t[j, i]``.
    """
    if n < TURN + 2:
        return 0
    ml_base, ml_closing, ml_intern, au = scalars[2], scalars[3], scalars[4], scalars[5]
    lc_min = lc_row_min.min()
    hp = np.empty(n + 1, np.int64)  # hairpin initiation by size (extrapolated beyond 30)
    for size in range(n + 1):
        hp[size] = hairpin[size] if size <= 30 else hairpin[30] + int(lxc * math.log(size / 30.0))
    R = S.shape[0] - 1
    one = np.uint64(1)
    m = n + 2  # only this corner of the (possibly larger) buffers is used
    S[:m] = 0
    S1[:m] = 0
    for k in range(n):
        S[k + 1] = code_of[raw[start + k]]
        S1[k + 1] = alias[S[k + 1]]
    pt[:m, :m] = 0
    for i in range(1, n + 1):
        for j in range(i + TURN + 1, n + 1):
            pt[i, j] = pair[S[i], S[j]]
    # special tetraloops, matched on the letters as written
    tetra[:m] = INF
    for i in range(1, n - 4):
        if pt[i, i + 5] == 0:
            continue  # the six letters start and end with a closing pair
        for t in range(tl.shape[0]):
            hit = True
            for k in range(6):
                if raw[start + i - 1 + k] != tl[t, k]:
                    hit = False
                    break
            if hit:
                tetra[i] = tl_e[t]
                break
    c[:m, :m] = INF
    c_intr[:m, :] = INF  # c + inner mismatch of a generic interior loop (rows reversed)
    c_aur[:m, :] = INF   # c + terminal penalty, for bulges longer than 1 (rows reversed)
    c_aut[:m, :m] = INF   # the same, transposed
    cmin[:m, :m] = INF    # cmin[a, b] = min of c_int over pairs inside [a, b]
    rmin[:m, :m] = INF    # rmin[p, b] = min of c_int[p, q] over q <= b
    seed[:m, :m] = INF    # best stem (with its dangles) of a multiloop segment [i, j]
    g1[:m, :m] = INF      # g1[j, i]: exterior stem from i to j (no 5' dangle)
    g2[:m, :m] = INF      # g2[j, i]: the same with a dangle on i - 1
    fml[:m, :m] = INF
    fml_t[:m, :m] = INF
    dml[:m, :m] = INF
    U1 = np.uint64(1)
    U2 = np.uint64(2)
    U3 = np.uint64(3)
    uR = np.uint64(R)
    # Matrix indices are unsigned (i, j, p, q, k; ii, jj, pp are their signed values): no
    # negative-index handling, so the minimum loops vectorize.
    for ii in range(n - TURN - 1, 0, -1):
        i = np.uint64(ii)
        for jj in range(ii + TURN + 1, n + 1):
            j = np.uint64(jj)
            tp = pt[i, j]
            if tp:
                si = S1[i + U1]
                sj = S1[j - U1]
                au_o = au if tp > 2 else 0
                # hairpin
                size = jj - ii - 1
                e = hp[size]
                if size == 4 and tetra[i] < INF:
                    e = tetra[i]
                elif size == 3:
                    e += au_o
                else:
                    e += mm_h[tp, si, sj]
                # stack and 1-nt bulges
                t = pt[i + U1, j - U1]
                if t:
                    e = min(e, stack[tp, rtype[t]] + c[i + U1, j - U1])
                t = pt[i + U1, j - U2]
                if t:
                    e = min(e, bulge[1] + stack[tp, rtype[t]] + c[i + U1, j - U2])
                t = pt[i + U2, j - U1]
                if t:
                    e = min(e, bulge[1] + stack[tp, rtype[t]] + c[i + U2, j - U1])
                # 1x1, 1x2, 2x1, 2x2 interior loops
                t = pt[i + U2, j - U2]
                if t:
                    e = min(e, int11[tp, rtype[t], si, sj] + c[i + U2, j - U2])
                t = pt[i + U2, j - U3]
                if t:
                    e = min(e, int21[tp, rtype[t], si, S1[j - U2], sj] + c[i + U2, j - U3])
                t = pt[i + U3, j - U2]
                if t:
                    e = min(e, int21[rtype[t], tp, S1[j - U1], si, S1[i + U2]] + c[i + U3, j - U2])
                t = pt[i + U3, j - U3]
                if t:
                    e = min(e, int22[tp, rtype[t], si, S1[i + U2], S1[j - U2], sj]
                            + c[i + U3, j - U3])
                # bulges of 2..30 nucleotides (int32 minima: these loops vectorize)
                bb = np.int32(INF)
                up = i + U1
                base = uR - j + U1  # c_aur[p, base + u2] is pair (p, j - 1 - u2)
                umax = np.uint64(max(2, min(MAXLOOP, jj - ii - TURN - 3) + 1))
                for u in range(U2, umax):
                    v = np.int32(bulge[u] + c_aur[up, base + u])
                    bb = v if v < bb else bb
                uq = j - U1
                for u in range(U2, umax):
                    v = np.int32(bulge[u] + c_aut[uq, up + u])
                    bb = v if v < bb else bb
                e = min(e, bb + au_o)
                # generic interior loops; a row p is skipped when its lower bound cannot win
                mo = mm_i[tp, si, sj]
                if mo + lc_min + cmin[i + U2, j - U2] < e:
                    best = np.int32(min(e - mo, INF))
                    for pp in range(ii + 2, min(jj - 2 - TURN, ii + MAXLOOP + 1) + 1):
                        u1 = pp - ii - 1
                        u2max = min(MAXLOOP - u1, jj - pp - TURN - 2)
                        if u2max < 1:
                            break
                        p = np.uint64(pp)
                        if lc_row_min[u1] + rmin[p, j - U2] >= best:
                            continue
                        uu1 = np.uint64(u1)
                        for u2 in range(U1, np.uint64(u2max + 1)):
                            v = np.int32(lc[uu1, u2] + c_intr[p, base + u2])
                            best = v if v < best else best
                    e = min(e, best + mo)
                # multiloop closed by (i, j); inner neighbours may dangle
                tt = rtype[tp]
                e3 = d3[tt, si]
                e5 = d5[tt, sj]
                dec = dml[i + U1, j - U1]
                dec = min(dec, dml[i + U2, j - U1] + e3 + ml_base)
                dec = min(dec, dml[i + U1, j - U2] + e5 + ml_base)
                dec = min(dec, dml[i + U2, j - U2] + e5 + e3 + 2 * ml_base)
                e = min(e, dec + ml_closing + ml_intern + au_o, INF)
                c[i, j] = e
                c_aur[i, uR - j] = min(INF, e + au_o)
                c_aut[j, i] = min(INF, e + au_o)
                ci = min(INF, e + mm_i[tt, S1[j + U1], S1[i - U1]])
                c_intr[i, uR - j] = ci
                cmin[i, j] = min(ci, cmin[i + U1, j], cmin[i, j - U1])
                rmin[i, j] = min(ci, rmin[i, j - U1])
                # this pair as a multiloop stem of [i, j], [i-1, j], [i, j+1], [i-1, j+1]
                sm = e + ml_intern + au_o
                x5 = d5[tp, S1[i - U1]] + ml_base
                x3 = d3[tp, S1[j + U1]] + ml_base
                seed[i, j] = min(seed[i, j], sm)
                seed[i - U1, j] = min(seed[i - U1, j], sm + x5)
                seed[i, j + U1] = min(seed[i, j + U1], sm + x3)
                seed[i - U1, j + U1] = min(seed[i - U1, j + U1], sm + x5 + x3)
                # ... and as an exterior stem ending at j, or at j + 1 with a 3' dangle
                ex = e + au_o
                y3 = d3[tp, S1[j + U1]]
                g1[j, i] = min(g1[j, i], ex)
                g1[j + U1, i] = min(g1[j + U1, i], ex + y3)
                if ii > 1:
                    y5 = d5[tp, S1[i - U1]]
                    g2[j, i] = min(g2[j, i], ex + y5)
                    g2[j + U1, i] = min(g2[j + U1, i], ex + y5 + y3)
            else:
                cmin[i, j] = min(cmin[i + U1, j], cmin[i, j - U1])
                rmin[i, j] = rmin[i, j - U1]
            # multiloop segments [i, j]: a stem (seeded above), unpaired ends, or two parts
            f = min(seed[i, j], fml[i + U1, j] + ml_base, fml[i, j - U1] + ml_base)
            dm = np.int32(INF)
            for k in range(np.uint64(ii + 1 + TURN), np.uint64(jj - 1 - TURN)):
                v = np.int32(fml[i, k] + fml_t[j, k + U1])
                dm = v if v < dm else dm
            dml[i, j] = min(dm, INF)
            f = min(f, dm, INF)
            fml[i, j] = f
            fml_t[j, i] = f
    # exterior loop: f5[j] = min(f5[j-1], f5[i-1] + g1[j, i], f5[i-2] + g2[j, i])
    f5 = np.zeros(n + 1, np.int32)
    for j in range(TURN + 2, n + 1):
        best = f5[j - 1]
        uj = np.uint64(j)
        for i in range(one, np.uint64(j - TURN)):
            v = np.int32(f5[i - one] + g1[uj, i])
            best = v if v < best else best
        for i in range(np.uint64(2), np.uint64(j - TURN)):
            v = np.int32(f5[i - np.uint64(2)] + g2[uj, i])
            best = v if v < best else best
        f5[j] = best
    return f5[n]


@njit(cache=True, parallel=True)
def _mfe_batch(raw, offsets, order, blocks, pair, rtype, code_of, alias, stack, hairpin, bulge,
               lc, lc_row_min, mm_h, mm_i, d5, d3, int11, int21, int22, scalars, lxc, tl, tl_e):
    """Energies of all fold strings. Strings are taken in ``order`` (by length) in ``blocks``
    chunks that run in parallel; a chunk reuses one set of work buffers sized for its longest."""
    count = offsets.shape[0] - 1
    out = np.empty(count, np.int64)
    for b in prange(blocks):
        lo = b * count // blocks
        hi = (b + 1) * count // blocks
        size = 1
        for k in range(lo, hi):
            size = max(size, offsets[order[k] + 1] - offsets[order[k]])
        m = size + 2
        S = np.empty(m, np.int64)
        S1 = np.empty(m, np.uint8)
        tetra = np.empty(m, np.int64)
        pt = np.empty((m, m), np.uint8)
        c = np.empty((m, m), np.int32)
        c_intr = np.empty((m, m), np.int32)
        c_aur = np.empty((m, m), np.int32)
        c_aut = np.empty((m, m), np.int32)
        cmin = np.empty((m, m), np.int32)
        rmin = np.empty((m, m), np.int32)
        seed = np.empty((m, m), np.int32)
        g1 = np.empty((m, m), np.int32)
        g2 = np.empty((m, m), np.int32)
        fml = np.empty((m, m), np.int32)
        fml_t = np.empty((m, m), np.int32)
        dml = np.empty((m, m), np.int32)
        for k in range(lo, hi):
            x = order[k]
            out[x] = _mfe_one(raw, offsets[x], offsets[x + 1] - offsets[x], pair, rtype, code_of,
                              alias, stack, hairpin, bulge, lc, lc_row_min, mm_h, mm_i, d5, d3,
                              int11, int21, int22, scalars, lxc, tl, tl_e,
                              S, S1, tetra, pt, c, c_intr, c_aur, c_aut, cmin, rmin, seed, g1,
                              g2, fml, fml_t, dml)
    return out


@functools.lru_cache(maxsize=1)
def _compiled_tables() -> tuple[EnergyTables, np.ndarray]:
    tables = energy_tables("miranda")
    lc = generic_loop_costs(tables)
    for arr in (*tables, lc):
        if isinstance(arr, np.ndarray):
            arr.setflags(write=False)
    return tables, lc


def _compiled_energies(seqs: list[str], threads: int) -> np.ndarray:
    import numba

    t, lc = _compiled_tables()
    raw, offsets = _pack(seqs)
    order = np.argsort(np.diff(offsets), kind="stable")
    workers = max(1, min(threads, numba.config.NUMBA_NUM_THREADS))
    blocks = max(1, min(len(seqs), 16 * workers))
    previous = numba.get_num_threads()
    numba.set_num_threads(workers)
    try:
        return _mfe_batch(raw, offsets, order, blocks, _PAIR, _RTYPE, _CODE, _ALIAS, t.stack,
                          t.hairpin, t.bulge, lc, lc.min(axis=1).astype(np.int64), t.mismatch_h,
                          t.mismatch_i, t.dangle5, t.dangle3, t.int11, t.int21, t.int22,
                          t.scalars, t.lxc, t.tetraloops, t.tetraloop_e)
    finally:
        numba.set_num_threads(previous)


# ----------------------------------------------------------------------------------------------
# ViennaRNA engine (reference; also gives structures)
# ----------------------------------------------------------------------------------------------
def _vienna_compound(seq: str, model: str, md, params, tetra: dict[str, int],
                     tables: EnergyTables | None):
    """A ViennaRNA fold compound for ``seq`` with the letter rules as constraints."""
    import RNA

    codes = [int(_CODE[b]) if b < 256 else 0 for b in map(ord, seq)]
    letters = "".join(_VIENNA_LETTER[c] for c in codes)
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
                tp = int(_PAIR[codes[i], codes[i + 5]])
                if tp == 0:
                    continue
                regular = (int(tables.hairpin[4])
                           + int(tables.mismatch_h[tp, _ALIAS[codes[i + 1]], _ALIAS[codes[i + 4]]]))
                fc.sc_add_bp(i + 1, i + 6, (regular - tetra[word]) / 100.0)
    return fc


def _vienna_chunk(args: tuple[list[str], str, list[str] | None]) -> list[tuple[str, int]]:
    """Fold (or, given structures, evaluate) a chunk of sequences with ViennaRNA."""
    seqs, model, structures = args
    md = vienna_model_details(model)
    params = vienna_parameters(model)
    tetra = tetraloop_energy_table(model) if model == "miranda" else {}
    tables = _compiled_tables()[0] if model == "miranda" else None
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


def _vienna_folds(seqs: list[str], model: str, threads: int,
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


# ----------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------
def _threads(threads: int | None) -> int:
    if threads is None:
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                   else (os.cpu_count() or 1))
    if threads < 1:
        raise UsageError(f"threads must be at least 1, got {threads}")
    return int(threads)


def _engine(model: str, engine: str) -> str:
    check_model(model)
    if engine not in ENGINES:
        raise UsageError(f"unknown energy engine {engine!r} (choose from {', '.join(ENGINES)})")
    if engine == "auto":
        return "compiled" if model == "miranda" else "vienna"
    if engine == "compiled" and model != "miranda":
        raise UsageError("the compiled energy engine implements the miranda model only, "
                         f"not {model!r}")
    return engine


def duplex_energies_dcal(sequences: Sequence[str], *, model: str = "miranda",
                         threads: int | None = None, engine: str = "auto") -> np.ndarray:
    """Minimum free energies in integer units of 0.01 kcal/mol (int64), in input order."""
    seqs = _as_strings(sequences)
    nthreads = _threads(threads)
    if _engine(model, engine) == "compiled":
        return _compiled_energies(seqs, nthreads)
    return _vienna_folds(seqs, model, nthreads)[0]


def duplex_energies(sequences: Sequence[str], *, model: str = "miranda",
                    threads: int | None = None, engine: str = "auto") -> np.ndarray:
    """Free energies (kcal/mol, float64 values k/100) of fold strings as miRanda builds them.

    ``model``: ``"miranda"`` (old Vienna library, Turner 1999 at 30 C, dangles=1; miRanda 3.3a's
    numbers) or ``"vienna2004"`` (ViennaRNA defaults). ``threads``: worker count (default: all
    cores). ``engine``: ``"auto"``, ``"compiled"`` (miranda only) or ``"vienna"``.
    """
    return duplex_energies_dcal(sequences, model=model, threads=threads, engine=engine) / 100.0


def duplex_folds(sequences: Sequence[str], *, model: str = "miranda",
                 threads: int | None = None) -> tuple[np.ndarray, list[str]]:
    """Energies (kcal/mol) and MFE structures (dot-bracket) through ViennaRNA, in input order."""
    seqs = _as_strings(sequences)
    check_model(model)
    energies, structures = _vienna_folds(seqs, model, _threads(threads))
    return energies / 100.0, structures


def structure_energies(sequences: Sequence[str], structures: Sequence[str], *,
                       model: str = "miranda", threads: int | None = None) -> np.ndarray:
    """Free energies (kcal/mol) of given dot-bracket structures under a model (through ViennaRNA);
    for instance to tell whether two structures tie for the minimum."""
    seqs = _as_strings(sequences)
    structs = _as_strings(structures)
    if len(structs) != len(seqs) or any(len(a) != len(b) for a, b in zip(seqs, structs)):
        raise InputError("each structure must have the length of its sequence")
    check_model(model)
    return _vienna_folds(seqs, model, _threads(threads), structs)[0] / 100.0
