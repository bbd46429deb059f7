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

    @property
    def matches(self) -> int:
        """Columns where base and target hold the same letter (gaps and N never match)."""
        base = np.frombuffer(self.base.encode("ascii"), np.uint8)
        target = np.frombuffer(self.target.encode("ascii"), np.uint8)
        return int(np.count_nonzero((base == target) & (base != ord("-")) & (base != ord("N"))))

    @property
    def cigar(self) -> str:
        """The target's alignment on the base as a spliced CIGAR (M, I, D and N for introns)."""
        parts: list[tuple[str, int]] = []

        def add(op: str, count: int) -> None:
            if count <= 0:
                return
            if parts and parts[-1][0] == op:
                parts[-1] = (op, parts[-1][1] + count)
            else:
                parts.append((op, count))

        previous = -1
        for b, t in zip(self.base_pos.tolist(), self.target_pos.tolist()):
            if b >= 0:
                if previous >= 0:
                    add("N", b - previous - 1)
                previous = b
                add("M" if t >= 0 else "D", 1)
            else:
                add("I", 1)
        return "".join(f"{count}{op}" for op, count in parts)


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


#: Why :func:`build_results` rejects a case (codes of ``_assemble``).
PROBLEMS = {
    1: "an alignment operation code is not one of match, base gap, target gap",
    2: "the chain is empty, names an exon outside the case, or its exons are not in increasing, "
       "non-overlapping order",
    3: "the alignment does not spell the chain's exons",
    4: "the alignment does not spell the target",
    5: "the alignment's score is not the reported optimum",
}


@njit(cache=True, nogil=True)
def _assemble_case(c, ops, ops_off, chain, chain_off, score, exon_off, starts, ends, base, base_off, target,
                   target_off, target_len, matrix, gap, letters, bpos, tpos, bchars, tchars, span_lo,
                   span_hi):  # pragma: no cover - compiled
    """Case ``c`` of :func:`_assemble`; returns its problem code."""
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
    b0, t0 = base_off[c], target_off[c]
    for p in range(ops_off[c], ops_off[c + 1]):
        op = ops[p]
        if op > 2:
            return 1
        if op != OP_TARGET_GAP:
            k = x0 + chain[e]
            if i == ends[k] - starts[k]:
                e += 1
                i = 0
                if e == e1:
                    return 3
                k = x0 + chain[e]
            if i == 0:
                span_lo[e] = t  # where the exon starts on the target (kept if nothing is aligned inside)
                span_hi[e] = -1
            bpos[p] = starts[k] + i
            bchars[p] = letters[base[b0 + bpos[p]]]
            i += 1
        if op != OP_BASE_GAP:
            if t == target_len[c]:
                return 4
            tpos[p] = t
            tchars[p] = letters[target[t0 + t]]
            t += 1
        if op == OP_MATCH:
            if span_hi[e] < 0:
                span_lo[e] = t - 1
            span_hi[e] = t
            total += matrix[base[b0 + bpos[p]], target[t0 + t - 1]]
        else:
            total += gap
    if e != e1 - 1 or i != ends[x0 + chain[e]] - starts[x0 + chain[e]]:
        return 3
    if t != target_len[c]:
        return 4
    if total != score[c]:
        return 5
    for e in range(e0, e1):
        if span_hi[e] < 0:  # no target symbol aligned inside: an empty span where the exon starts
            span_hi[e] = span_lo[e]
    return 0


@njit(cache=True, nogil=True, parallel=True)
def _assemble(ops, ops_off, chain, chain_off, score, exon_off, starts, ends, base, base_off, target, target_off,
              target_len, matrix, gap, letters):  # pragma: no cover - compiled
    """Positions and letters of every alignment column, the target span of every chain exon, and
    a problem code per case (0: consistent; see :data:`PROBLEMS`), cases in parallel."""
    total = ops.shape[0]
    n_cases = ops_off.shape[0] - 1
    bpos = np.empty(total, np.int64)
    tpos = np.empty(total, np.int64)
    bchars = np.empty(total, np.uint8)
    tchars = np.empty(total, np.uint8)
    span_lo = np.empty(chain.shape[0], np.int64)
    span_hi = np.empty(chain.shape[0], np.int64)
    problem = np.zeros(n_cases, np.int8)
    for c in prange(n_cases):
        for p in range(ops_off[c], ops_off[c + 1]):
            bpos[p] = -1
            tpos[p] = -1
            bchars[p] = 45  # '-'
            tchars[p] = 45
        problem[c] = _assemble_case(c, ops, ops_off, chain, chain_off, score, exon_off, starts, ends, base, base_off,
                                    target, target_off, target_len, matrix, gap, letters, bpos, tpos, bchars,
                                    tchars, span_lo, span_hi)
    return bpos, tpos, bchars, tchars, span_lo, span_hi, problem


def build_results(batch: CaseBatch, tracebacks: Tracebacks, matrix: np.ndarray, gap: int, engine: str,
                  error: Callable[[str], Exception] = RuntimeError) -> list[SpliceResult]:
    """The :class:`SpliceResult` of every case of ``batch`` from its traceback.

    Checks every case first (a chain of the case's exons in increasing, non-overlapping order, an
    alignment that spells the chain and the target, and scores the reported optimum) and raises
    ``error(message)`` naming the first inconsistent case: no result is returned unchecked.
    """
    tb = tracebacks
    bpos, tpos, bchars, tchars, span_lo, span_hi, problem = _assemble(
        tb.ops, tb.ops_off, tb.chain, tb.chain_off, tb.score, batch.exon_off, batch.starts, batch.ends, batch.base,
        batch.base_off, batch.target, batch.target_off, batch.target_len, np.ascontiguousarray(matrix, np.int64),
        np.int64(gap), _LETTERS)
    bad = np.flatnonzero(problem)
    if bad.size:
        c = int(bad[0])
        raise error(f"{batch.cases[c].name}: {PROBLEMS[int(problem[c])]} ({bad.size} of {len(batch)} cases "
                    "inconsistent)")
    owner = np.repeat(np.arange(len(batch)), np.diff(tb.chain_off))
    chain_global = batch.exon_off[owner] + tb.chain
    chain_in = batch.order[chain_global].tolist()
    exon_pairs = list(zip(batch.starts[chain_global].tolist(), batch.ends[chain_global].tolist()))
    spans = list(zip(span_lo.tolist(), span_hi.tolist()))
    base_text = bchars.tobytes()
    target_text = tchars.tobytes()
    scores = tb.score.tolist()
    cells = batch.cells.tolist()
    c_off = tb.chain_off.tolist()
    o_off = tb.ops_off.tolist()
    results = []
    for c, case in enumerate(batch.cases):
        a, b = c_off[c], c_off[c + 1]
        lo, hi = o_off[c], o_off[c + 1]
        results.append(SpliceResult(
            score=scores[c],
            chain=chain_in[a:b],
            exons=exon_pairs[a:b],
            target_spans=spans[a:b],
            alignment=SpliceAlignment(base_text[lo:hi].decode("ascii"), target_text[lo:hi].decode("ascii"),
                                      bpos[lo:hi], tpos[lo:hi]),
            name=case.name,
            engine=engine,
            cells=cells[c],
        ))
    return results
