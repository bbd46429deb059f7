"""Realistic synthetic spliced-alignment cases (seeded, fast) for tests and benchmarks.

A gene of true exons separated by introns sits in random flanking sequence; candidate exons are
the true ones plus decoys (random intervals, and shifted copies of true exons that overlap them,
as gene finders report); each target is the true exons' concatenation with substitutions and
small indels, like a homologous cDNA. Size distributions follow Nolasco & Moreano's Tables I-II:
base 2,848-575,746 nt (mean ~42 kb), 2-622 exons (mean ~55), exon length 1-4,778 (mean ~149),
1-5 targets per base (mean ~4.2), target 189-8,652 nt (mean ~1,460).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GeneratedCase:
    """A generated case: base and target as symbol codes, exons as (start, end) rows, true exon rows."""

    name: str
    base: np.ndarray  # uint8 codes 0..3
    exons: np.ndarray  # int64 (K, 2), 0-based half-open, in random order
    target: np.ndarray  # uint8 codes 0..3
    true_exons: np.ndarray  # indices into exons of the gene's exons, in order


def _lognormal_int(rng: np.random.Generator, mean: float, sigma: float, lo: int, hi: int, size=None):
    mu = np.log(mean) - sigma**2 / 2
    return np.clip(np.rint(rng.lognormal(mu, sigma, size)), lo, hi).astype(np.int64)


def mutate(rng: np.random.Generator, seq: np.ndarray, substitution: float, indel: float) -> np.ndarray:
    """``seq`` with random substitutions (to a different base) and 1-3 nt insertions/deletions."""
    out = seq.copy()
    hits = rng.random(out.size) < substitution
    out[hits] = (out[hits] + rng.integers(1, 4, int(hits.sum()))) % 4
    events = np.flatnonzero(rng.random(out.size) < indel)
    if events.size == 0:
        return out
    pieces = []
    prev = 0
    for pos in events:
        pieces.append(out[prev:pos])
        size = int(rng.integers(1, 4))
        if rng.random() < 0.5:
            pieces.append(rng.integers(0, 4, size).astype(np.uint8))
            prev = pos
        else:
            prev = min(out.size, pos + size)
    pieces.append(out[prev:])
    return np.concatenate(pieces).astype(np.uint8)


def generate_base(
    rng: np.random.Generator,
    *,
    base_length: int,
    n_exons: int,
    gene_length: int,
    exon_mean: float = 149.0,
    name: str = "base",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(base, exons, true_exons)``: a gene whose exons total about ``gene_length`` nt, plus decoys.

    ``base_length`` grows if the gene does not fit; ``exons`` are shuffled.
    """
    lengths = []
    while sum(lengths) < gene_length or len(lengths) < 1:
        lengths.append(int(_lognormal_int(rng, exon_mean, 0.8, 20, 4778)))
    excess = sum(lengths) - gene_length
    if excess > 0 and lengths[-1] - excess >= 10:
        lengths[-1] -= excess
    n_true = len(lengths)
    introns = _lognormal_int(rng, 1500.0, 1.0, 60, 200_000, n_true + 1)
    span = sum(lengths) + int(introns[1:-1].sum())
    base_length = max(base_length, span + 200)
    flank = base_length - span
    left = int(rng.integers(0, flank + 1))
    base = rng.integers(0, 4, base_length).astype(np.uint8)
    true_rows = []
    pos = left
    for index, length in enumerate(lengths):
        true_rows.append((pos, pos + length))
        pos += length + (int(introns[index + 1]) if index + 1 < n_true else 0)
    n_decoys = max(0, n_exons - n_true)
    n_shifted = n_decoys // 3
    decoys = []
    for _ in range(n_shifted):  # alternative boundaries of a true exon (overlapping it)
        s, e = true_rows[int(rng.integers(0, n_true))]
        s2 = min(base_length - 1, max(0, s + int(rng.integers(-60, 61))))
        e2 = min(base_length, e + int(rng.integers(-60, 61)))
        if e2 <= s2:
            e2 = min(base_length, s2 + 1 + int(rng.integers(0, 50)))
        decoys.append((s2, e2))
    lens = _lognormal_int(rng, exon_mean, 1.0, 1, 4778, n_decoys - n_shifted)
    for length in lens:
        length = int(min(length, base_length))
        s = int(rng.integers(0, base_length - length + 1))
        decoys.append((s, s + length))
    rows = np.asarray(true_rows + decoys, np.int64).reshape(-1, 2)
    perm = rng.permutation(rows.shape[0])
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size)
    return base, rows[perm], inverse[:n_true]


def make_target(rng: np.random.Generator, base: np.ndarray, exons: np.ndarray, true_exons: np.ndarray,
                substitution: float = 0.1, indel: float = 0.005) -> np.ndarray:
    """A homologous cDNA: the true exons' concatenation, mutated."""
    gene = np.concatenate([base[exons[k, 0]:exons[k, 1]] for k in true_exons])
    return mutate(rng, gene, substitution, indel)


def paper_like_cases(n_cases: int = 1010, seed: int = 0, scale: float = 1.0) -> list[GeneratedCase]:
    """``n_cases`` cases shaped like the paper's data set (1-5 targets per base).

    ``scale`` < 1 shrinks base, exon and target lengths (quick tests); 1.0 follows Tables I-II.
    """
    rng = np.random.default_rng(seed)
    cases: list[GeneratedCase] = []
    b = 0
    while len(cases) < n_cases:
        base_length = int(_lognormal_int(rng, 42_000 * scale, 1.0, max(50, int(2848 * scale)), int(575_746 * scale)))
        n_exons = int(_lognormal_int(rng, 55, 1.0, 2, 622))
        gene_length = int(_lognormal_int(rng, 1460 * scale, 0.6, max(10, int(189 * scale)), int(8652 * scale)))
        base, exons, true_exons = generate_base(
            rng, base_length=base_length, n_exons=n_exons, gene_length=gene_length,
            exon_mean=max(5.0, 149.0 * scale), name=f"base{b}")
        n_targets = int(rng.choice([1, 2, 3, 4, 5], p=[0.05, 0.05, 0.1, 0.2, 0.6]))
        for t in range(n_targets):
            if len(cases) == n_cases:
                break
            target = make_target(rng, base, exons, true_exons, substitution=float(rng.uniform(0.03, 0.2)))
            cases.append(GeneratedCase(f"base{b}_t{t}", base, exons, target, true_exons))
        b += 1
    return cases


def il1rapl1_like_case(seed: int = 0) -> GeneratedCase:
    """A case sized like the paper's IL1RAPL1 run: 2,168,787 nt base, 1,878 exons, ~2,355 nt target."""
    rng = np.random.default_rng(seed)
    base, exons, true_exons = generate_base(
        rng, base_length=2_168_787, n_exons=1878, gene_length=2355, name="IL1RAPL1-like")
    target = make_target(rng, base, exons, true_exons, substitution=0.1, indel=0.003)
    return GeneratedCase("IL1RAPL1-like", base, exons, target, true_exons)


def wide_case(target_length: int = 300_000, groups: int = 8, exons_per_group: int = 40, exon_mean: float = 150.0,
              seed: int = 0) -> GeneratedCase:
    """A very wide case (a target of ``target_length`` nt) whose traceback stays affordable.

    The base holds ``groups`` clusters of ``exons_per_group`` candidate exons that all contain the
    cluster's middle position, so that they overlap pairwise and a chain takes at most one exon
    per cluster: the traceback recomputes at most ``groups`` exons over the target, while the
    forward pass sweeps every exon (``groups x exons_per_group`` of them) over all columns. The
    target is the clusters' first (true) exons, mutated, separated by random sequence.
    """
    rng = np.random.default_rng(seed)
    half = int(exon_mean)  # an exon reaches up to this far on either side of the middle
    spacer = _lognormal_int(rng, 2000.0, 0.5, 200, 20_000, groups + 1)
    base_length = int(spacer.sum()) + groups * 2 * half
    base = rng.integers(0, 4, base_length).astype(np.uint8)
    rows, true_rows = [], []
    pos = int(spacer[0])
    for g in range(groups):
        middle = pos + half
        lefts = rng.integers(1, half + 1, exons_per_group)
        rights = rng.integers(1, half + 1, exons_per_group)
        true_rows.append(len(rows))
        rows.extend((middle - int(a), middle + int(b)) for a, b in zip(lefts, rights))
        pos += 2 * half + int(spacer[g + 1])
    exons = np.asarray(rows, np.int64)
    genes = [mutate(rng, base[exons[k, 0]:exons[k, 1]], 0.05, 0.002) for k in true_rows]
    filler = max(0, target_length - sum(x.size for x in genes))
    cuts = np.sort(rng.integers(0, filler + 1, groups))
    pieces, prev = [], 0
    for cut, gene in zip(cuts, genes):
        pieces += [rng.integers(0, 4, int(cut) - prev).astype(np.uint8), gene]
        prev = int(cut)
    pieces.append(rng.integers(0, 4, filler - prev).astype(np.uint8))
    perm = rng.permutation(exons.shape[0])
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size)
    return GeneratedCase(f"wide{target_length}", base, exons[perm], np.concatenate(pieces),
                         inverse[np.asarray(true_rows)])
