"""The device traceback and the batch kernel of ``nussinov.cu``, built for the host with g++ and
run block-serially, against the CPU engines (no GPU needed; ``test_fold_gpu.py`` runs the real
kernels). Both must return exactly the structure of :mod:`gamut.folding.traceback` (same tie rules)."""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gamut.folding.cpu import fill_matrix
from gamut.folding.sequence import BOND_MASK, encode
from gamut.folding.tiled import fill_tiled
from gamut.folding.traceback import dot_bracket, traceback_dense, traceback_tiled

from fold_helpers import FoldHarness, brute_force_pairs, check_structure, slow_max_pairs
from host_build import require_compiler


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> FoldHarness:
    require_compiler()
    return FoldHarness(tmp_path_factory.mktemp("fold_tb"))


def random_codes(n: int, seed: int, letters: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, letters, n).astype(np.uint8)


def linear_traceback(M: np.ndarray, codes: np.ndarray, min_loop: int) -> np.ndarray:
    """The traceback rules with a plain left-to-right split search (the definition)."""
    n = len(codes)

    def c(i: int, j: int) -> int:
        return int(M[i, j]) if j > i else 0

    partner = np.full(n, -1, np.int64)
    stack = [(0, n - 1)] if n > 1 else []
    while stack:
        i, j = stack.pop()
        while i < j:
            v = c(i, j)
            if v == 0:
                break
            if c(i, j - 1) == v:
                j -= 1
            elif c(i + 1, j) == v:
                i += 1
            elif j - i - 1 >= min_loop and (BOND_MASK >> (5 * int(codes[i]) + int(codes[j]))) & 1 \
                    and c(i + 1, j - 1) + 1 == v:
                partner[i], partner[j] = j, i
                i, j = i + 1, j - 1
            else:
                k = next(k for k in range(i + 1, j - 1) if c(i, k) + c(k + 1, j) == v)
                stack.append((k + 1, j))
                j = k
    return partner


@pytest.mark.parametrize("n", [0, 1, 2, 3, 31, 32, 33, 63, 64, 65, 100, 129, 200])
@pytest.mark.parametrize("min_loop", [0, 1, 3])
def test_cpu_traceback_skips_to_the_leftmost_split(n, min_loop):
    codes = random_codes(n, 11 * n + min_loop, letters=4)
    M = fill_matrix(codes, min_loop, "cpu2")
    want = linear_traceback(M, codes, min_loop)
    assert np.array_equal(traceback_dense(M, codes, min_loop), want)
    assert np.array_equal(traceback_tiled(fill_tiled(codes, min_loop, 64), codes, min_loop), want)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 31, 32, 33, 63, 64, 65, 66, 127, 128, 129, 300, 777])
@pytest.mark.parametrize("min_loop", [0, 1, 3, 5])
@pytest.mark.parametrize("threads", [1, 3, 256])
def test_device_traceback_equals_cpu(harness, n, min_loop, threads):
    codes = random_codes(n, 7 * n + min_loop)
    tiles = fill_tiled(codes, min_loop, 64, dtype=np.int32)
    want = traceback_tiled(tiles, codes, min_loop)
    assert np.array_equal(harness.traceback(tiles, codes, min_loop, threads), want)


def test_device_traceback_long_real_rna(harness, data_dir):
    from gamut.io import read_fasta

    seq = list(read_fasta(data_dir / "fold" / "sars-cov-2_5prime_1500.fa"))[0].sequence
    codes = encode(seq)
    for min_loop in (1, 3):
        tiles = fill_tiled(codes, min_loop, 64, dtype=np.int32)
        got = harness.traceback(tiles, codes, min_loop)
        assert np.array_equal(got, traceback_tiled(tiles, codes, min_loop))
        check_structure(seq, dot_bracket(got), int(tiles[-1, 0, len(seq) % 64]), min_loop)


@settings(max_examples=60, deadline=None)
@given(seq=st.text(alphabet="ACGUN", min_size=0, max_size=260), min_loop=st.integers(0, 5),
       threads=st.sampled_from([1, 2, 32, 256]))
def test_device_traceback_random(harness, seq, min_loop, threads):
    codes = encode(seq)
    tiles = fill_tiled(codes, min_loop, 64, dtype=np.int32)
    assert np.array_equal(harness.traceback(tiles, codes, min_loop, threads), traceback_tiled(tiles, codes, min_loop))


def test_device_traceback_reports_an_inconsistent_triangle(harness):
    codes = random_codes(300, 5, letters=4)
    tiles = fill_tiled(codes, 1, 64, dtype=np.int32)
    tiles[-1, 0, 300 % 64] += 1  # the corner D(0, n) one more than any structure
    with pytest.raises(RuntimeError, match="inconsistent"):
        harness.traceback(tiles, codes, 1)


@settings(max_examples=80, deadline=None)
@given(seq=st.text(alphabet="ACGUN", min_size=0, max_size=140), min_loop=st.integers(0, 5))
def test_batch_kernel_equals_cpu(harness, seq, min_loop):
    codes = encode(seq)
    score, structure = harness.batch_fold(codes, min_loop)
    M = fill_matrix(codes, min_loop, "cpu2")
    assert score == (int(M[0, -1]) if len(seq) else 0)
    assert structure == dot_bracket(traceback_dense(M, codes, min_loop))
    check_structure(seq, structure, score, min_loop)
    if len(seq) <= 60:
        assert score == slow_max_pairs(seq, min_loop)


@settings(max_examples=60, deadline=None)
@given(seq=st.text(alphabet="ACGU", min_size=0, max_size=11), min_loop=st.integers(0, 4))
def test_batch_kernel_brute_force(harness, seq, min_loop):
    score, structure = harness.batch_fold(encode(seq), min_loop)
    assert score == (brute_force_pairs(seq, min_loop) if seq else 0)
    check_structure(seq, structure, score, min_loop)


def test_batch_kernel_longest_and_real_hairpins(harness, data_dir):
    from gamut.folding.gpu import BATCH_MAX_LENGTH
    from gamut.io import read_fasta

    records = [(r.name, r.sequence) for r in read_fasta(data_dir / "fold" / "mirbase_hairpins.fa")]
    records.append(("longest", "".join(np.random.default_rng(3).choice(list("ACGU"), BATCH_MAX_LENGTH))))
    for name, seq in records:
        codes = encode(seq)
        for min_loop in (1, 3):
            score, structure = harness.batch_fold(codes, min_loop)
            M = fill_matrix(codes, min_loop, "cpu2")
            assert score == int(M[0, -1]), name
            assert structure == dot_bracket(traceback_dense(M, codes, min_loop)), name
