"""Nussinov folding on the CPU: every engine against brute force, each other and the traceback."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gamut
from gamut.errors import DeviceError, InputError, UsageError
from gamut.folding.engines import ENGINES, choose_engine
from gamut.folding.cpu import fill_matrix
from gamut.folding.sequence import encode
from gamut.folding.tiled import fill_tiled, tile_count, tiled_value
from gamut.io import read_fasta

from fold_helpers import brute_force_pairs, check_structure, slow_interval_pairs, slow_max_pairs

CPU_ENGINES = tuple(name for name, engine in ENGINES.items() if engine.device == "cpu")

rna_text = st.text(alphabet="ACGU", min_size=0, max_size=120)


def random_rna(n: int, seed: int) -> str:
    return "".join(np.random.default_rng(seed).choice(list("ACGU"), n))


@settings(max_examples=60, deadline=None)
@given(seq=st.text(alphabet="ACGUN", min_size=1, max_size=11), min_loop=st.integers(0, 4))
def test_engines_match_brute_force_on_tiny_sequences(seq, min_loop):
    expected = brute_force_pairs(seq, min_loop)
    for engine in CPU_ENGINES:
        result = gamut.fold(seq, min_loop=min_loop, engine=engine)
        assert result.pairs == expected, engine
        check_structure(seq, result.structure, result.pairs, min_loop)


@settings(max_examples=60, deadline=None)
@given(seq=rna_text, min_loop=st.integers(0, 5))
def test_engines_agree_and_tracebacks_are_optimal(seq, min_loop):
    expected = slow_max_pairs(seq, min_loop)
    for engine in CPU_ENGINES:
        result = gamut.fold(seq, min_loop=min_loop, engine=engine)
        assert result.pairs == expected, engine
        check_structure(seq, result.structure, result.pairs, min_loop)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 300), min_loop=st.integers(0, 4), tile=st.sampled_from([1, 2, 5, 16, 64]),
       seed=st.integers(0, 2**32 - 1))
def test_tiled_triangle_equals_dense_matrix(n, min_loop, tile, seed):
    codes = np.random.default_rng(seed).integers(0, 5, n).astype(np.uint8)
    dense = fill_matrix(codes, min_loop, "cpu2")
    tiles = fill_tiled(codes, min_loop, tile)
    nb, count = tile_count(n, tile)
    assert tiles.shape == (count, tile, tile)
    rows, cols = np.triu_indices(n)
    got = np.array([tiled_value(tiles, nb, i, j + 1) for i, j in zip(rows, cols)], dtype=np.int64)
    assert np.array_equal(got, dense[rows, cols].astype(np.int64))


@pytest.mark.parametrize("n", [1, 2, 3, 63, 64, 65, 128, 129, 777])
@pytest.mark.parametrize("min_loop", [0, 1, 3])
def test_engines_agree_at_tile_boundaries(n, min_loop):
    seq = random_rna(n, n * 10 + min_loop)
    results = [gamut.fold(seq, min_loop=min_loop, engine=e) for e in CPU_ENGINES]
    assert len({r.pairs for r in results}) == 1
    for r in results:
        check_structure(seq, r.structure, r.pairs, min_loop)


def test_engines_agree_at_2000_nt():
    seq = random_rna(2000, 7)
    results = [gamut.fold(seq, engine=e) for e in CPU_ENGINES]
    assert len({r.pairs for r in results}) == 1
    assert len({r.structure for r in results}) == 1  # same matrix values, same traceback choices
    assert results[0].pairs > 500
    for r in results:
        check_structure(seq, r.structure, r.pairs, 1)


def test_real_rna(data_dir):
    records = list(read_fasta(data_dir / "fold" / "mirbase_hairpins.fa"))
    records += list(read_fasta(data_dir / "fold" / "sars-cov-2_5prime_1500.fa"))
    assert len(records) == 6
    for rec in records:
        for min_loop in (1, 3):
            results = [gamut.fold(rec.sequence, min_loop=min_loop, engine=e) for e in CPU_ENGINES]
            assert len({r.pairs for r in results}) == 1, rec.name
            for r in results:
                check_structure(rec.sequence, r.structure, r.pairs, min_loop)
        if len(rec.sequence) < 100:
            assert results[0].pairs == slow_max_pairs(rec.sequence, 3)


def test_papers_examples():
    # Chang et al. 2010: AAAGCUUU folds with 3 pairs without adjacent pairs (their optimum
    # 8 7 6 0 0 3 2 1; with GU pairs '.(((.)))' ties), and only as theirs when loops need 2 bases ...
    assert gamut.fold("AAAGCUUU", min_loop=1, engine="cpu1").pairs == 3
    assert gamut.fold("AAAGCUUU", min_loop=2, engine="cpu1").structure == "(((..)))"
    # ... while Durbin's original initialisation (min_loop=0) also pairs the adjacent G and C
    assert gamut.fold("AAAGCUUU", min_loop=0).structure == "(((())))"
    assert gamut.fold("GGGAAUCC", min_loop=1).pairs == 3


def test_letters():
    assert gamut.fold("GGGGAAACCCC", min_loop=3).pairs == 4
    assert gamut.fold("gggtaaaccct", min_loop=3).pairs == gamut.fold("GGGUAAACCCU", min_loop=3).pairs
    assert gamut.fold("NNNNNNNN").pairs == 0
    assert gamut.fold("GNNNNC", min_loop=3).structure == "(....)"
    assert gamut.fold("GNNNC", min_loop=3).pairs == 1 and gamut.fold("GNNC", min_loop=3).pairs == 0
    with pytest.raises(InputError, match="position 3"):
        gamut.fold("AC-GU")
    with pytest.raises(InputError, match="myrecord"):
        gamut.fold("ACX", name="myrecord")
    assert encode("ACGUT").tolist() == [0, 1, 2, 3, 3]


def test_empty_and_single():
    for engine in CPU_ENGINES:
        assert (gamut.fold("", engine=engine).pairs, gamut.fold("", engine=engine).structure) == (0, "")
        assert gamut.fold("G", engine=engine).structure == "."


def test_corner():
    seq = random_rna(150, 3)
    n = len(seq)
    best = slow_interval_pairs(seq, 2)
    expected = np.array([[best(a, n - 5 + b) for b in range(5)] for a in range(5)])
    for engine in CPU_ENGINES:
        result = gamut.fold(seq, min_loop=2, engine=engine, corner=5)
        assert np.array_equal(result.corner, expected), engine
        assert result.corner[0, 4] == result.pairs
        assert gamut.fold("ACGU", corner=10, engine=engine).corner.shape == (4, 4)


def test_result_object():
    result = gamut.fold("GGGAAACCC", min_loop=3)
    assert len(result) == 9 and result.min_loop == 3 and result.engine in CPU_ENGINES
    assert result.structure == "(((...)))" and result.pair_list() == [(0, 8), (1, 7), (2, 6)]
    assert len(gamut.fold("GGGAAACCC", min_loop=4).pair_list()) == 2
    no_tb = gamut.fold("GGGAAACCC", min_loop=3, traceback=False)
    assert no_tb.structure is None and no_tb.pairs == 3
    with pytest.raises(UsageError):
        no_tb.pair_list()


def test_options_are_checked():
    with pytest.raises(UsageError, match="min_loop"):
        gamut.fold("ACGU", min_loop=-1)
    with pytest.raises(UsageError, match="min_loop"):
        gamut.fold("ACGU", min_loop=1.5)
    with pytest.raises(UsageError, match="unknown fold engine"):
        gamut.fold("ACGU", engine="fast")
    with pytest.raises(UsageError, match="runs on the CPU"):
        gamut.fold("ACGU", engine="cpu2", device="cuda")
    with pytest.raises(UsageError):
        gamut.fold("ACGU", engine="gpu", device="cpu")
    with pytest.raises(UsageError, match="corner"):
        gamut.fold("ACGU", corner=-2)
    assert choose_engine("auto", "cpu") == "blocked"


def test_auto_device_uses_the_gpu_only_once_verified(monkeypatch):
    import gamut.cuda.device as device

    monkeypatch.setattr(device, "gpu_available", lambda: True)
    monkeypatch.setattr(device, "VERIFIED_GPU_ENGINES", frozenset())
    assert choose_engine("auto", "auto") == "blocked"
    assert choose_engine("auto", "cuda") == "gpu"
    monkeypatch.setattr(device, "VERIFIED_GPU_ENGINES", frozenset({"fold"}))
    assert choose_engine("auto", "auto") == "gpu"


def test_cuda_request_without_gpu_is_a_clear_error():
    from gamut.cuda import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(DeviceError, match="no CUDA GPU"):
        gamut.fold("ACGU", device="cuda")


def test_gpu_memory_arithmetic():
    from gamut.folding.gpu import max_length, triangle_bytes

    assert triangle_bytes(0) == 64 * 64 * 4
    assert 19.5e9 < triangle_bytes(100_000) < 20.1e9  # int32 triangle of n = 100,000 is 20 GB
    free_h100 = 79 * 2**30
    assert 195_000 < max_length(free_h100) < 210_000  # 2 n^2 bytes
    assert triangle_bytes(max_length(free_h100)) <= free_h100
    assert triangle_bytes(max_length(free_h100) + 64) > free_h100 * 0.99 - (64 << 20)


@pytest.mark.parametrize("band,chunks", [(1, 2), (2, 3), (5, 4), (13, 2)])
def test_multicore_bands_and_halos(band, chunks):
    from gamut.folding.cpu import fill_multicore

    codes = np.random.default_rng(band * chunks).integers(0, 5, 400).astype(np.uint8)
    for min_loop in (0, 3):
        expected = fill_matrix(codes, min_loop, "cpu2")
        got = np.zeros_like(expected)
        fill_multicore(codes, np.int64(min_loop), got, band, chunks)
        assert np.array_equal(got, expected)


def test_host_memory_is_checked(monkeypatch):
    import gamut.folding.engines as engines

    assert engines.available_memory() > 10_000_000
    monkeypatch.setattr(engines, "available_memory", lambda: 10_000)
    with pytest.raises(InputError, match="GB of memory"):
        gamut.fold(random_rna(200, 1), engine="cpu2")
    with pytest.raises(InputError, match="GB of memory"):
        gamut.fold(random_rna(200, 1), engine="blocked")
