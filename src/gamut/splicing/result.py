"""Spliced-alignment results: score, exon chain (input indices) and the alignment itself.

Every engine hands its tracebacks over as one :class:`Tracebacks` per batch (concatenated
arrays); :func:`build_results` checks them and builds all :class:`SpliceResult` objects of the
batch in one compiled pass, so results are made in one place whatever the engine.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from numba import njit, prange

from gamut.splicing.batch import CaseBatch, offsets
from gamut.splicing.cpu import OP_BASE_GAP, OP_MATCH, OP_TARGET_GAP
from gamut.splicing.model import ALPHABET

_LETTERS = np.frombuffer(ALPHABET.encode(), dtype=np.uint8)


@dataclass(frozen=True)
class SpliceAlignment:
    """Alignment columns of the chain's concatenated exons (``base``) against the target.

    ``base_pos``/``target_pos`` give each column's 0-based position on the base / target, or -1
    for a gap; ``base`` and ``target`` are the aligned strings with '-' for gaps.
    """

    base: str
    target: str
    base_pos: np.ndarray = field(repr=False)
    target_pos: np.ndarray = field(repr=False)
    #: The target's alignment on the base as a spliced CIGAR (M, I, D, and N for a jump between exons).
    cigar: str = ""
    #: Columns where base and target hold the same letter (gaps and N never match).
    matches: int = 0


@dataclass(frozen=True)
class SpliceResult:
    """The optimal spliced alignment of one case.

    ``chain`` lists input indices of the chosen exons in order, ``exons`` their ``(start, end)``
    and ``target_spans`` the 0-based half-open target segment aligned inside each of them.
    """

    score: int
    chain: list[int]
    exons: list[tuple[int, int]]
    target_spans: list[tuple[int, int]]
    alignment: SpliceAlignment
    name: str = "case"
    engine: str = ""
    cells: int = 0


@dataclass(frozen=True)
class Tracebacks:
    """Tracebacks of a batch of cases: per case the score, the chain (sorted exon indices of the
    case, in order) and the alignment operations (``OP_*`` of :mod:`gamut.splicing.cpu`), as
    concatenated arrays; case ``c`` owns ``chain[chain_off[c]:chain_off[c + 1]]`` and
    ``ops[ops_off[c]:ops_off[c + 1]]``."""

    score: np.ndarray  # int64 (C,)
    chain: np.ndarray  # int64
    chain_off: np.ndarray  # int64 (C + 1,)
    ops: np.ndarray  # uint8
    ops_off: np.ndarray  # int64 (C + 1,)

    @classmethod
    def concatenate(cls, items: Sequence[tuple[int, np.ndarray, np.ndarray]]) -> "Tracebacks":
        """From per-case ``(score, chain, ops)`` (the CPU traceback's output)."""
        score = np.asarray([s for s, _, _ in items], np.int64)
        chains = [np.asarray(c, np.int64) for _, c, _ in items]
        ops = [np.asarray(o, np.uint8) for _, _, o in items]
        return cls(score, np.concatenate(chains) if chains else np.zeros(0, np.int64), offsets([c.size for c in chains]),
                   np.concatenate(ops) if ops else np.zeros(0, np.uint8), offsets([o.size for o in ops]))

    @classmethod
    def join(cls, parts: Sequence["Tracebacks"]) -> "Tracebacks":
        """The tracebacks of consecutive batches as one."""
        if len(parts) == 1:
            return parts[0]

        def joined(name: str, dtype) -> np.ndarray:
            arrays = [getattr(p, name) for p in parts]
            return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)

        return cls(joined("score", np.int64), joined("chain", np.int64),
                   offsets(np.concatenate([np.diff(p.chain_off) for p in parts]) if parts else []),
                   joined("ops", np.uint8),
                   offsets(np.concatenate([np.diff(p.ops_off) for p in parts]) if parts else []))


#: Why :func:`check_tracebacks` rejects a case (codes of ``_walk``).
PROBLEMS = {
    1: "an alignment operation code is not one of match, base gap, target gap",
    2: "the chain is empty, names an exon outside the case, or its exons are not in increasing, "
       "non-overlapping order",
    3: "the alignment does not spell the chain's exons",
    4: "the alignment does not spell the target",
    5: "the alignment's score is not the reported optimum",
}


#: The walk's CIGAR runs are coded 0..3: M (both), I (a target letter), D (a base letter), N (intron).
_CIGAR_LETTERS = np.frombuffer(b"MIDN", np.uint8)
_RUN_CODE = np.array([0, 2, 1], np.uint8)  # the run code of each OP_*: OP_MATCH M, OP_BASE_GAP D, OP_TARGET_GAP I
_INTRON = 3


@njit(cache=True, nogil=True)
def _walk_case(c, ops, ops_off, chain, chain_off, score, exon_off, starts, ends, base, base_off, target,
               target_off, target_len, matrix, gap, letters, run_code, store, bpos, tpos, bchars, tchars, span_lo,
               span_hi, run_op, run_len, runs, matches):  # pragma: no cover - compiled
    """Case ``c`` of :func:`_walk`; returns its problem code."""
    e0, e1 = chain_off[c], chain_off[c + 1]
    x0 = exon_off[c]
    if e1 == e0:
        return 2
    for e in range(e0, e1):
        if chain[e] < 0 or chain[e] >= exon_off[c + 1] - x0:
            return 2
        if e > e0 and (chain[e] <= chain[e - 1] or ends[x0 + chain[e - 1]] > starts[x0 + chain[e]]):
            return 2
    e = e0
    i = 0  # symbols of chain exon e consumed
    t = 0  # target symbols consumed
    total = 0
    same = 0
    r0 = ops_off[c] + chain_off[c]  # the case's runs: at most one per op and one per intron
    r = r0
    b0, t0 = base_off[c], target_off[c]
    for p in range(ops_off[c], ops_off[c + 1]):
        op = ops[p]
        if op > 2:
            return 1
        bp = -1
        if op != OP_TARGET_GAP:
            k = x0 + chain[e]
            if i == ends[k] - starts[k]:
                e += 1
                i = 0
                if e == e1:
                    return 3
                intron = starts[x0 + chain[e]] - ends[k]
                k = x0 + chain[e]
                if intron > 0:
                    run_op[r] = _INTRON
                    run_len[r] = intron
                    r += 1
            if store and i == 0:
                span_lo[e] = t  # where the exon starts on the target (kept if nothing is aligned inside)
                span_hi[e] = -1
            bp = starts[k] + i
            if store:
                bpos[p] = bp
                bchars[p] = letters[base[b0 + bp]]
            i += 1
        if op != OP_BASE_GAP:
            if t == target_len[c]:
                return 4
            if store:
                tpos[p] = t
                tchars[p] = letters[target[t0 + t]]
            t += 1
        code = run_code[op]
        if r > r0 and run_op[r - 1] == code:
            run_len[r - 1] += 1
        else:
            run_op[r] = code
            run_len[r] = 1
            r += 1
        if op == OP_MATCH:
            if store:
                if span_hi[e] < 0:
                    span_lo[e] = t - 1
                span_hi[e] = t
            a, b = base[b0 + bp], target[t0 + t - 1]
            total += matrix[a, b]
            if a == b and a != 4:  # N never matches
                same += 1
        else:
            total += gap
    if e != e1 - 1 or i != ends[x0 + chain[e]] - starts[x0 + chain[e]]:
        return 3
    if t != target_len[c]:
        return 4
    if total != score[c]:
        return 5
    runs[c] = r - r0
    matches[c] = same
    if store:
        for e in range(e0, e1):
            if span_hi[e] < 0:  # no target symbol aligned inside: an empty span where the exon starts
                span_hi[e] = span_lo[e]
    return 0


@njit(cache=True, nogil=True, parallel=True)
def _walk(ops, ops_off, chain, chain_off, score, exon_off, starts, ends, base, base_off, target, target_off,
          target_len, matrix, gap, letters, run_code, store):  # pragma: no cover - compiled
    """Every case's problem code (0: consistent; see :data:`PROBLEMS`), matching columns and CIGAR
    runs; with ``store``, also the positions and letters of every column and each chain exon's
    target span. Cases in parallel."""
    n_cases = ops_off.shape[0] - 1
    size = ops.shape[0] if store else 0
    bpos = np.full(size, -1, np.int64)
    tpos = np.full(size, -1, np.int64)
    bchars = np.full(size, 45, np.uint8)  # '-'
    tchars = np.full(size, 45, np.uint8)
    span_lo = np.empty(chain.shape[0] if store else 0, np.int64)
    span_hi = np.empty(chain.shape[0] if store else 0, np.int64)
    run_op = np.empty(ops.shape[0] + chain.shape[0], np.uint8)
    run_len = np.empty(ops.shape[0] + chain.shape[0], np.int64)
    runs = np.zeros(n_cases, np.int64)
    matches = np.zeros(n_cases, np.int64)
    problem = np.zeros(n_cases, np.int8)
    for c in prange(n_cases):
        problem[c] = _walk_case(c, ops, ops_off, chain, chain_off, score, exon_off, starts, ends, base, base_off,
                                target, target_off, target_len, matrix, gap, letters, run_code, store, bpos, tpos,
                                bchars, tchars, span_lo, span_hi, run_op, run_len, runs, matches)
    return bpos, tpos, bchars, tchars, span_lo, span_hi, run_op, run_len, runs, matches, problem


@njit(cache=True, nogil=True)
def _cigar_text(run_op, run_len, run_start, runs, reverse, letters):  # pragma: no cover - compiled
    """The CIGAR text of every case end to end (case ``c``: ``runs[c]`` runs from
    ``run_start[c]``, in reverse order where ``reverse[c]``), and its offsets."""
    n_cases = runs.shape[0]
    text = np.empty(21 * runs.sum(), np.uint8)
    text_off = np.zeros(n_cases + 1, np.int64)
    digits = np.empty(20, np.uint8)
    t = 0
    for c in range(n_cases):
        for i in range(runs[c]):
            k = run_start[c] + (runs[c] - 1 - i if reverse[c] else i)
            value, d = run_len[k], 0
            while True:
                digits[d] = 48 + value % 10
                d += 1
                value //= 10
                if value == 0:
                    break
            for j in range(d):
                text[t + j] = digits[d - 1 - j]
            text[t + d] = letters[run_op[k]]
            t += d + 1
        text_off[c + 1] = t
    return text[:t], text_off


@dataclass(frozen=True)
class CheckedBatch:
    """What the check of a batch's tracebacks (:func:`check_tracebacks`) found: per case the
    matching columns and the CIGAR runs (:meth:`cigars`) and, when stored, every alignment column
    (concatenated as the tracebacks' ops: base and target positions, -1 for a gap, and letters,
    '-' for a gap) and each chain exon's target span."""

    matches: np.ndarray
    run_op: np.ndarray = field(repr=False)
    run_len: np.ndarray = field(repr=False)
    run_start: np.ndarray = field(repr=False)
    runs: np.ndarray = field(repr=False)
    bpos: np.ndarray = field(repr=False)
    tpos: np.ndarray = field(repr=False)
    bchars: np.ndarray = field(repr=False)
    tchars: np.ndarray = field(repr=False)
    span_lo: np.ndarray = field(repr=False)
    span_hi: np.ndarray = field(repr=False)

    def cigars(self, reverse: np.ndarray | None = None) -> list[str]:
        """Each case's spliced CIGAR (M, I, D, and N for the jump between two chain exons), its
        runs reversed where ``reverse`` (a ``-`` strand locus read along the genome)."""
        flags = np.zeros(self.runs.size, np.bool_) if reverse is None else np.asarray(reverse, np.bool_)
        text, text_off = _cigar_text(self.run_op, self.run_len, self.run_start, self.runs, flags, _CIGAR_LETTERS)
        joined = text.tobytes().decode("ascii")
        bounds = text_off.tolist()
        return [joined[bounds[c]:bounds[c + 1]] for c in range(self.runs.size)]


def check_tracebacks(batch: CaseBatch, tracebacks: Tracebacks, matrix: np.ndarray, gap: int,
                     error: Callable[[str], Exception] = RuntimeError, store: bool = False) -> CheckedBatch:
    """Check every case's traceback (a chain of the case's exons in increasing, non-overlapping
    order, an alignment that spells the chain and the target, and scores the reported optimum) in
    one compiled pass; raises ``error(message)`` naming the first inconsistent case. ``store``:
    also keep every alignment column (for :func:`build_results`)."""
    tb = tracebacks
    *walked, problem = _walk(
        tb.ops, tb.ops_off, tb.chain, tb.chain_off, tb.score, batch.exon_off, batch.starts, batch.ends, batch.base,
        batch.base_off, batch.target, batch.target_off, batch.target_len, np.ascontiguousarray(matrix, np.int64),
        np.int64(gap), _LETTERS, _RUN_CODE, store)
    bad = np.flatnonzero(problem)
    if bad.size:
        c = int(bad[0])
        raise error(f"{batch.names[c]}: {PROBLEMS[int(problem[c])]} ({bad.size} of {len(batch)} cases "
                    "inconsistent)")
    bpos, tpos, bchars, tchars, span_lo, span_hi, run_op, run_len, runs, matches = walked
    return CheckedBatch(matches, run_op, run_len, tb.ops_off[:-1] + tb.chain_off[:-1], runs, bpos, tpos, bchars,
                        tchars, span_lo, span_hi)


def chain_inputs(batch: CaseBatch, tracebacks: Tracebacks) -> tuple[np.ndarray, np.ndarray]:
    """Each chain entry of the tracebacks as an input index of its case's exons, and its case."""
    owner = np.repeat(np.arange(len(batch)), np.diff(tracebacks.chain_off))
    return batch.order[batch.exon_off[owner] + tracebacks.chain], owner


def build_results(batch: CaseBatch, tracebacks: Tracebacks, matrix: np.ndarray, gap: int, engine: str,
                  error: Callable[[str], Exception] = RuntimeError) -> list[SpliceResult]:
    """The :class:`SpliceResult` of every case of ``batch`` from its traceback, each checked first
    (:func:`check_tracebacks`): no result is returned unchecked."""
    tb = tracebacks
    columns = check_tracebacks(batch, tb, matrix, gap, error, store=True)
    bpos, tpos, bchars, tchars = columns.bpos, columns.tpos, columns.bchars, columns.tchars
    span_lo, span_hi = columns.span_lo, columns.span_hi
    cigars = columns.cigars()
    matches = columns.matches.tolist()
    chain_in, owner = chain_inputs(batch, tb)
    chain_in = chain_in.tolist()
    chain_global = batch.exon_off[owner] + tb.chain
    exon_pairs = list(zip(batch.starts[chain_global].tolist(), batch.ends[chain_global].tolist()))
    spans = list(zip(span_lo.tolist(), span_hi.tolist()))
    base_text = bchars.tobytes()
    target_text = tchars.tobytes()
    scores = tb.score.tolist()
    cells = batch.cells.tolist()
    c_off = tb.chain_off.tolist()
    o_off = tb.ops_off.tolist()
    results = []
    for c, name in enumerate(batch.names):
        a, b = c_off[c], c_off[c + 1]
        lo, hi = o_off[c], o_off[c + 1]
        results.append(SpliceResult(
            score=scores[c],
            chain=chain_in[a:b],
            exons=exon_pairs[a:b],
            target_spans=spans[a:b],
            alignment=SpliceAlignment(base_text[lo:hi].decode("ascii"), target_text[lo:hi].decode("ascii"),
                                      bpos[lo:hi], tpos[lo:hi], cigars[c], matches[c]),
            name=name,
            engine=engine,
            cells=cells[c],
        ))
    return results
