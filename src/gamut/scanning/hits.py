"""Per-pair post-processing shared by every engine (miranda-model §7.2-§9).

From an engine's survivors (:class:`PairAlignments`) to hits: the reference-overlap rule, the
alignment strings with flanks, coordinates and statistics, strict mode and the fold string used
for the duplex energy.

:func:`pair_hits` is the readable per-pair reference; :func:`chunk_hits` computes the same hits
for a whole chunk of pairs in one Numba pass (what the runner uses).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numba import njit, prange

from gamut.io.threads import Parallel, run_kernel
from gamut.scanning.alignments import OP_MATCH, OP_QGAP, PairAlignments
from gamut.scanning.alphabet import MAP_CHARS
from gamut.scanning.sequences import SequenceSet

#: Two reported ranges may share at most this many reference positions (miranda-model §7.2).
MAX_REFERENCE_OVERLAP = 6
#: miRanda joins miRNA and target with seven X letters before folding (miranda-model §9).
LINKER = "XXXXXXX"
#: Energy used for filtering and summing with -noenergy (miranda-model §9).
NOENERGY_VALUE = -1_000_000.0


@dataclass
class Hit:
    """One alignment that passed the reference-overlap rule (reported or not)."""

    query_id: str
    reference_id: str
    score: int
    query_start: int
    query_end: int
    ref_start: int
    ref_end: int
    aln_length: int
    identity: float
    similarity: float
    aln_mirna: str
    aln_map: str
    aln_utr: str
    fold_string: str
    strict_ok: bool
    energy: float = 0.0  # kcal/mol (float32 value), NOENERGY_VALUE with -noenergy
    reported: bool = False


def overlaps_accepted(start: int, end: int, accepted: list[tuple[int, int]]) -> bool:
    """True when (start, end) shares more than 6 positions with an accepted range."""
    return any(min(end, e) - max(start, s) + 1 > MAX_REFERENCE_OVERLAP for s, e in accepted)


def pair_hits(
    query_id: str,
    query_seq: bytes,
    query_codes: np.ndarray,
    reference_id: str,
    reference_seq: bytes,
    reference_codes: np.ndarray,
    alignments: PairAlignments,
) -> list[Hit]:
    """Apply the overlap rule to a pair's survivors and build each kept hit's strings (miranda-model §7).

    ``*_codes`` are the sequences' class codes (:func:`gamut.scanning.alphabet.encode`), 5'->3'.
    """
    if len(alignments) == 0:
        return []
    L = len(query_seq)
    R = len(reference_seq)
    qrev = query_seq[::-1].decode("latin-1")
    ref = reference_seq.decode("latin-1")
    q_classes = query_codes[::-1]
    r_classes = reference_codes
    accepted: list[tuple[int, int]] = []
    hits: list[Hit] = []
    for k in range(len(alignments)):
        i_end = int(alignments.i_end[k])
        j_end = int(alignments.j_end[k])
        i0 = int(alignments.i_start[k])
        j0 = int(alignments.j_start[k])
        if overlaps_accepted(j0, j_end, accepted):
            continue
        accepted.append((j0, j_end))

        # 3' flank of the miRNA: reversed positions 1..i0, ungapped against the reference.
        q3 = qrev[:i0].lower()
        r3 = "".join(ref[x].lower() if x >= 0 else "-" for x in range(j0 - i0, j0))
        n3 = sum(1 for x in range(j0 - i0, j0) if x >= 0)
        # 5' flank: reversed positions i_end+1..L.
        q5 = qrev[i_end:].lower()
        r5 = "".join(ref[x].lower() if x < R else "-" for x in range(j_end, j_end + L - i_end))
        n5 = sum(1 for x in range(j_end, j_end + L - i_end) if x < R)

        qa: list[str] = []
        ma: list[str] = []
        ra: list[str] = []
        i, j = i0, j0  # 0-based next letters: qrev[i], ref[j]
        for op in alignments.columns(k):
            if op == OP_MATCH:
                qa.append(qrev[i].upper())
                ra.append(ref[j].upper())
                ma.append(chr(MAP_CHARS[q_classes[i], r_classes[j]]))
                i += 1
                j += 1
            elif op == OP_QGAP:
                qa.append("-")
                ra.append(ref[j].upper())
                ma.append(" ")
                j += 1
            else:
                qa.append(qrev[i].upper())
                ra.append("-")
                ma.append(" ")
                i += 1
        q_body, m_body, r_body = "".join(qa), "".join(ma), "".join(ra)
        length = len(q_body)
        n_wc = m_body.count("|")
        n_pair = n_wc + m_body.count(":")
        query_line = q3 + q_body + q5
        map_line = " " * i0 + m_body + " " * (L - i_end)
        ref_line = r3 + r_body + r5
        fold = (q3 + q_body.replace("-", "") + q5) + LINKER + (r5[::-1] + r_body.replace("-", "")[::-1] + r3[::-1])
        hits.append(
            Hit(
                query_id=query_id,
                reference_id=reference_id,
                score=int(alignments.score[k]),
                query_start=L - i_end + 1,
                query_end=L - i0 + 1,
                ref_start=j0 + 1 - n3,
                ref_end=j_end + n5,
                aln_length=length,
                identity=100.0 * n_wc / length if length else 0.0,
                similarity=100.0 * n_pair / length if length else 0.0,
                aln_mirna=query_line,
                aln_map=map_line,
                aln_utr=ref_line,
                fold_string=fold,
                strict_ok=_strict_seed_ok_text(query_line, map_line, L - i_end, i0),
            )
        )
    return hits


# --------------------------------------------------------------------------------------------
# The same post-processing for a whole chunk at once: one Numba pass over flat arrays, then a
# thin loop that builds the Hit objects. Results are identical to calling pair_hits per pair.
# --------------------------------------------------------------------------------------------

_GAP, _SPACE = ord("-"), ord(" ")
_WC, _WOBBLE = ord("|"), ord(":")
_LINKER_BYTES = np.frombuffer(LINKER.encode("ascii"), np.uint8)


@njit(cache=True, nogil=True)
def _upper(c):
    return c - 32 if 97 <= c <= 122 else c


@njit(cache=True, nogil=True)
def _lower(c):
    return c + 32 if 65 <= c <= 90 else c


@njit(cache=True, nogil=True)
def strict_seed_ok(buf, qline, mline, width, n5, n3):
    """Strict mode (miranda-model §8): miRNA positions 2-8 all Watson-Crick paired, without gaps.

    The query and map lines (``width`` bytes each) start at ``buf[qline]`` and ``buf[mline]``;
    ``n5`` and ``n3`` are the lengths of the query's unaligned 5' and 3' flanks."""
    body = width - n3 - n5
    p = paired = wc = gaps = 0
    for t in range(width):
        if t < n5:
            letter = buf[qline + width - n5 + t]
            mark = _SPACE
        elif t < n5 + body:
            x = n3 + body - 1 - (t - n5)
            letter = buf[qline + x]
            mark = buf[mline + x]
        else:
            letter = buf[qline + t - n5 - body]
            mark = _SPACE
        if letter != _GAP:
            p += 1
        if 2 <= p <= 8:
            paired += mark != _SPACE
            wc += mark == _WC
            gaps += letter == _GAP
        if p >= 8:
            break
    return paired >= 7 and wc >= 7 and gaps == 0


def _strict_seed_ok_text(query_line: str, map_line: str, n5: int, n3: int) -> bool:
    """:func:`strict_seed_ok` of one hit's lines as text (the per-pair path)."""
    line = (query_line + map_line).encode("latin-1", errors="replace")  # one byte per letter
    return bool(strict_seed_ok(np.frombuffer(line, np.uint8), 0, len(query_line), len(query_line), n5, n3))


@njit(cache=True, nogil=True, parallel=True)
def _chunk_hits_kernel(q_letters, q_codes, q_off, r_letters, r_codes, r_off, n_pairs, live, live_q, live_r, sv_start,
                       sv_stop, i_start, j_start, i_end, j_end, op_start, op_end, ops, map_chars, linker):
    """Overlap rule and hit strings for all pairs of a chunk of ``n_pairs`` (see :func:`pair_hits`).

    ``live`` (ascending) are the pairs with survivors, of queries ``live_q`` and references
    ``live_r``, their survivors rows ``sv_start[lp]:sv_stop[lp]``: no other pair is visited.
    Survivor k's columns are ``ops[op_start[k]:op_end[k]]``. The strings are built in parallel over hits.
    Returns, per kept hit in order: its survivor, its pair, every pair's hit offsets, and per hit the text
    ``buf[text_off[h]:text_off[h+1]]`` = query line + map line + reference line (``width`` each),
    the fold string ``fold[fold_off[h]:fold_off[h+1]]``, ``n3``, ``n5``, Watson-Crick and paired
    column counts and the strict flag.
    """
    n_live = live.shape[0]
    max_sv = 0
    total_sv = 0
    for lp in range(n_live):
        max_sv = max(max_sv, sv_stop[lp] - sv_start[lp])
        total_sv += sv_stop[lp] - sv_start[lp]
    acc_s = np.empty(max_sv, np.int64)
    acc_e = np.empty(max_sv, np.int64)
    hit_sv = np.empty(total_sv, np.int64)
    live_hit_off = np.zeros(n_live + 1, np.int64)
    n_hits = 0
    for lp in range(n_live):  # pass 1: the reference-overlap rule
        n_acc = 0
        for k in range(sv_start[lp], sv_stop[lp]):
            s = j_start[k]
            e = j_end[k]
            keep = True
            for a in range(n_acc):
                if min(e, acc_e[a]) - max(s, acc_s[a]) + 1 > MAX_REFERENCE_OVERLAP:
                    keep = False
                    break
            if keep:
                acc_s[n_acc] = s
                acc_e[n_acc] = e
                n_acc += 1
                hit_sv[n_hits] = k
                n_hits += 1
        live_hit_off[lp + 1] = n_hits
    pair_hit_off = np.empty(n_pairs + 1, np.int64)  # every pair's: one pass, no work per pair beyond it
    at = 0
    for lp in range(n_live + 1):
        stop = live[lp] if lp < n_live else n_pairs
        for p in range(at, stop + 1):
            pair_hit_off[p] = live_hit_off[lp]
        at = stop + 1
    hit_sv = hit_sv[:n_hits]
    hit_live = np.empty(n_hits, np.int64)
    hit_pair = np.empty(n_hits, np.int64)
    width = np.empty(n_hits, np.int64)
    text_off = np.zeros(n_hits + 1, np.int64)
    fold_off = np.zeros(n_hits + 1, np.int64)
    for lp in range(n_live):
        for h in range(live_hit_off[lp], live_hit_off[lp + 1]):
            hit_live[h] = lp
            hit_pair[h] = live[lp]
            k = hit_sv[h]
            L = q_off[live_q[lp] + 1] - q_off[live_q[lp]]
            i0 = i_start[k]
            ie = i_end[k]
            width[h] = i0 + (op_end[k] - op_start[k]) + (L - ie)
            fold_len = L + linker.shape[0] + (L - ie) + (j_end[k] - j_start[k]) + i0
            text_off[h + 1] = text_off[h] + 3 * width[h]
            fold_off[h + 1] = fold_off[h] + fold_len
    buf = np.empty(text_off[n_hits], np.uint8)
    fold = np.empty(fold_off[n_hits], np.uint8)
    n3_out = np.empty(n_hits, np.int64)
    n5_out = np.empty(n_hits, np.int64)
    n_wc = np.empty(n_hits, np.int64)
    n_pair = np.empty(n_hits, np.int64)
    strict = np.empty(n_hits, np.bool_)
    for h in prange(n_hits):  # pass 2: the strings
        lp = hit_live[h]
        k = hit_sv[h]
        qo = q_off[live_q[lp]]
        L = q_off[live_q[lp] + 1] - qo
        ro = r_off[live_r[lp]]
        R = r_off[live_r[lp] + 1] - ro
        last = qo + L - 1  # qrev[i] is q_letters[last - i]
        i0 = i_start[k]
        j0 = j_start[k]
        ie = i_end[k]
        je = j_end[k]
        w = width[h]
        qa = text_off[h]
        ma = qa + w
        ra = ma + w
        # 3' flank of the miRNA, ungapped against the reference ('-' before the reference start).
        n3 = 0
        for x in range(i0):
            buf[qa + x] = _lower(q_letters[last - x])
            buf[ma + x] = _SPACE
            y = j0 - i0 + x
            if y >= 0:
                buf[ra + x] = _lower(r_letters[ro + y])
                n3 += 1
            else:
                buf[ra + x] = _GAP
        # The aligned columns.
        c = i0
        i = i0
        j = j0
        wc = pr = 0
        for t in range(op_start[k], op_end[k]):
            op = ops[t]
            if op == OP_MATCH:
                qc = q_codes[last - i]
                rc = r_codes[ro + j]
                mark = map_chars[qc if qc >= 0 else qc + map_chars.shape[0], rc if rc >= 0 else rc + map_chars.shape[1]]
                buf[qa + c] = _upper(q_letters[last - i])
                buf[ra + c] = _upper(r_letters[ro + j])
                buf[ma + c] = mark
                wc += mark == _WC
                pr += (mark == _WC) or (mark == _WOBBLE)
                i += 1
                j += 1
            elif op == OP_QGAP:
                buf[qa + c] = _GAP
                buf[ra + c] = _upper(r_letters[ro + j])
                buf[ma + c] = _SPACE
                j += 1
            else:
                buf[qa + c] = _upper(q_letters[last - i])
                buf[ra + c] = _GAP
                buf[ma + c] = _SPACE
                i += 1
            c += 1
        body_end = c
        # 5' flank ('-' past the reference end).
        n5 = 0
        for x in range(ie, L):
            buf[qa + c] = _lower(q_letters[last - x])
            buf[ma + c] = _SPACE
            y = je + x - ie
            if y < R:
                buf[ra + c] = _lower(r_letters[ro + y])
                n5 += 1
            else:
                buf[ra + c] = _GAP
            c += 1
        # Fold string: query 3'->5' without gaps, linker, reference 3'->5' without gaps.
        f = fold_off[h]
        for x in range(w):
            if x < i0 or x >= body_end or buf[qa + x] != _GAP:
                fold[f] = buf[qa + x]
                f += 1
        for x in range(linker.shape[0]):
            fold[f] = linker[x]
            f += 1
        for x in range(w - 1, -1, -1):
            if x < i0 or x >= body_end or buf[ra + x] != _GAP:
                fold[f] = buf[ra + x]
                f += 1
        n3_out[h] = n3
        n5_out[h] = n5
        n_wc[h] = wc
        n_pair[h] = pr
        strict[h] = strict_seed_ok(buf, qa, ma, w, L - ie, i0)
    return hit_sv, hit_pair, pair_hit_off, width, text_off, buf, fold_off, fold, n3_out, n5_out, n_wc, n_pair, strict


@dataclass
class HitTable:
    """The hits of a chunk of pairs (those that passed the overlap rule), as columns, in output order.

    Hit h belongs to pair ``pair[h]`` of the chunk; ``pair_off[p]:pair_off[p+1]`` are pair p's hits.
    Its alignment lines are ``text[text_off[h]:text_off[h+1]]`` (query, map and reference line,
    ``width[h]`` bytes each) and its fold string (miranda-model §9) ``fold[fold_off[h]:fold_off[h+1]]``.
    ``energy`` (float32 kcal/mol, :data:`NOENERGY_VALUE` with -noenergy) and ``reported`` are set
    by :meth:`set_energies`.
    """

    pair: np.ndarray
    pair_off: np.ndarray
    score: np.ndarray
    query_start: np.ndarray
    query_end: np.ndarray
    ref_start: np.ndarray
    ref_end: np.ndarray
    aln_length: np.ndarray
    n_wc: np.ndarray
    n_paired: np.ndarray
    width: np.ndarray
    text_off: np.ndarray
    text: np.ndarray
    fold_off: np.ndarray
    fold: np.ndarray
    strict_ok: np.ndarray
    energy: np.ndarray | None = None
    reported: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.pair.shape[0])

    @property
    def identity(self) -> np.ndarray:
        """Percent Watson-Crick columns (float64, computed as miRanda does)."""
        return np.where(self.aln_length > 0, 100.0 * self.n_wc / np.maximum(self.aln_length, 1), 0.0)

    @property
    def similarity(self) -> np.ndarray:
        return np.where(self.aln_length > 0, 100.0 * self.n_paired / np.maximum(self.aln_length, 1), 0.0)

    def set_energies(self, energy: np.ndarray, energy_cutoff: int, strict: bool) -> None:
        """Store the energies and the reported flags: energy below the threshold, exactly (its
        whole count of 0.01 kcal/mol below ``energy_cutoff``, :attr:`ScanParams.energy_cutoff`)
        and, in strict mode, the seed rule (miranda-model §9)."""
        self.energy = np.asarray(energy, np.float32)
        dcal = np.rint(self.energy.astype(np.float64) * 100.0)  # the float32 of k/100 gives k back
        self.reported = (dcal < energy_cutoff) & (self.strict_ok | (not strict))

    def strings(self, which: int) -> list[str]:
        """Column ``which`` (0 query line, 1 map line, 2 reference line, 3 fold string) as text."""
        if which == 3:
            data, starts, ends = self.fold, self.fold_off[:-1], self.fold_off[1:]
        else:
            data, starts = self.text, self.text_off[:-1] + which * self.width
            ends = starts + self.width
        text = data.tobytes().decode("latin-1")
        return [text[a:b] for a, b in zip(starts.tolist(), ends.tolist())]

    def hits(self, query_ids: Sequence[str], reference_ids: Sequence[str], pairs: np.ndarray) -> list[list[Hit]]:
        """The hits as :class:`Hit` objects, per pair (for tests and small results; not a hot path)."""
        pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
        qi = pairs[self.pair, 0].tolist()
        ri = pairs[self.pair, 1].tolist()
        lines = [self.strings(w) for w in range(4)]
        energy = self.energy.tolist() if self.energy is not None else [0.0] * len(self)
        reported = self.reported.tolist() if self.reported is not None else [False] * len(self)
        flat = [
            Hit(query_ids[q], reference_ids[r], s, qs, qe, rs, re, n, idn, sim, a, m, u, f, ok, e, rep)
            for q, r, s, qs, qe, rs, re, n, idn, sim, a, m, u, f, ok, e, rep in zip(
                qi, ri, self.score.tolist(), self.query_start.tolist(), self.query_end.tolist(),
                self.ref_start.tolist(), self.ref_end.tolist(), self.aln_length.tolist(),
                self.identity.tolist(), self.similarity.tolist(), *lines, self.strict_ok.tolist(), energy, reported)
        ]
        offs = self.pair_off.tolist()
        return [flat[a:b] for a, b in zip(offs[:-1], offs[1:])]

    @classmethod
    def from_hits(cls, per_pair: Sequence[Sequence[Hit]]) -> "HitTable":
        """Columns from per-pair :class:`Hit` lists (the per-pair oracle's output)."""
        flat = [h for hs in per_pair for h in hs]
        counts = np.array([len(hs) for hs in per_pair], np.int64)
        pair_off = np.zeros(len(per_pair) + 1, np.int64)
        np.cumsum(counts, out=pair_off[1:])
        col = lambda name: np.array([getattr(h, name) for h in flat], np.int64)  # noqa: E731
        width = np.array([len(h.aln_mirna) for h in flat], np.int64)
        text_off = np.zeros(len(flat) + 1, np.int64)
        np.cumsum(3 * width, out=text_off[1:])
        folds = [h.fold_string.encode("latin-1") for h in flat]
        fold_off = np.zeros(len(flat) + 1, np.int64)
        np.cumsum([len(f) for f in folds], out=fold_off[1:])
        text = "".join(h.aln_mirna + h.aln_map + h.aln_utr for h in flat).encode("latin-1")
        n_wc = np.array([h.aln_map.count("|") for h in flat], np.int64)
        n_paired = n_wc + np.array([h.aln_map.count(":") for h in flat], np.int64)
        return cls(np.repeat(np.arange(len(per_pair)), counts), pair_off, col("score"), col("query_start"),
                   col("query_end"), col("ref_start"), col("ref_end"), col("aln_length"), n_wc, n_paired,
                   width, text_off, np.frombuffer(text, np.uint8), fold_off, np.frombuffer(b"".join(folds), np.uint8),
                   np.array([h.strict_ok for h in flat], bool))


@njit(cache=True, nogil=True, parallel=True)
def _hit_positions(hit_sv, hit_pair, pairs, q_off, score, i_start, i_end, j_start, j_end, op_start, op_end, n3, n5):
    """Each hit's score, query start and end, reference start and end and alignment length (1-based
    positions as miRanda prints them) from its survivor's raw coordinates: one pass over the hits."""
    n = hit_sv.shape[0]
    scores, q_start, q_end = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    r_start, r_end, aln_length = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    for h in prange(n):
        sv = hit_sv[h]
        q = pairs[hit_pair[h], 0]
        length = q_off[q + 1] - q_off[q]
        scores[h] = score[sv]
        q_start[h] = length - i_end[sv] + 1
        q_end[h] = length - i_start[sv] + 1
        r_start[h] = j_start[sv] + 1 - n3[h]
        r_end[h] = j_end[sv] + n5[h]
        aln_length[h] = op_end[sv] - op_start[sv]
    return scores, q_start, q_end, r_start, r_end, aln_length


def chunk_hits(queries: SequenceSet, references: SequenceSet, pairs: np.ndarray, alignments, *,
               parallel: Parallel = False) -> HitTable:
    """:func:`pair_hits` for every (query index, reference index) in ``pairs`` at once, as columns.

    ``alignments`` is the chunk's :class:`~gamut.scanning.alignments.ChunkAlignments`. ``references``
    holds the sequences as miRanda sees them (after -trim). ``parallel``: the strings may be
    built on all threads (:func:`~gamut.io.threads.run_kernel`).
    """
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    if pairs.shape[0] != alignments.n_pairs:
        raise ValueError(f"{pairs.shape[0]} pairs but {alignments.n_pairs} alignment results")
    if not (queries.is_ascii and references.is_ascii):  # bytewise case mapping would differ: the oracle
        return HitTable.from_hits([
            pair_hits(queries.ids[q], queries.sequence(q), queries.class_codes(q),
                      references.ids[r], references.sequence(r), references.class_codes(r), alignments.pair(p))
            for p, (q, r) in enumerate(pairs.tolist())
        ])
    a = alignments
    live, live_start, live_stop = a.survivor_ranges()  # pairs with survivors: the only ones visited
    hit_sv, hit_pair, pair_off, width, text_off, buf, fold_off, fold, n3, n5, n_wc, n_pair, strict = run_kernel(
        _chunk_hits_kernel, a.i_start.shape[0], parallel,
        queries.letters, queries.codes, queries.offsets, references.letters, references.codes, references.offsets,
        pairs.shape[0], live, pairs[live, 0], pairs[live, 1], live_start, live_stop, a.i_start, a.j_start, a.i_end,
        a.j_end, a.op_start, a.op_end, a.ops, MAP_CHARS, _LINKER_BYTES,
    )
    score, query_start, query_end, ref_start, ref_end, aln_length = run_kernel(
        _hit_positions, hit_sv.shape[0], parallel, hit_sv, hit_pair, pairs, queries.offsets, a.score, a.i_start,
        a.i_end, a.j_start, a.j_end, a.op_start, a.op_end, n3, n5)
    return HitTable(
        pair=hit_pair, pair_off=pair_off, score=score, query_start=query_start, query_end=query_end,
        ref_start=ref_start, ref_end=ref_end, aln_length=aln_length, n_wc=n_wc, n_paired=n_pair, width=width,
        text_off=text_off, text=buf, fold_off=fold_off, fold=fold, strict_ok=strict,
    )
