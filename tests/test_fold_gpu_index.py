"""The GPU fold engine's size arithmetic at large n, checked on the CPU (issue #17).

The triangle of a sequence of n nt holds about n^2 / 2 int32 cells: past 2^31 cells (n ~ 65,500)
and 2^32 bytes (n ~ 46,000) any 32-bit product of sizes or offsets goes wrong. The index helpers of
``nussinov.cu`` are built for the host with g++ (``tests/host/nussinov_harness.cu``) and compared with
exact Python integers at n = 65k..4M (a 32-bit product anywhere in them fails here);
the host side (``score_of``, ``triangle_bytes``, ``max_length``) is checked the same way; and the
fold API's GPU path is run on a CPU-filled triangle standing in for the GPU's, traced by the host
build of the device traceback, so its consistency checks are exercised too.
"""
from __future__ import annotations


import numpy as np
import pytest

import gamut.folding.engines as engines
import gamut.folding.gpu as fold_gpu
from gamut.errors import DeviceError
from gamut.folding.gpu import MAX_LENGTH, TILE, max_length, score_of, triangle_bytes
from gamut.folding.tiled import fill_tiled, tile_count, tile_index
from gamut.folding.traceback import dot_bracket

from fold_helpers import FoldHarness
from host_build import require_compiler

LENGTHS = [65_535, 100_000, 150_000, 200_000, 264_000, MAX_LENGTH]


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    require_compiler()
    return FoldHarness(tmp_path_factory.mktemp("fold_host")).lib


def exact_index(I: int, J: int, nb: int) -> int:
    """Tiles stored before tile (I, J): whole diagonals 0..d-1 (nb - e tiles each), then I."""
    d = J - I
    return sum(nb - e for e in range(d)) + I


def sample_tiles(nb: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    corners = [(0, 0), (0, nb - 1), (nb - 1, nb - 1), (nb // 2, nb - 1), (1, nb - 2), (0, nb - 2), (nb - 2, nb - 1)]
    I = rng.integers(0, nb, 40)
    J = [int(rng.integers(i, nb)) for i in I]
    return corners + [(int(i), j) for i, j in zip(I, J)]


@pytest.mark.parametrize("n", LENGTHS)
def test_kernel_tile_offsets_are_exact_at_large_n(harness, n):
    nb, count = tile_count(n, TILE)
    assert nb == (n + TILE) // TILE  # what the kernels and score_of take as nb
    rng = np.random.default_rng(n)
    for I, J in sample_tiles(nb, rng):
        want = exact_index(I, J, nb)
        assert harness.host_tile_index(I, J, nb) == want, (I, J)
        assert harness.host_tile_offset(I, J, nb) == want * TILE * TILE, (I, J)
        assert tile_index(I, J, nb) == want, (I, J)  # the host traceback's (Numba) index
    # The last tile is the corner (0, nb - 1): its last cell is the triangle's last int32.
    last = harness.host_tile_offset(0, nb - 1, nb) + TILE * TILE - 1
    assert last == count * TILE * TILE - 1
    if n >= 100_000:
        assert last * 4 > 2**34  # the range of the report (and far past 2^31 cells)


@pytest.mark.parametrize("n", [0, 1, 63, 64, 4095, *LENGTHS])
def test_score_of_reads_the_corner_cell(harness, n):
    nb, count = tile_count(n, TILE)

    class Recorder:
        def __getitem__(self, key):
            self.key = key
            return 7

    tiles = Recorder()
    assert score_of(tiles, n) == 7
    index, row, col = tiles.key
    assert (row, col) == (0, n % TILE)
    assert 0 <= index < count
    if n >= 100_000:
        assert index == harness.host_tile_index(0, n // TILE, nb)


def test_triangle_bytes_is_exact():
    assert triangle_bytes(100_000) == 1563 * 1564 // 2 * TILE * TILE * 4 == 20_025_606_144
    assert triangle_bytes(70_000) > 2**33  # the GPU test's size passes 2^31 cells
    for n in (0, 1, 64, 65_535, 200_000, MAX_LENGTH):
        nb = -(-(n + 1) // TILE)
        assert triangle_bytes(n) == nb * (nb + 1) // 2 * 16_384


@pytest.mark.parametrize("free", [0, 1 << 20, 80 << 20, 1 << 30, 16_000_000_000, 80_000_000_000, 85_000_000_000,
                                  141_000_000_000, 1 << 40, 1 << 50])
def test_max_length_is_the_longest_that_fits(free):
    n = max_length(free)
    budget = int(free * 0.99) - (64 << 20)
    if n == MAX_LENGTH:
        assert triangle_bytes(n) <= budget
        return
    if n > 0:
        assert triangle_bytes(n) <= budget
    assert triangle_bytes(n + 1) > budget  # one more nt takes a new row of tiles
    rng = np.random.default_rng(free % 1000)
    for f in rng.integers(1 << 30, 1 << 41, 50).tolist():
        m = max_length(f)
        assert triangle_bytes(m) <= int(f * 0.99) - (64 << 20) < triangle_bytes(m + 1)


def test_too_long_for_the_launch_shape_is_a_clear_error():
    with pytest.raises(DeviceError, match="at most 4,194,239 nt"):
        fold_gpu.fill_gpu(np.zeros(MAX_LENGTH + 1, np.uint8), 1)


# --------------------------------------------------------------------------------------------
# The fold API's GPU path on a CPU-filled triangle: consistent results pass, inconsistent raise
# --------------------------------------------------------------------------------------------


class HostTriangle:
    """A NumPy triangle dressed as the CuPy array ``fill_gpu`` returns."""

    def __init__(self, tiles: np.ndarray) -> None:
        self.tiles = tiles
        self.nbytes = tiles.nbytes

    def __getitem__(self, key):
        return self.tiles[key]

    def get(self) -> np.ndarray:
        return self.tiles


@pytest.fixture(scope="module")
def host_harness(tmp_path_factory):
    require_compiler()
    return FoldHarness(tmp_path_factory.mktemp("fold_host_tb"))


@pytest.fixture
def fake_gpu(monkeypatch, host_harness):
    """``fake_gpu(edit=None)``: the GPU path with a CPU fill (edited) and the host-built device traceback."""

    def install(edit=None):
        def fill(codes, min_loop, **_):
            tiles = fill_tiled(codes, min_loop, TILE, dtype=np.int32)
            if edit is not None:
                edit(tiles, codes.shape[0])
            return HostTriangle(tiles)

        monkeypatch.setattr(fold_gpu, "fill_gpu", fill)
        monkeypatch.setattr(fold_gpu, "traceback_gpu",
                            lambda tiles, codes, min_loop: host_harness.traceback(tiles.tiles, codes, min_loop))

    return install


def codes_of(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 4, n).astype(np.uint8)


def corner(tiles: np.ndarray, n: int) -> tuple[int, int, int]:
    nb = (n + TILE) // TILE
    return int(tile_index(0, n // TILE, nb)), 0, n % TILE


def test_gpu_path_returns_a_consistent_result(fake_gpu):
    from fold_helpers import check_structure

    fake_gpu()
    codes = codes_of(700)
    pairs, partner, _ = engines.fold_on_gpu(codes, 1, True, 0)
    structure = dot_bracket(partner)
    check_structure("".join("ACGU"[c] for c in codes), structure, pairs, 1)
    assert structure.count("(") == pairs == engines.fold_on_gpu(codes, 1, False, 0)[0] > 0


@pytest.mark.parametrize("traceback", [True, False])
def test_gpu_path_rejects_an_all_zero_triangle(fake_gpu, traceback):
    """The reported symptom (0 pairs, all dots) is self-consistent; the lower bound catches it."""
    fake_gpu(lambda tiles, n: tiles.fill(0))
    with pytest.raises(DeviceError, match="fill scores 0 pairs but a valid structure with"):
        engines.fold_on_gpu(codes_of(700), 1, traceback, 0)


def test_gpu_path_rejects_a_corner_that_disagrees_with_the_traceback(fake_gpu):
    def bump(tiles, n):
        tiles[corner(tiles, n)] += 1

    fake_gpu(bump)
    with pytest.raises(DeviceError, match="inconsistent"):
        engines.fold_on_gpu(codes_of(700), 1, True, 0)


def test_gpu_path_rejects_an_impossible_score(fake_gpu):
    def huge(tiles, n):
        tiles[corner(tiles, n)] = n

    fake_gpu(huge)
    with pytest.raises(DeviceError, match="at most 350 are possible"):
        engines.fold_on_gpu(codes_of(700), 1, False, 0)


def test_gpu_path_rejects_a_triangle_zeroed_but_for_the_corner_tile(fake_gpu):
    """Lost tiles under a correct corner: the traceback finds no move, or fewer pairs."""
    def zero_rest(tiles, n):
        index = corner(tiles, n)[0]
        keep = tiles[index].copy()
        tiles[:] = 0
        tiles[index] = keep

    fake_gpu(zero_rest)
    with pytest.raises(DeviceError, match="inconsistent"):
        engines.fold_on_gpu(codes_of(700), 1, True, 0)


def test_greedy_lower_bound_is_a_valid_structure_count():
    from gamut.folding.traceback import greedy_pairs

    from fold_helpers import slow_max_pairs

    rng = np.random.default_rng(4)
    for _ in range(200):
        n = int(rng.integers(0, 40))
        codes = rng.integers(0, 5, n).astype(np.uint8)
        min_loop = int(rng.integers(0, 4))
        assert 0 <= greedy_pairs(codes, min_loop) <= slow_max_pairs("".join("ACGUN"[c] for c in codes), min_loop)
    assert greedy_pairs(np.array([0, 3], np.uint8), 0) == 1
    assert greedy_pairs(np.array([0, 3], np.uint8), 1) == 0
    assert greedy_pairs(np.array([0, 1, 3], np.uint8), 1) == 1


def test_packed_products_only_where_every_score_fits_16_bits():
    """n / 2 pairs at most: PACKED_MAX_LENGTH keeps every interval's pair count below 2^16."""
    from gamut.folding.gpu import PACKED_MAX_LENGTH, fill_gpu

    assert PACKED_MAX_LENGTH // 2 == 0xFFFF and (PACKED_MAX_LENGTH + 1) // 2 > 0xFFFF
    with pytest.raises(DeviceError, match="16-bit"):  # raised before any GPU work
        fill_gpu(np.zeros(PACKED_MAX_LENGTH + 1, np.uint8), 1, packed=True)
