"""Independent helpers for the spliced-alignment tests: plain global alignment and brute force."""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import strategies as st

from gamut.splicing import cpu
from gamut.splicing.model import ScoreParams, make_case


def global_score(a, b, matrix, gap) -> int:
    """Needleman-Wunsch score of code sequences ``a`` (base side) and ``b`` (target), linear gaps."""
    n = len(b)
    prev = [j * gap for j in range(n + 1)]
    for x in a:
        cur = [prev[0] + gap] + [0] * n
        for j in range(1, n + 1):
            cur[j] = max(prev[j - 1] + int(matrix[x, b[j - 1]]), prev[j] + gap, cur[j - 1] + gap)
        prev = cur
    return prev[n]


def brute_force(base, exons, target, matrix, gap) -> int:
    """Best score over every non-empty chain of exons (increasing, non-overlapping), by enumeration."""
    order = sorted(range(len(exons)), key=lambda k: exons[k])
    best = None
    for r in range(1, len(exons) + 1):
        for subset in itertools.combinations(order, r):
            if any(exons[subset[i]][1] > exons[subset[i + 1]][0] for i in range(r - 1)):
                continue
            seq = np.concatenate([np.asarray(base[exons[k][0]:exons[k][1]]) for k in subset])
            score = global_score(seq, target, matrix, gap)
            best = score if best is None else max(best, score)
    return best


def rescore(result, base, target, matrix, gap) -> int:
    """Score of a result's alignment columns, checking they spell the chain and the target."""
    aln = result.alignment
    chain_positions = [p for s, e in result.exons for p in range(s, e)]
    assert [p for p in aln.base_pos.tolist() if p >= 0] == chain_positions
    assert [p for p in aln.target_pos.tolist() if p >= 0] == list(range(len(target)))
    total = 0
    for b, t in zip(aln.base_pos.tolist(), aln.target_pos.tolist()):
        total += gap if b < 0 or t < 0 else int(matrix[base[b], target[t]])
    return total


@st.composite
def case_lists(draw, max_target=90, max_exon=14):
    """1-4 small cases sharing the scores: ties (tiny alphabets, match 0), N symbols, custom
    matrices, one-exon cases, overlapping and duplicate exons."""
    alphabet = draw(st.sampled_from([1, 2, 4, 5]))
    if draw(st.booleans()):
        matrix = np.asarray(draw(st.lists(st.integers(-4, 4), min_size=16, max_size=16))).reshape(4, 4)
        params = ScoreParams(gap=draw(st.integers(-4, -1)), matrix=matrix)
    else:
        params = ScoreParams(match=draw(st.integers(0, 3)), mismatch=draw(st.integers(-3, 1)),
                             gap=draw(st.integers(-3, -1)))
    cases = []
    for index in range(draw(st.integers(1, 4))):
        m = draw(st.integers(1, 50))
        base = np.asarray(draw(st.lists(st.integers(0, alphabet - 1), min_size=m, max_size=m)), np.uint8)
        exons = []
        for _ in range(draw(st.integers(1, 7))):
            start = draw(st.integers(0, m - 1))
            exons.append((start, draw(st.integers(start + 1, min(m, start + max_exon)))))
        if draw(st.booleans()):
            exons.append(exons[0])  # a duplicate
        n = draw(st.integers(1, max_target))
        target = np.asarray(draw(st.lists(st.integers(0, alphabet - 1), min_size=n, max_size=n)), np.uint8)
        cases.append(make_case(base, exons, target, params, name=f"h{index}"))
    return cases, params


def reference_fields(case, chain, ops):
    """What a result holds, from a traceback's sorted chain and ops, computed per column in plain
    Python (the definitions): ``(base_pos, target_pos, base_text, target_text, spans)``."""
    letters = "ACGTN"
    positions = [p for k in chain for p in range(int(case.starts[k]), int(case.ends[k]))]
    bpos, tpos, b_text, t_text = [], [], [], []
    b = t = 0
    for op in ops.tolist():
        if op != 2:  # consumes a base symbol
            bpos.append(positions[b])
            b_text.append(letters[case.base[positions[b]]])
            b += 1
        else:
            bpos.append(-1)
            b_text.append("-")
        if op != 1:  # consumes a target symbol
            tpos.append(t)
            t_text.append(letters[case.target[t]])
            t += 1
        else:
            tpos.append(-1)
            t_text.append("-")
    spans = []
    for k in chain:
        inside = [i for i, p in enumerate(bpos) if case.starts[k] <= p < case.ends[k]]
        aligned = [tpos[i] for i in inside if tpos[i] >= 0]
        if aligned:
            spans.append((min(aligned), max(aligned) + 1))
        else:
            before = [x for x in tpos[:inside[0]] if x >= 0]
            spans.append((max(before) + 1 if before else 0,) * 2)
    return bpos, tpos, "".join(b_text), "".join(t_text), spans


def reference_cigar(bpos: list[int], tpos: list[int]) -> str:
    """A plain walk of alignment columns: M (both), D (base only), I (target only), N for a jump
    on the base between two base columns; runs merged."""
    parts: list[list] = []

    def add(op: str, count: int) -> None:
        if count > 0:
            if parts and parts[-1][0] == op:
                parts[-1][1] += count
            else:
                parts.append([op, count])

    previous = -1
    for b, t in zip(bpos, tpos):
        if b >= 0:
            if previous >= 0:
                add("N", b - previous - 1)
            previous = b
            add("M" if t >= 0 else "D", 1)
        else:
            add("I", 1)
    return "".join(f"{count}{op}" for op, count in parts)


def insertion_cases(params, seed, count=6):
    """Cases whose optimal alignment has long runs of target gaps (a random insertion of hundreds
    of symbols between two exons, or inside one) and of base gaps: horizontal walks across many
    windows and strips, with ties in the gap-only regions."""
    rng = np.random.default_rng(seed)
    cases = []
    for index in range(count):
        base = rng.integers(0, 4, 1200).astype(np.uint8)
        exons = [(50, 260), (300, 340), (400, 700), (690, 720), (760, 1100)]
        pieces = [base[50:260], rng.integers(0, 4, int(rng.integers(200, 900))).astype(np.uint8),
                  base[400:550], rng.integers(0, 2, int(rng.integers(100, 500))).astype(np.uint8), base[550:640],
                  base[800:1100]]  # base[640:700] and [760:800] against gaps
        if index % 2:
            pieces.insert(0, rng.integers(0, 4, 300).astype(np.uint8))  # lead gaps
        cases.append(make_case(base, exons, np.concatenate(pieces), params, name=f"ins{index}"))
        # An insertion right after the second exon's first symbol: target gaps in its row 1.
        insertion = rng.integers(0, 4, int(rng.integers(300, 700))).astype(np.uint8)
        target = np.concatenate([base[100:400], base[500:501], insertion, base[501:800]])
        cases.append(make_case(base, [(100, 400), (500, 800)], target, params, name=f"row1_{index}"))
    return cases


def short_exon_cases(params, seed, count=8):
    """Cases of many 1-5 symbol exons on small alphabets: chains that enter exons at almost every
    target column (so at strip boundaries too), with many ties."""
    rng = np.random.default_rng(seed)
    cases = []
    for index in range(count):
        m = int(rng.integers(150, 400))
        alphabet = int(rng.integers(2, 5))
        base = rng.integers(0, alphabet, m).astype(np.uint8)
        exons = []
        for _ in range(int(rng.integers(20, 80))):
            start = int(rng.integers(0, m - 1))
            exons.append((start, min(m, start + int(rng.integers(1, 6)))))
        target = rng.integers(0, alphabet, int(rng.integers(100, 400))).astype(np.uint8)
        cases.append(make_case(base, exons, target, params, name=f"short{seed}_{index}"))
    return cases


def assert_tracebacks_match_cpu(tracebacks, cases, params) -> None:
    """Every case's score, exon chain and operations in ``tracebacks`` (a device or host-built
    kernel's) equal the CPU engine's."""
    for c, case in enumerate(cases):
        last, pred = cpu.forward_fast(case, params.matrix, params.gap)
        score, chain, ops = cpu.traceback(case, params.matrix, params.gap, last, pred)
        assert tracebacks.score[c] == score, case.name
        np.testing.assert_array_equal(tracebacks.chain[tracebacks.chain_off[c]:tracebacks.chain_off[c + 1]], chain,
                                      err_msg=case.name)
        np.testing.assert_array_equal(tracebacks.ops[tracebacks.ops_off[c]:tracebacks.ops_off[c + 1]], ops,
                                      err_msg=case.name)
