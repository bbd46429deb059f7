"""The CUDA folding engine against the CPU engines (run on a machine with a GPU; skipped elsewhere)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gamut
from gamut.errors import DeviceError
from gamut.folding.tiled import fill_tiled

from fold_helpers import check_structure, slow_max_pairs

pytestmark = pytest.mark.gpu


def _kernel_args(kernel: str) -> dict:
    """fill_gpu's arguments for one max-plus kernel."""
    return {"packed": False} if kernel == "int32" else {"packed": True, "packed_kernel": kernel}


def _codes(n: int, seed: int, letters: int = 4) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, letters, n).astype(np.uint8)


@pytest.mark.parametrize("n", [0, 1, 2, 63, 64, 65, 127, 128, 129, 500, 1000, 3001])
@pytest.mark.parametrize("min_loop", [0, 1, 3])
@pytest.mark.parametrize("kernel", ["nussinov_maxplus16", "nussinov_maxplus16w", "int32"])
def test_gpu_triangle_is_identical_to_cpu_blocked(n, min_loop, kernel):
    """Every max-plus kernel (packed 16-bit, the default here, and int32) gives the CPU's triangle."""
    from gamut.folding.gpu import fill_gpu

    codes = _codes(n, 100 * n + min_loop, letters=5)
    gpu = fill_gpu(codes, min_loop, **_kernel_args(kernel)).get()
    cpu = fill_tiled(codes, min_loop, 64, dtype=np.int32)
    assert gpu.shape == cpu.shape
    assert np.array_equal(gpu, cpu)


@pytest.mark.parametrize("blocks_per_sm", [0, 1, 64])
@pytest.mark.parametrize("kernel", ["nussinov_maxplus16", "nussinov_maxplus16w", "int32"])
def test_split_k_does_not_change_the_triangle(blocks_per_sm, kernel):
    from gamut.folding.gpu import fill_gpu

    codes = _codes(2500, 9)
    reference = fill_tiled(codes, 1, 64, dtype=np.int32)
    assert np.array_equal(fill_gpu(codes, 1, blocks_per_sm=blocks_per_sm, **_kernel_args(kernel)).get(), reference)


def test_packed_and_int32_products_agree_on_a_long_sequence():
    from gamut.folding.gpu import fill_gpu

    codes = _codes(20_000, 5)
    want = fill_gpu(codes, 1, packed=False).get()
    for kernel in ("nussinov_maxplus16", "nussinov_maxplus16w"):
        assert np.array_equal(fill_gpu(codes, 1, **_kernel_args(kernel)).get(), want)


@settings(max_examples=40, deadline=None)
@given(seq=st.text(alphabet="ACGUN", min_size=0, max_size=300), min_loop=st.integers(0, 5))
def test_gpu_random_sequences(seq, min_loop):
    result = gamut.fold(seq, min_loop=min_loop, device="cuda")
    assert result.engine == "gpu"
    assert result.pairs == gamut.fold(seq, min_loop=min_loop, device="cpu").pairs
    check_structure(seq, result.structure, result.pairs, min_loop)
    if len(seq) <= 80:
        assert result.pairs == slow_max_pairs(seq, min_loop)


@pytest.mark.parametrize("n", [5000, 12345, 20000])
def test_gpu_long_sequences_match_cpu(n):
    seq = "".join(np.random.default_rng(n).choice(list("ACGU"), n))
    gpu = gamut.fold(seq, min_loop=1, device="cuda", corner=4)
    cpu = gamut.fold(seq, min_loop=1, device="cpu", engine="blocked", corner=4)
    assert gpu.pairs == cpu.pairs
    assert np.array_equal(gpu.corner, cpu.corner)
    check_structure(seq, gpu.structure, gpu.pairs, 1)


def test_gpu_real_genome_prefix():
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "rna" / "NC_045512.2.fasta"
    if not path.exists():
        path = Path(__file__).parent / "data" / "fold" / "sars-cov-2_5prime_1500.fa"
    from gamut.io import read_fasta

    seq = list(read_fasta(path))[0].sequence[:20000]
    for min_loop in (1, 3):
        gpu = gamut.fold(seq, min_loop=min_loop, device="cuda")
        cpu = gamut.fold(seq, min_loop=min_loop, device="cpu")
        assert gpu.pairs == cpu.pairs
        check_structure(seq, gpu.structure, gpu.pairs, min_loop)


def test_gpu_too_long_is_a_clear_error():
    from gamut.folding.gpu import fill_gpu

    with pytest.raises(DeviceError, match="GB of GPU memory"):
        fill_gpu(np.zeros(400_000, dtype=np.uint8), 1)


@pytest.mark.slow
@pytest.mark.parametrize("n", [70_000])
def test_gpu_long_sequence_score_matches_its_structure(n):
    """Issue #17: past 2^31 triangle cells (n ~ 65,500) the fold must stay exact, not 0 pairs.

    The fill's corner value, the reported score and the structure's pair count must agree.
    """
    from gamut.folding.gpu import fill_gpu, score_of, triangle_bytes
    from gamut.folding.sequence import encode

    assert triangle_bytes(n) > 2**33
    seq = "".join(np.random.default_rng(17).choice(list("ACGU"), n))
    tiles = fill_gpu(encode(seq), 1)
    corner = score_of(tiles, n)
    del tiles
    result = gamut.fold(seq, min_loop=1, device="cuda")
    assert result.engine == "gpu"
    assert corner > n // 4  # random RNA pairs most of its bases (0 was the reported symptom)
    assert result.pairs == corner
    assert result.structure.count("(") == result.pairs
    check_structure(seq, result.structure, result.pairs, 1)


@pytest.mark.parametrize("n", [0, 1, 2, 65, 1000, 5000, 20000])
@pytest.mark.parametrize("min_loop", [1, 3])
def test_device_traceback_equals_cpu_traceback(n, min_loop):
    """The structure traced on the GPU is the CPU traceback's on the same triangle (same ties)."""
    from gamut.folding.gpu import fill_gpu, traceback_gpu
    from gamut.folding.traceback import traceback_tiled

    codes = _codes(n, n + min_loop, letters=5 if n < 5000 else 4)
    tiles = fill_gpu(codes, min_loop)
    assert np.array_equal(traceback_gpu(tiles, codes, min_loop), traceback_tiled(tiles.get(), codes, min_loop))


@pytest.mark.parametrize(("workers", "threads"), [(1, 32), (1, 1024), (3, 96), (32, 1024), (500, 256)])
def test_device_traceback_any_number_of_workers(workers, threads):
    """However many blocks follow the queued intervals at once, the structure is the serial one
    (500 asks for more than the device's SMs: traceback_gpu runs one block per SM then)."""
    from gamut.folding.gpu import fill_gpu, traceback_gpu
    from gamut.folding.traceback import traceback_tiled

    codes = _codes(6000, 17, letters=4)
    tiles = fill_gpu(codes, 1)
    want = traceback_tiled(tiles.get(), codes, 1)
    for _ in range(3):  # a race would show as a different table on some run
        assert np.array_equal(traceback_gpu(tiles, codes, 1, workers=workers, threads=threads), want)


def test_device_traceback_rejects_a_bad_block_size():
    from gamut.folding.gpu import traceback_gpu

    with pytest.raises(ValueError, match="multiple of 32"):
        traceback_gpu(None, np.zeros(10, np.uint8), 1, threads=100)


def test_device_traceback_reports_an_inconsistent_triangle():
    from gamut.folding.gpu import fill_gpu, traceback_gpu

    codes = _codes(3000, 2, letters=4)
    tiles = fill_gpu(codes, 1)
    tiles[-1, 0, 3000 % 64] += 1
    with pytest.raises(RuntimeError, match="inconsistent"):
        traceback_gpu(tiles, codes, 1)


@pytest.mark.parametrize("min_loop", [0, 1, 3, 5])
def test_gpu_batch_equals_cpu_on_human_hairpins(min_loop):
    from test_fold_batch import human_hairpins

    records = human_hairpins()
    gpu = gamut.fold(records, min_loop, device="cuda")
    cpu = gamut.fold(records, min_loop, device="cpu")
    assert {r.engine for r in gpu} == {"gpu-batch"} and {r.engine for r in cpu} == {"cpu-batch"}
    assert [(r.pairs, r.structure) for r in gpu] == [(r.pairs, r.structure) for r in cpu]


@settings(max_examples=30, deadline=None)
@given(seqs=st.lists(st.text(alphabet="ACGUN", max_size=420), max_size=40), min_loop=st.integers(0, 5))
def test_gpu_batch_random_lists(seqs, min_loop):
    gpu = gamut.fold(seqs, min_loop, device="cuda")
    cpu = gamut.fold(seqs, min_loop, device="cpu")
    assert [(r.pairs, r.structure) for r in gpu] == [(r.pairs, r.structure) for r in cpu]
    for r in gpu:
        assert r.engine == ("gpu-batch" if len(r.sequence) <= 400 else "gpu")


def test_gpu_batch_longest_sequences_use_large_shared_memory():
    from gamut.folding.gpu import BATCH_MAX_LENGTH, fold_batch_gpu
    from gamut.folding.batch import fold_batch_cpu, layout

    rng = np.random.default_rng(8)
    codes = [rng.integers(0, 5, n).astype(np.uint8) for n in [BATCH_MAX_LENGTH] * 300 + [0, 1, 2, 250]]
    flat = layout(codes)
    got, want = fold_batch_gpu(*flat, 1), fold_batch_cpu(*flat, 1)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)
