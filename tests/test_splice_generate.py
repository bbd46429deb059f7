"""The generator of realistic spliced-alignment cases: seeded, shaped like the paper's data."""
from __future__ import annotations

import numpy as np

from splice_generate import il1rapl1_like_case, mutate, paper_like_cases


def test_paper_like_set_is_deterministic_and_shaped_like_tables_1_2():
    a = paper_like_cases(1010, seed=0)
    b = paper_like_cases(1010, seed=0)
    assert len(a) == 1010
    assert all(np.array_equal(x.target, y.target) and np.array_equal(x.exons, y.exons) for x, y in zip(a[:50], b[:50]))
    bases = {id(c.base): c for c in a}.values()
    n_exons = np.array([len(c.exons) for c in bases])
    exon_len = np.concatenate([c.exons[:, 1] - c.exons[:, 0] for c in bases])
    base_len = np.array([c.base.size for c in bases])
    targets = np.array([c.target.size for c in a])
    assert 2 <= n_exons.min() and n_exons.max() <= 622 and 35 <= n_exons.mean() <= 75
    assert 1 <= exon_len.min() and exon_len.max() <= 4778 and 110 <= exon_len.mean() <= 190
    assert 30_000 <= base_len.mean() <= 55_000 and base_len.max() <= 575_746
    assert 1_100 <= targets.mean() <= 1_900
    assert 3.5 <= 1010 / len(bases) <= 5
    for c in list(bases)[:40]:
        assert np.all(c.exons[:, 0] < c.exons[:, 1]) and c.exons.max() <= c.base.size
        true = c.exons[c.true_exons]
        assert np.all(true[:-1, 1] <= true[1:, 0])  # the gene's exons form a chain


def test_il1rapl1_like_dimensions():
    c = il1rapl1_like_case(seed=0)
    assert c.base.size == 2_168_787 and len(c.exons) == 1878
    assert abs(c.target.size - 2355) < 60


def test_mutate_rates():
    rng = np.random.default_rng(1)
    seq = rng.integers(0, 4, 20_000).astype(np.uint8)
    same = mutate(rng, seq, 0.1, 0.0)
    assert same.size == seq.size and 0.08 < np.mean(same != seq) < 0.12
    assert np.array_equal(mutate(rng, seq, 0.0, 0.0), seq)
    assert mutate(rng, seq, 0.0, 0.01).size != seq.size


def test_wide_case_clusters_overlap_pairwise():
    """Exons of a cluster all share its middle position, so a chain takes at most one per cluster."""
    from splice_generate import wide_case

    g = wide_case(target_length=50_000, groups=4, exons_per_group=10, exon_mean=80, seed=3)
    assert g.target.size == 50_000 and len(g.exons) == 40 and len(g.true_exons) == 4
    assert np.all(g.exons[:, 0] < g.exons[:, 1]) and g.exons.max() <= g.base.size
    order = np.argsort(g.exons[:, 0], kind="stable")
    clusters = np.split(g.exons[order], 4)
    for cluster in clusters:
        assert cluster[:, 0].max() < cluster[:, 1].min()  # a common position
    true = g.exons[g.true_exons]
    assert np.all(true[:-1, 1] <= true[1:, 0])
