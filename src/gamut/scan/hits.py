"""Per-pair post-processing shared by every engine (spec §7.2-§9).

From an engine's survivors (:class:`PairAlignments`) to hits: the reference-overlap rule, the
alignment strings with flanks, coordinates and statistics, strict mode and the fold string used
for the duplex energy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
