"""CUDA engine: the blocked algorithm of Li, Ranka & Sahni on triangle-only tiled storage.

Kernels live in ``gamut/cuda/kernels/nussinov.cu`` (compiled at run time by CuPy). The tiled
triangle is the same as :mod:`gamut.folding.tiled` builds on the CPU, in int32: ``(nb (nb+1) / 2)``
tiles of ``64 x 64`` with ``nb = ceil((n + 1) / 64)``, about ``2 n^2`` bytes (20 GB for n = 100,000).
``traceback_gpu`` traces the structure on the device (only the partner table comes back) and
``fold_batch_gpu`` folds many short sequences in one launch (one block per sequence). Up to
``PACKED_MAX_LENGTH`` the max-plus products use packed 16-bit DPX (``__viaddmax_u16x2``, two
columns per instruction); the tiles stay int32.
CuPy is imported only when this engine runs.
"""
from __future__ import annotations

import math

import numpy as np

from gamut.cuda.device import device_attributes
from gamut.errors import DeviceError
from gamut.folding.tiled import tile_count

TILE = 64
KERNELS = ("nussinov_diagonal", "nussinov_maxplus", "nussinov_finish")
#: Packed 16-bit max-plus kernels: name -> threads per block (4 x 4 or 4 x 8 cells per thread).
PACKED_KERNELS = {"nussinov_maxplus16": 256, "nussinov_maxplus16w": 128}
#: The packed kernel used by default (4 x 4 cells per thread): the 4 x 8 one is slower on shorter
#: sequences and barely faster on the longest the packed products cover.
PACKED_KERNEL = "nussinov_maxplus16"
#: Longest sequence whose max-plus products run on packed 16-bit halves (``nussinov_maxplus16``):
#: every score is a pair count of at most n / 2 <= 65,535. Longer sequences use int32.
PACKED_MAX_LENGTH = 131_071
#: The device traceback: blocks (workers, each following one interval at a time) and threads per block.
TRACEBACK_WORKERS = 32
TRACEBACK_THREADS = 1024
TRACEBACK_STATUS, TRACEBACK_SLOTS = 3, 4  # TB_STATUS, TB_SLOTS in nussinov.cu: the work area's layout
FINISH_SPLIT = 8  # threads per cell of a finishing sweep (-DFINISH_SPLIT for nussinov.cu)
#: Dynamic shared memory of ``nussinov_finish`` (FINISH_SHARED_BYTES in nussinov.cu): the tile, its
#: transpose and the two diagonal tiles in rows of TILE + 16 ints, two edge vectors, the bond table.
FINISH_SHARED_BYTES = 3 * TILE * (TILE + 16) * 4 + 2 * TILE * 4 + TILE * (TILE + 1)
BATCH_THREADS = 256  # BATCH_THREADS in nussinov.cu
#: Longest sequence the batch kernel folds (its matrix of bytes lives in shared memory).
BATCH_MAX_LENGTH = 400
#: Longest sequence the kernels' launch shape allows: the split-K grid has up to ``nb - 2`` rows
#: (CUDA's gridDim.y limit is 65,535). Memory runs out long before (about 35 TB here).
MAX_LENGTH = TILE * 65_535 - 1


def triangle_bytes(n: int) -> int:
    """GPU memory taken by the int32 tiled triangle of a length-``n`` sequence."""
    return tile_count(n, TILE)[1] * TILE * TILE * 4


def _budget(free_bytes: int) -> int:
    """Bytes the triangle may take out of ``free_bytes`` (1% and 64 MiB are left spare)."""
    return int(free_bytes * 0.99) - (64 << 20)


def max_length(free_bytes: int) -> int:
    """Longest sequence whose triangle fits in ``free_bytes`` (exact integer arithmetic)."""
    tiles = max(_budget(free_bytes), 0) // (TILE * TILE * 4)
    nb = (math.isqrt(8 * tiles + 1) - 1) // 2  # the largest nb with nb (nb + 1) / 2 <= tiles
    return min(max(nb * TILE - 1, 0), MAX_LENGTH)


def _module(device_id: int):
    from gamut.cuda import load_module

    return load_module("nussinov.cu", options=(f"-DTILE={TILE}", f"-DFINISH_SPLIT={FINISH_SPLIT}"),
                       device_id=device_id)


def _kernels(device_id: int, packed_kernel: str):
    module = _module(device_id)
    kernels = tuple(module.get_function(name) for name in (*KERNELS, packed_kernel))
    kernels[KERNELS.index("nussinov_finish")].max_dynamic_shared_size_bytes = FINISH_SHARED_BYTES
    return kernels


def fill_gpu(
    codes: np.ndarray,
    min_loop: int,
    *,
    device_id: int | None = None,
    blocks_per_sm: int = 8,
    profile: dict | None = None,
    packed: bool | None = None,
    packed_kernel: str = PACKED_KERNEL,
):
    """Fill the tiled triangle on the GPU; returns the ``cupy`` array ``(tiles, 64, 64)`` int32.

    ``blocks_per_sm`` sets how many blocks the max-plus kernel aims for (split-K when few tiles
    are left); ``profile``, if a dict, receives the milliseconds spent in each kernel; ``packed``:
    16-bit max-plus products (default: where exact, n <= ``PACKED_MAX_LENGTH``; True beyond that
    is an error) with ``packed_kernel`` (one of ``PACKED_KERNELS``).
    """
    n = int(codes.shape[0])
    if n > MAX_LENGTH:
        raise DeviceError(f"folding {n:,} nt: the GPU engine folds at most {MAX_LENGTH:,} nt (use the CPU engine)")
    if packed is None:
        packed = n <= PACKED_MAX_LENGTH
    elif packed and n > PACKED_MAX_LENGTH:
        raise DeviceError(f"16-bit max-plus products are exact up to {PACKED_MAX_LENGTH:,} nt, not {n:,}")
    import cupy

    nb, count = tile_count(n, TILE)
    device = cupy.cuda.Device(device_id if device_id is not None else cupy.cuda.runtime.getDevice())
    with device:
        need = triangle_bytes(n)
        free, total = cupy.cuda.runtime.memGetInfo()
        if need > _budget(free):  # blocks cached by CuPy's pool count as used: release them
            cupy.get_default_memory_pool().free_all_blocks()
            free, total = cupy.cuda.runtime.memGetInfo()
        if need > _budget(free):
            raise DeviceError(
                f"folding {n:,} nt needs {need / 1e9:.1f} GB of GPU memory for the score triangle but "
                f"only {free / 1e9:.1f} of {total / 1e9:.1f} GB are free (this GPU folds up to about "
                f"{max_length(free):,} nt; use a larger GPU or the CPU engine)"
            )
        diagonal, maxplus32, finish, maxplus16 = _kernels(device.id, packed_kernel)
        maxplus, maxplus_threads = (maxplus16, PACKED_KERNELS[packed_kernel]) if packed else (maxplus32, 256)
        sms = device_attributes(device.id)["MultiProcessorCount"]
        tiles = cupy.zeros((count, TILE, TILE), dtype=cupy.int32)
        seq = cupy.asarray(codes if n else np.zeros(1, np.uint8))
        i32 = np.int32
        events: list[tuple[str, object, object]] = []

        def launch(kernel, grid, block, args, shared_mem=0):
            if profile is None:
                kernel(grid, block, args, shared_mem=shared_mem)
                return
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            kernel(grid, block, args, shared_mem=shared_mem)
            stop.record()
            events.append((getattr(kernel, "name", "kernel"), start, stop))

        launch(diagonal, (nb,), (TILE,), (tiles, seq, i32(n), i32(nb), i32(min_loop)))
        target = blocks_per_sm * sms
        for d in range(1, nb):
            width = nb - d
            if d >= 2:
                depth = d - 1
                splits = min(depth, max(1, -(-target // width)))
                chunk = -(-depth // splits)
                splits = -(-depth // chunk)
                launch(maxplus, (width, splits), (maxplus_threads,), (tiles, i32(nb), i32(d), i32(chunk)))
            launch(finish, (width,), (FINISH_SPLIT * TILE,), (tiles, seq, i32(n), i32(nb), i32(d), i32(min_loop)),
                   FINISH_SHARED_BYTES)
        if profile is not None:
            device.synchronize()
            for name, start, stop in events:
                profile[name] = profile.get(name, 0.0) + cupy.cuda.get_elapsed_time(start, stop)
        return tiles


def score_of(tiles, n: int) -> int:
    """``D(0, n)`` read from a (device or host) tiled triangle without copying the rest."""
    nb = (n + TILE) // TILE
    last = n // TILE
    index = last * nb - last * (last - 1) // 2
    return int(tiles[index, 0, n % TILE])


def traceback_gpu(tiles, codes: np.ndarray, min_loop: int, *, workers: int = TRACEBACK_WORKERS,
                  threads: int = TRACEBACK_THREADS) -> np.ndarray:
    """Partner table (``-1`` = unpaired) of the structure :func:`gamut.folding.traceback.traceback_tiled`
    picks, traced on the GPU from the device triangle ``tiles``; only the table is copied back.

    ``workers`` blocks of ``threads`` follow the independent intervals left at splits at once (at
    most one block per SM). Raises ``RuntimeError`` when the triangle is inconsistent (no optimal
    move at some interval).
    """
    import cupy

    n = int(codes.shape[0])
    nb = (n + TILE) // TILE
    if not 1 <= threads <= 1024 or threads % 32:
        raise ValueError(f"traceback threads must be a multiple of 32 up to 1024, not {threads}")
    with tiles.device:
        kernel = _module(tiles.device.id).get_function("nussinov_traceback")
        workers = max(1, min(int(workers), device_attributes(tiles.device.id)["MultiProcessorCount"]))
        seq = cupy.asarray(codes if n else np.zeros(1, np.uint8))
        partner = cupy.full(max(n, 1), -1, dtype=cupy.int32)
        capacity = n + workers + 1  # the queue's 64-bit slots (nussinov.cu describes the work area)
        work = cupy.zeros(TRACEBACK_SLOTS + 2 * capacity, dtype=cupy.int32)
        i32 = np.int32
        kernel((workers,), (threads,), (tiles, seq, i32(n), i32(nb), i32(min_loop), work, partner))
        if int(work[TRACEBACK_STATUS].get()):
            raise RuntimeError("traceback found no optimal move: the score matrix is inconsistent")
        return partner[:n].get().astype(np.int64)


def batch_shared_bytes(n: int) -> int:
    """Dynamic shared memory of one ``nussinov_batch`` block for sequences up to ``n`` nt."""
    return ((n * n + n + 1) & ~1) + 4 * (n + 2)


def fold_batch_gpu(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray, min_loop: int, *,
                   device_id: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Fold many short sequences (each at most :data:`BATCH_MAX_LENGTH` nt) in one launch.

    The sequences lie end to end in ``flat`` (codes) from ``starts`` (see
    :func:`gamut.folding.batch.layout`). Returns ``(scores, structures)``: the pair counts and the
    dot-bracket bytes laid out like ``flat``. A score of ``-1`` means the kernel found its matrix
    inconsistent (never expected).
    """
    import cupy

    lengths = np.asarray(lengths, dtype=np.int32)
    total = int(flat.shape[0])
    if not lengths.size:
        return np.zeros(0, np.int64), np.zeros(0, np.uint8)
    if int(lengths.max()) > BATCH_MAX_LENGTH:
        raise ValueError(f"the batch kernel folds sequences of at most {BATCH_MAX_LENGTH} nt")
    order = np.argsort(-lengths, kind="stable")  # longest first: the grid ends with short blocks
    device = cupy.cuda.Device(device_id if device_id is not None else cupy.cuda.runtime.getDevice())
    with device:
        kernel = _module(device.id).get_function("nussinov_batch")
        shared = batch_shared_bytes(int(lengths.max()))
        if shared > 48 * 1024:
            kernel.max_dynamic_shared_size_bytes = shared
        scores = cupy.empty(lengths.size, dtype=cupy.int32)
        out = cupy.empty(max(total, 1), dtype=cupy.uint8)
        codes = cupy.asarray(flat if total else np.zeros(1, np.uint8))
        kernel((lengths.size,), (BATCH_THREADS,),
               (codes, cupy.asarray(np.asarray(starts, np.int64)[order]), cupy.asarray(lengths[order]),
                np.int32(min_loop), scores, out), shared_mem=shared)
        result = np.empty(lengths.size, dtype=np.int64)
        result[order] = scores.get()
        return result, out.get()[:total]
