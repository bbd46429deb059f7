"""Duplex free energies exactly as miRanda 3.3a computes them (miranda-model §9).

miRanda folds ``miRNA + 'XXXXXXX' + target`` as one strand with its bundled old Vienna library
(Turner 1999, 30 C, dangles=1) and reports the minimum free energy. Three engines give identical
energies for the ``miranda`` model:

- ``compiled``: a Numba Zuker/dangles=1 minimum-free-energy kernel over ViennaRNA's own tables
  (this module), batched and parallel over sequences (``prange``); energies only. With
  ``device="cuda"`` the same model runs on the GPU (:mod:`gamut.scanning.energy.gpu`).
- ``vienna``: ViennaRNA itself (:mod:`gamut.scanning.energy.vienna`); gives structures too.

Letters are read as the old library reads them (:mod:`gamut.scanning.energy.compiled_model`).
The special tetraloop bonus applies only where the six letters are upper-case and spelled with U,
as written.

The ``vienna2004`` model is ViennaRNA's modern default (Turner 2004, 37 C, dangles=2) with the same
letter mapping, the tetraloop table applied to the upper-cased sequence; it uses the vienna engine.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from numba import njit, prange

from gamut.errors import InputError, UsageError
from gamut.io.memory import available_memory
from gamut.io.threads import usable_cores
from gamut.io.textcols import distinct_strings, take_strings
from gamut.scanning.energy.compiled_model import (
    ALIAS,
    CODE,
    MAXLOOP,
    PAIR,
    RTYPE,
    TURN,
    compiled_tables,
    hairpin_energies,
    pack_strings,
    tetraloop_keys,
)
from gamut.scanning.energy.tables import INF, check_model
from gamut.scanning.energy.vienna import vienna_folds
from gamut.timeline import span

ENGINES = ("auto", "compiled", "vienna")




def _as_strings(sequences: Sequence[str] | str) -> list[str]:
    if isinstance(sequences, str):
        raise UsageError("duplex_energies expects a sequence of fold strings, not one string")
    out = list(sequences)
    for k, s in enumerate(out):
        if not isinstance(s, str):
            raise InputError(f"fold string #{k + 1} is {type(s).__name__}, not text")
    return out


# ----------------------------------------------------------------------------------------------
# Compiled engine (Numba): the old library's dangles=1 recursions
# ----------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _encode(raw, start, n, code_of, alias, pair, S, S1, pt, partners, npart):
    """Letter codes S[1..n] (S1: as loop terms see them; 0 at both ends), pair types pt[i, j]
    (0 unless 1 <= i, i + 4 <= j <= n) and the partners j >= i + 4 of each i, ascending, in
    partners[i, :npart[i]]."""
    m = n + 2
    S[0] = 0
    S1[0] = 0
    S[m - 1] = 0
    S1[m - 1] = 0
    for k in range(n):
        S[k + 1] = code_of[raw[start + k]]
        S1[k + 1] = alias[S[k + 1]]
    um = np.uint64(m)
    for i in range(np.uint64(0), um):
        for j in range(np.uint64(0), um):
            pt[i, j] = 0
    for i in range(np.uint64(1), np.uint64(n + 1)):
        prow = pair[S[i]]
        cnt = np.uint64(0)
        for j in range(i + np.uint64(TURN + 1), np.uint64(n + 1)):
            t = prow[S[j]]
            pt[i, j] = t
            partners[i, cnt] = j  # kept only where it pairs (branch-free)
            cnt += np.uint64(t != 0)
        npart[i] = cnt


@njit(cache=True, nogil=True)
def _tetraloops(raw, start, n, pt, tl_key, tl_e, tetra):
    """tetra[i]: total energy of the special hairpin closed by (i, i + 5), INF if none; looked
    up on the six letters as written."""
    for i in range(n + 2):
        tetra[i] = INF
    for i in range(1, n - 4):
        if pt[i, i + 5] == 0:
            continue  # the six letters start and end with a closing pair
        key = np.int64(0)
        for k in range(6):
            key |= np.int64(raw[start + i - 1 + k]) << (8 * k)
        for t in range(tl_key.shape[0]):
            if tl_key[t] == key:
                tetra[i] = tl_e[t]


@njit(cache=True, nogil=True)
def _reset(n, c, seed, cmin, rmin_t, fml, dml, f3):
    """Reset the cells that are read before the row loop of ``_mfe_one`` writes them: rows
    > n - 4 of c, the first seed row, spans 0..3 of cmin, rmin_t, fml and dml (all their longer
    spans are written before being read), and f3."""
    um = np.uint64(n + 2)
    for p in range(np.uint64(n - TURN), um):
        for q in range(np.uint64(0), um):
            c[p, q] = INF
    top = np.uint64(n - TURN - 1)
    for q in range(np.uint64(0), um):
        seed[top, q] = INF
    for p in range(np.uint64(0), um):
        for q in range(p, min(p + np.uint64(TURN + 1), um)):
            cmin[p, q] = INF
            fml[p, q] = INF
            dml[p, q] = INF
            rmin_t[q, p] = INF
        f3[p] = 0


@njit(cache=True, nogil=True)
def _mfe_one(raw, start, n, pair, rtype, code_of, alias, stack, bulge, lc, lc_row_min,
             mm_h, mm_i, d5, d3, int11, int21, int22, scalars, hp, tl_key, tl_e,
             S, S1, tetra, pt, partners, npart, lbuf, f3,
             c, c_intr, c_aur, c_aut, cmin, rmin_t, seed, fml, fml_t, dml):
    """Minimum free energy (dcal/mol) of raw[start:start+n] under the old dangles=1 model.

    ``hp``: hairpin initiation by size (``hairpin_energies``). S .. dml are work buffers
    (vectors of at least n + 2, matrices of at least (n + 2) x (n + 2)); they need no clearing.

    Rows i = n - 4 .. 1, each in two passes: first every pair (i, j) from the partner list
    (c[i, j] and its derived forms), then every segment [i, j] (minima and multiloop parts).
    Matrices hold INF where there is no pair, so the small loops are branch-free. Hot loops
    index with unsigned integers (no negative-index checks; ii, jj are the signed values) over
    rows stored so that they run forward: ``c_intr[p, R - q]`` and ``c_aur[p, R - q]``
    (R = row length - 1), ``c_aut[q, p]``, ``rmin_t[q, p]``, ``fml_t[j, i]``. The two passes
    are kept in this one function: a helper call per pair or per row is not inlined and costs
    a call and its argument passing in the innermost work.
    """
    if n < TURN + 2:
        return 0
    ml_base, ml_closing, ml_intern, au = scalars[2], scalars[3], scalars[4], scalars[5]
    lc_min = lc_row_min.min()
    m = n + 2  # only this corner of the (possibly larger) buffers is used
    _encode(raw, start, n, code_of, alias, pair, S, S1, pt, partners, npart)
    _tetraloops(raw, start, n, pt, tl_key, tl_e, tetra)
    _reset(n, c, seed, cmin, rmin_t, fml, dml, f3)
    U1 = np.uint64(1)
    U2 = np.uint64(2)
    U3 = np.uint64(3)
    uR = np.uint64(c_intr.shape[1] - 1)
    carry = np.int64(INF)  # best exterior start at i - 1 with a 5' dangle (from row i)
    for ii in range(n - TURN - 1, 0, -1):
        i = np.uint64(ii)
        # row i (and seed row i - 1, which this row's stems reach) starts as "no pair"
        c[i, :m] = INF
        c_intr[i, :] = INF
        c_aur[i, :] = INF
        for q in range(ii + TURN + 1, m):
            c_aut[q, ii] = INF
        seed[i - U1, :m] = INF
        here = np.int64(INF)
        below = np.int64(INF)
        # ---- pass 1: the pairs (i, j)
        for kk in range(npart[ii]):
            jj = partners[ii, kk]
            j = np.uint64(jj)
            tp = pt[i, j]
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
            # stack, 1-nt bulges, 1x1, 1x2, 2x1, 2x2 loops: branch-free, exact because c is INF
            # (>= 10^7, far above any real energy) wherever the inner pair does not exist
            b1 = bulge[1]
            e = min(e, stack[tp, rtype[pt[i + U1, j - U1]]] + c[i + U1, j - U1])
            e = min(e, b1 + stack[tp, rtype[pt[i + U1, j - U2]]] + c[i + U1, j - U2])
            e = min(e, b1 + stack[tp, rtype[pt[i + U2, j - U1]]] + c[i + U2, j - U1])
            e = min(e, int11[tp, rtype[pt[i + U2, j - U2]], si, sj] + c[i + U2, j - U2])
            e = min(e, int21[tp, rtype[pt[i + U2, j - U3]], si, S1[j - U2], sj]
                    + c[i + U2, j - U3])
            e = min(e, int21[rtype[pt[i + U3, j - U2]], tp, S1[j - U1], si, S1[i + U2]]
                    + c[i + U3, j - U2])
            e = min(e, int22[tp, rtype[pt[i + U3, j - U3]], si, S1[i + U2], S1[j - U2], sj]
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
            # generic interior loops. Exact pruning: a loop through row p = i + 1 + u1 costs at
            # least lbuf[u1] = min_u2 lc[u1, u2] + min_q c_intr[p, q] (q <= j - 2), and all of
            # them at least lc_min + cmin[i + 2, j - 2]; a bound >= the best so far cannot win.
            mo = mm_i[tp, si, sj]
            if mo + lc_min + cmin[i + U2, j - U2] < e:
                best = np.int32(min(e - mo, INF))
                rows = np.uint64(min(jj - TURN - 3, ii + MAXLOOP) - ii - 1)
                pb = i + U1
                lb = np.int32(INF)
                for u in range(U1, rows + U1):  # all row bounds in one vectorized pass
                    v = np.int32(lc_row_min[u] + rmin_t[j - U2, pb + u])
                    lbuf[u] = v
                    lb = v if v < lb else lb
                if lb < best:
                    for u1 in range(U1, rows + U1):
                        if lbuf[u1] < best:
                            p = pb + u1
                            u2end = np.uint64(min(MAXLOOP - np.int64(u1),
                                                  jj - np.int64(p) - TURN - 2) + 1)
                            for u2 in range(U1, u2end):
                                v = np.int32(lc[u1, u2] + c_intr[p, base + u2])
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
            c_intr[i, uR - j] = min(INF, e + mm_i[tt, S1[j + U1], S1[i - U1]])
            # this pair as a multiloop stem of [i, j], [i-1, j], [i, j+1], [i-1, j+1]
            sm = e + ml_intern + au_o
            x5 = d5[tp, S1[i - U1]] + ml_base
            x3 = d3[tp, S1[j + U1]] + ml_base
            seed[i, j] = min(seed[i, j], sm)
            seed[i - U1, j] = min(seed[i - U1, j], sm + x5)
            seed[i, j + U1] = min(seed[i, j + U1], sm + x3)
            seed[i - U1, j + U1] = min(seed[i - U1, j + U1], sm + x5 + x3)
            # ... and as the first exterior stem of [i, n] (or of [i - 1, n] with a 5' dangle):
            # f3 runs from the 3' end, the same exterior structures as the old library's f5
            rest = f3[j + U1]
            if jj < n:
                rest = min(rest, d3[tp, S1[j + U1]] + f3[j + U2])
            ext = e + au_o + rest
            here = min(here, ext)
            if ii > 1:
                below = min(below, d5[tp, S1[i - U1]] + ext)
        f3[i] = min(f3[i + U1], here, carry)
        carry = below
        # ---- pass 2: the segments [i, j]
        for jj in range(ii + TURN + 1, n + 1):
            j = np.uint64(jj)
            ci = c_intr[i, uR - j]
            cmin[i, j] = min(ci, cmin[i + U1, j], cmin[i, j - U1])
            rmin_t[j, i] = min(ci, rmin_t[j - U1, i])
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
    return f3[1]


@njit(cache=True, nogil=True, parallel=True)
def _mfe_batch(raw, offsets, order, blocks, pair, rtype, code_of, alias, stack, hairpin, bulge,
               lc, lc_row_min, mm_h, mm_i, d5, d3, int11, int21, int22, scalars, lxc, tl_key,
               tl_e):
    """Energies of all fold strings. Strings are taken in ``order`` (by length) in ``blocks``
    chunks that run in parallel; a chunk allocates one set of work buffers, sized for its
    longest string, and reuses it for all its strings."""
    count = offsets.shape[0] - 1
    out = np.empty(count, np.int64)
    longest = 0
    for x in range(count):
        longest = max(longest, offsets[x + 1] - offsets[x])
    hp = hairpin_energies(hairpin, lxc, longest)
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
        partners = np.empty((m, m), np.int64)
        npart = np.empty(m, np.int64)
        lbuf = np.empty(MAXLOOP + 1, np.int32)
        f3 = np.empty(m, np.int64)
        c = np.empty((m, m), np.int32)
        c_intr = np.empty((m, m), np.int32)
        c_aur = np.empty((m, m), np.int32)
        c_aut = np.empty((m, m), np.int32)
        cmin = np.empty((m, m), np.int32)
        rmin_t = np.empty((m, m), np.int32)
        seed = np.empty((m, m), np.int32)
        fml = np.empty((m, m), np.int32)
        fml_t = np.empty((m, m), np.int32)
        dml = np.empty((m, m), np.int32)
        for k in range(lo, hi):
            x = order[k]
            out[x] = _mfe_one(raw, offsets[x], offsets[x + 1] - offsets[x], pair, rtype, code_of,
                              alias, stack, bulge, lc, lc_row_min, mm_h, mm_i, d5, d3, int11,
                              int21, int22, scalars, hp, tl_key, tl_e,
                              S, S1, tetra, pt, partners, npart, lbuf, f3,
                              c, c_intr, c_aur, c_aut, cmin, rmin_t, seed, fml, fml_t, dml)
    return out


#: Bytes of work buffers per folding thread for a string of n letters: (n + 2)^2 times this
#: (one uint8, one int64 and ten int32 tables of _mfe_one).
FOLD_BYTES_PER_CELL = 1 + 8 + 10 * 4
#: Work buffers this small for all threads together are never checked against free memory.
SMALL_FOLDS_BYTES = 256 << 20


def folds_that_fit(longest: int, threads: int) -> int:
    """How many threads may fold at once without running out of memory (each holds buffers for
    the longest string); raises :class:`InputError` when not even one fold fits. Very long
    queries make duplexes of thousands of letters, whose exact fold needs memory quadratic in
    their length."""
    need = FOLD_BYTES_PER_CELL * (longest + 2) ** 2
    if need * threads <= SMALL_FOLDS_BYTES:  # miRNA duplexes: no need to ask the system
        return threads
    free = available_memory()
    if free is None or need * threads <= free // 2:
        return threads
    if need > free // 2:
        raise InputError(f"folding a duplex of {longest:,} letters needs {need / 2**30:.1f} GiB, more than half of "
                         f"the {free / 2**30:.1f} GiB available; use --noenergy (-noenergy) or shorter queries")
    return max(1, int(free // 2 // need))


def _compiled_packed(raw: np.ndarray, offsets: np.ndarray, threads: int) -> np.ndarray:
    from gamut.io.threads import numba_threads

    t, lc = compiled_tables()
    count = offsets.shape[0] - 1
    if count == 0:
        return np.zeros(0, np.int64)
    order = np.argsort(np.diff(offsets), kind="stable")
    threads = folds_that_fit(int(np.diff(offsets).max()), threads)
    with numba_threads(threads) as workers:
        blocks = max(1, min(count, 16 * workers))
        return _mfe_batch(raw, offsets, order, blocks, PAIR, RTYPE, CODE, ALIAS, t.stack,
                          t.hairpin, t.bulge, lc, lc.min(axis=1).astype(np.int32), t.mismatch_h,
                          t.mismatch_i, t.dangle5, t.dangle3, t.int11, t.int21, t.int22,
                          t.scalars, t.lxc, tetraloop_keys(t.tetraloops), t.tetraloop_e)



# ----------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------
def _threads(threads: int | None) -> int:
    if threads is None:
        return usable_cores()
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


def _on_gpu(device: str) -> bool:
    """Whether ``device`` (auto|cpu|cuda) sends the compiled model to the GPU engine."""
    from gamut.cuda.device import DEVICES, resolve_device

    if device not in DEVICES:
        raise UsageError(f"unknown device {device!r} (choose from {', '.join(DEVICES)})")
    return resolve_device(device, analysis="energy") == "cuda"


def duplex_energies_dcal(sequences: Sequence[str], *, model: str = "miranda",
                         threads: int | None = None, engine: str = "auto",
                         device: str = "auto") -> np.ndarray:
    """Minimum free energies in integer units of 0.01 kcal/mol (int64), in input order."""
    seqs = _as_strings(sequences)
    chosen = _engine(model, engine)
    if chosen == "compiled":
        return packed_energies_dcal(*pack_strings(seqs), model=model, threads=threads, engine=chosen, device=device)
    return vienna_folds(seqs, model, _threads(threads))[0]


def packed_energies_dcal(letters: np.ndarray, offsets: np.ndarray, *, model: str = "miranda",
                         threads: int | None = None, engine: str = "auto", device: str = "auto") -> np.ndarray:
    """:func:`duplex_energies_dcal` of fold strings packed as bytes: string k is
    ``letters[offsets[k]:offsets[k+1]]`` (uint8, latin-1). No Python object per string on the
    compiled paths (CPU and GPU)."""
    letters = np.ascontiguousarray(letters, np.uint8)
    offsets = np.ascontiguousarray(offsets, np.int64)
    # Hits repeat (the same site in related genomes, repeated UTR elements): fold each distinct
    # string once. The energy is a function of the string's bytes (case included), so this is exact.
    with span("distinct folds", strings=offsets.shape[0] - 1):
        keep, inverse = distinct_strings(letters, offsets)
    if keep.shape[0] == offsets.shape[0] - 1:
        return _fold_packed(letters, offsets, model, _threads(threads), engine, device)
    unique_letters, unique_offsets = take_strings(letters, offsets, keep)
    return _fold_packed(unique_letters, unique_offsets, model, _threads(threads), engine, device)[inverse]


def _fold_packed(letters: np.ndarray, offsets: np.ndarray, model: str, threads: int, engine: str,
                 device: str) -> np.ndarray:
    """Energies (dcal/mol) of packed fold strings with the chosen engine and device, every one folded."""
    if _engine(model, engine) == "compiled":
        if _on_gpu(device):
            return _gpu_and_cpu_packed(letters, offsets, threads)
        return _compiled_packed(letters, offsets, threads)
    text = letters.tobytes().decode("latin-1")
    seqs = [text[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    return vienna_folds(seqs, model, threads)[0]


def _gpu_and_cpu_packed(letters: np.ndarray, offsets: np.ndarray, threads: int) -> np.ndarray:
    """Energies on the GPU, except for strings longer than its engine takes (long queries make
    duplexes of thousands of letters): those on the CPU, with the same model and results."""
    from gamut.scanning.energy.gpu import MAX_LENGTH, gpu_packed_energies

    long = np.diff(offsets) > MAX_LENGTH
    if not long.any():
        return gpu_packed_energies(letters, offsets)
    out = np.empty(long.shape[0], np.int64)
    short = np.flatnonzero(~long)
    if short.size:
        out[short] = gpu_packed_energies(*take_strings(letters, offsets, short))
    out[long] = _compiled_packed(*take_strings(letters, offsets, np.flatnonzero(long)), threads)
    return out


def duplex_energies(sequences: Sequence[str], *, model: str = "miranda",
                    threads: int | None = None, engine: str = "auto",
                    device: str = "auto") -> np.ndarray:
    """Free energies (kcal/mol, float64 values k/100) of fold strings as miRanda builds them.

    ``model``: ``"miranda"`` (old Vienna library, Turner 1999 at 30 C, dangles=1; miRanda 3.3a's
    numbers) or ``"vienna2004"`` (ViennaRNA defaults). ``threads``: worker count (default: all
    cores). ``engine``: ``"auto"``, ``"compiled"`` (miranda only) or ``"vienna"``. ``device``:
    ``"cuda"`` runs the compiled engine's model on the GPU (identical energies; strings of at most
    ``gamut.scanning.energy.gpu.MAX_LENGTH`` nt), ``"cpu"`` on the CPU; ``"auto"`` (default) uses the
    GPU when one is usable. The ViennaRNA engine (and so ``vienna2004``) always runs on the CPU.
    """
    return duplex_energies_dcal(sequences, model=model, threads=threads, engine=engine,
                                device=device) / 100.0


def duplex_folds(sequences: Sequence[str], *, model: str = "miranda",
                 threads: int | None = None) -> tuple[np.ndarray, list[str]]:
    """Energies (kcal/mol) and MFE structures (dot-bracket) through ViennaRNA, in input order."""
    seqs = _as_strings(sequences)
    check_model(model)
    energies, structures = vienna_folds(seqs, model, _threads(threads))
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
    return vienna_folds(seqs, model, _threads(threads), structs)[0] / 100.0
