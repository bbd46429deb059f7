"""Per-pair post-processing shared by every engine (spec §7.2-§9).

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
from numba import njit

from gamut.scan.alignments import OP_MATCH, OP_QGAP, PairAlignments
from gamut.scan.alphabet import MAP_CHARS

#: Two reported ranges may share at most this many reference positions (spec §7.2).
MAX_REFERENCE_OVERLAP = 6
#: miRanda joins miRNA and target with seven X letters before folding (spec §9).
LINKER = "XXXXXXX"
#: Energy used for filtering and summing with -noenergy (spec §9).
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


def strict_seed_ok(query_line: str, map_line: str, n5: int, n3: int) -> bool:
    """Strict mode (spec §8): miRNA positions 2-8 all Watson-Crick paired, without gaps."""
    body = len(query_line) - n3 - n5
    s = query_line[len(query_line) - n5 :] + query_line[n3 : n3 + body][::-1] + query_line[:n3]
    m = " " * n5 + map_line[n3 : n3 + body][::-1] + " " * n3
    p = paired = wc = gaps = 0
    for letter, mark in zip(s, m):
        if letter != "-":
            p += 1
        if 2 <= p <= 8:
            paired += mark != " "
            wc += mark == "|"
            gaps += letter == "-"
        if p >= 8:
            break
    return paired >= 7 and wc >= 7 and gaps == 0


def pair_hits(
    query_id: str,
    query_seq: bytes,
    query_codes: np.ndarray,
    reference_id: str,
    reference_seq: bytes,
    reference_codes: np.ndarray,
    alignments: PairAlignments,
) -> list[Hit]:
    """Apply the overlap rule to a pair's survivors and build each kept hit's strings (spec §7).

    ``*_codes`` are the sequences' class codes (:func:`gamut.scan.alphabet.encode`), 5'->3'.
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
                strict_ok=strict_seed_ok(query_line, map_line, L - i_end, i0),
            )
        )
    return hits


def mark_reported(hits: list[Hit], energy_threshold: float, strict: bool) -> None:
    """Set ``reported``: energy below the threshold and, in strict mode, the seed rule (spec §9)."""
    for hit in hits:
        hit.reported = hit.energy < energy_threshold and (hit.strict_ok or not strict)


# --------------------------------------------------------------------------------------------
# The same post-processing for a whole chunk at once: one Numba pass over flat arrays, then a
# thin loop that builds the Hit objects. Results are identical to calling pair_hits per pair.
# --------------------------------------------------------------------------------------------

_GAP, _SPACE = ord("-"), ord(" ")
_WC, _WOBBLE = ord("|"), ord(":")
_LINKER_BYTES = np.frombuffer(LINKER.encode("ascii"), np.uint8)


@dataclass(frozen=True)
class SequenceSet:
    """Sequences concatenated once for :func:`chunk_hits`: letters (uint8), class codes (int8), offsets."""

    ids: list[str]
    letters: np.ndarray
    codes: np.ndarray
    offsets: np.ndarray  # int64, len(ids) + 1
    is_ascii: bool  # every letter is ASCII (case mapping bytewise equals str.upper/lower)

    @classmethod
    def build(cls, ids: list[str], sequences: list[bytes], codes: list[np.ndarray]) -> "SequenceSet":
        joined = b"".join(sequences)
        offsets = np.zeros(len(sequences) + 1, np.int64)
        np.cumsum([len(s) for s in sequences], out=offsets[1:])
        flat_codes = np.concatenate(codes).astype(np.int8) if codes else np.zeros(0, np.int8)
        return cls(list(ids), np.frombuffer(joined, np.uint8), flat_codes, offsets, joined.isascii())

    def sequence(self, k: int) -> bytes:
        return self.letters[self.offsets[k] : self.offsets[k + 1]].tobytes()

    def class_codes(self, k: int) -> np.ndarray:
        return self.codes[self.offsets[k] : self.offsets[k + 1]]


@njit(cache=True, nogil=True)
def _upper(c):
    return c - 32 if 97 <= c <= 122 else c


@njit(cache=True, nogil=True)
def _lower(c):
    return c + 32 if 65 <= c <= 90 else c


@njit(cache=True, nogil=True)
def _strict_seed_ok(buf, qline, mline, width, n5, n3):
    """:func:`strict_seed_ok` on the query and map lines at ``buf[qline:]``, ``buf[mline:]``."""
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


@njit(cache=True, nogil=True)
def _chunk_hits_kernel(q_letters, q_codes, q_off, r_letters, r_codes, r_off, pair_q, pair_r, sv_start, sv_stop,
                       i_start, j_start, i_end, j_end, op_start, op_end, ops, map_chars, linker):
    """Overlap rule and hit strings for all pairs of a chunk (see :func:`pair_hits`).

    Pair p's survivors are ``sv_start[p]:sv_stop[p]``; survivor k's columns ``ops[op_start[k]:op_end[k]]``.
    Returns, per kept hit in order: its survivor, its pair's hit offsets, and per hit the text
    ``buf[text_off[h]:text_off[h+1]]`` = query line + map line + reference line (``width`` each) +
    fold string, ``n3``, ``n5``, Watson-Crick and paired column counts and the strict flag.
    """
    n_pairs = pair_q.shape[0]
    max_sv = 0
    total_sv = 0
    for p in range(n_pairs):
        max_sv = max(max_sv, sv_stop[p] - sv_start[p])
        total_sv += sv_stop[p] - sv_start[p]
    acc_s = np.empty(max_sv, np.int64)
    acc_e = np.empty(max_sv, np.int64)
    hit_sv = np.empty(total_sv, np.int64)
    pair_hit_off = np.zeros(n_pairs + 1, np.int64)
    n_hits = 0
    for p in range(n_pairs):  # pass 1: the reference-overlap rule
        n_acc = 0
        for k in range(sv_start[p], sv_stop[p]):
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
        pair_hit_off[p + 1] = n_hits
    hit_sv = hit_sv[:n_hits]
    hit_pair = np.empty(n_hits, np.int64)
    width = np.empty(n_hits, np.int64)
    text_off = np.zeros(n_hits + 1, np.int64)
    for p in range(n_pairs):
        for h in range(pair_hit_off[p], pair_hit_off[p + 1]):
            hit_pair[h] = p
            k = hit_sv[h]
            L = q_off[pair_q[p] + 1] - q_off[pair_q[p]]
            i0 = i_start[k]
            ie = i_end[k]
            width[h] = i0 + (op_end[k] - op_start[k]) + (L - ie)
            fold = L + linker.shape[0] + (L - ie) + (j_end[k] - j_start[k]) + i0
            text_off[h + 1] = text_off[h] + 3 * width[h] + fold
    buf = np.empty(text_off[n_hits], np.uint8)
    n3_out = np.empty(n_hits, np.int64)
    n5_out = np.empty(n_hits, np.int64)
    n_wc = np.empty(n_hits, np.int64)
    n_pair = np.empty(n_hits, np.int64)
    strict = np.empty(n_hits, np.bool_)
    for h in range(n_hits):  # pass 2: the strings
        p = hit_pair[h]
        k = hit_sv[h]
        qo = q_off[pair_q[p]]
        L = q_off[pair_q[p] + 1] - qo
        ro = r_off[pair_r[p]]
        R = r_off[pair_r[p] + 1] - ro
        last = qo + L - 1  # qrev[i] is q_letters[last - i]
        i0 = i_start[k]
        j0 = j_start[k]
        ie = i_end[k]
        je = j_end[k]
        w = width[h]
        qa = text_off[h]
        ma = qa + w
        ra = ma + w
        fa = ra + w
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
        f = fa
        for x in range(w):
            if x < i0 or x >= body_end or buf[qa + x] != _GAP:
                buf[f] = buf[qa + x]
                f += 1
        for x in range(linker.shape[0]):
            buf[f] = linker[x]
            f += 1
        for x in range(w - 1, -1, -1):
            if x < i0 or x >= body_end or buf[ra + x] != _GAP:
                buf[f] = buf[ra + x]
                f += 1
        n3_out[h] = n3
        n5_out[h] = n5
        n_wc[h] = wc
        n_pair[h] = pr
        strict[h] = _strict_seed_ok(buf, qa, ma, w, L - ie, i0)
    return hit_sv, hit_pair, pair_hit_off, width, text_off, buf, n3_out, n5_out, n_wc, n_pair, strict


def _flatten(alignments: Sequence[PairAlignments]) -> tuple[np.ndarray, ...]:
    """All pairs' survivors as flat arrays: per pair a survivor range, per survivor its fields.

    GPU results share their batch's arrays (``as_batch``; a whole chunk at once through
    ``batch_ranges`` when the sequence offers it), which are used directly rather than cut
    into seven slices per pair.
    """
    ranges = getattr(alignments, "batch_ranges", None)
    if ranges is not None:
        batches, batch_of, lo, hi = ranges()
        sizes = np.array([int(bt[0].shape[0]) for bt in batches], np.int64)
        base = np.cumsum(sizes) - sizes
        has = batch_of >= 0
        where = base[np.maximum(batch_of, 0)] if batches else np.zeros(len(batch_of), np.int64)
        starts = np.where(has, where + lo, 0).astype(np.int64)
        stops = np.where(has, where + hi, 0).astype(np.int64)
    else:
        n = len(alignments)
        sv_start = [0] * n
        sv_stop = [0] * n
        index: dict[int, int] = {}  # id(batch) -> position in ``batches``
        batches = []
        total = 0
        for p, found in enumerate(alignments):
            if len(found) == 0:
                continue
            batch, a, b = found.as_batch()
            offset = index.get(id(batch))
            if offset is None:
                offset = index[id(batch)] = total
                batches.append(batch)
                total += int(batch[0].shape[0])
            sv_start[p] = offset + a
            sv_stop[p] = offset + b
        starts, stops = np.asarray(sv_start, np.int64), np.asarray(sv_stop, np.int64)
    if not batches:
        z = np.zeros(0, np.int64)
        return starts, stops, z, z, z, z, z, z, z, np.zeros(0, np.uint8)
    cols = [np.concatenate([bt[f] for bt in batches]).astype(np.int64, copy=False) for f in range(5)]
    # Column offsets: each batch's own, shifted by where its ops start in the concatenation.
    n_ops = np.array([bt[6].shape[0] for bt in batches], np.int64)
    shift = np.repeat(np.cumsum(n_ops) - n_ops, [bt[0].shape[0] for bt in batches])
    op_start = np.concatenate([bt[5][:-1] for bt in batches]).astype(np.int64) + shift
    op_end = np.concatenate([bt[5][1:] for bt in batches]).astype(np.int64) + shift
    ops = np.concatenate([bt[6] for bt in batches]).astype(np.uint8, copy=False)
    return (starts, stops, *cols, op_start, op_end, ops)


def chunk_hits(
    queries: SequenceSet, references: SequenceSet, pairs: np.ndarray, alignments: Sequence[PairAlignments]
) -> list[list[Hit]]:
    """:func:`pair_hits` for every (query index, reference index) in ``pairs`` at once, same results.

    ``alignments[p]`` are pair p's survivors. ``references`` holds the sequences as miRanda sees
    them (after -trim).
    """
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    if pairs.shape[0] != len(alignments):
        raise ValueError(f"{pairs.shape[0]} pairs but {len(alignments)} alignment results")
    if not (queries.is_ascii and references.is_ascii):  # bytewise case mapping would differ: the oracle
        return [
            pair_hits(queries.ids[q], queries.sequence(q), queries.class_codes(q),
                      references.ids[r], references.sequence(r), references.class_codes(r), found)
            for (q, r), found in zip(pairs.tolist(), alignments)
        ]
    sv_start, sv_stop, score, i_end, j_end, i_start, j_start, op_start, op_end, ops = _flatten(alignments)
    pq = np.ascontiguousarray(pairs[:, 0])
    pr = np.ascontiguousarray(pairs[:, 1])
    hit_sv, hit_pair, pair_off, width, text_off, buf, n3, n5, n_wc, n_pair, strict = _chunk_hits_kernel(
        queries.letters, queries.codes, queries.offsets, references.letters, references.codes, references.offsets,
        pq, pr, sv_start, sv_stop, i_start, j_start, i_end, j_end, op_start, op_end, ops, MAP_CHARS, _LINKER_BYTES,
    )
    qi = pq[hit_pair]
    L = queries.offsets[qi + 1] - queries.offsets[qi]
    ie, i0 = i_end[hit_sv], i_start[hit_sv]
    length = op_end[hit_sv] - op_start[hit_sv]
    safe = np.maximum(length, 1)
    identity = np.where(length > 0, 100.0 * n_wc / safe, 0.0)
    similarity = np.where(length > 0, 100.0 * n_pair / safe, 0.0)
    b0 = text_off[:-1]
    b1 = b0 + width
    b2 = b1 + width
    b3 = b2 + width
    text = buf.tobytes().decode("latin-1")
    qids, rids = queries.ids, references.ids
    hits = [
        Hit(qids[q], rids[r], s, qs, qe, rs, re, n, idn, sim, text[a:b], text[b:c], text[c:d], text[d:e], ok)
        for q, r, s, qs, qe, rs, re, n, idn, sim, a, b, c, d, e, ok in zip(
            qi.tolist(), pr[hit_pair].tolist(), score[hit_sv].tolist(), (L - ie + 1).tolist(), (L - i0 + 1).tolist(),
            (j_start[hit_sv] + 1 - n3).tolist(), (j_end[hit_sv] + n5).tolist(), length.tolist(),
            identity.tolist(), similarity.tolist(), b0.tolist(), b1.tolist(), b2.tolist(), b3.tolist(),
            text_off[1:].tolist(), strict.tolist(),
        )
    ]
    offs = pair_off.tolist()
    return [hits[a:b] for a, b in zip(offs[:-1], offs[1:])]
