"""CUDA engine for miRanda duplex energies (``kernels/energy.cu``): the ``miranda`` model, exactly
the energies of the compiled CPU engine (``gamut.scanning.energy.cpu``), one warp per fold string.

Tables are packed into two int32 buffers (``small``: copied to shared memory per block; ``big``:
int11/int21/int22, hairpin energies by size, special tetraloops) whose layout reaches the kernel as
``-D`` options (:func:`table_buffers`), one definition for every build of the kernel.
Strings are folded in length buckets (padded length m = n + 2, in steps of 4 around miRanda's 45-62 nt), so a
warp's work area is sized for its bucket. A bucket whose work area fits in shared memory uses
``energy_fold_shared16``: DP cells stored as int16, twice the strings per SM. A string whose finite
cell values do not fit int16 (very stable duplexes of long strings) comes back as ``ENERGY_OVERFLOW``
and is folded again with int32 cells (``energy_fold_shared``, or ``energy_fold_global`` with work
areas in global scratch where even one int32 area does not fit), so every energy is exact.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import numpy as np

from gamut.cuda.device import device_attributes
from gamut.errors import InputError
from gamut.io.textcols import take_strings
from gamut.scanning.energy.compiled_model import (
    ALIAS,
    CODE,
    PAIR,
    RTYPE,
    compiled_tables,
    hairpin_energies,
    pack_strings,
)
from gamut.scanning.energy.tables import flat_tables
from gamut.timeline import span

KERNEL_FILE = "energy.cu"
MAX_LENGTH = 400          # longest fold string the engine takes (nt)
MAX_WARPS = 20            # warps per block (MAX_WARPS in energy.cu)
BUCKET_M = (16, 24, 32, 40, *range(44, 73, 4), 80, 88, 96, 112, 128, 160, 192, 256, MAX_LENGTH + 2)  # by padded length m = n + 2
SCRATCH_BYTES = 1 << 30   # global scratch cap for the long-string kernel
DML_RING = 5              # as in energy.cu
ENERGY_OVERFLOW = -(2**31)  # a string's result when its int16 cells overflowed (energy.cu)


def _round16(n: int) -> int:
    return (n + 15) // 16 * 16


def work_bytes(m: int, cell_bytes: int = 4) -> int:
    """Bytes of one warp's work area for strings of up to m - 2 letters (energy_work_bytes)."""
    t = m * (m + 1) // 2
    return (_round16(4 * (3 * m + 1)) + _round16(4 * m) + _round16(2 * m)
            + _round16(cell_bytes * (3 * t + DML_RING * m)))


@functools.lru_cache(maxsize=1)
def table_buffers() -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """(small, big, defines): the packed int32 tables and their offsets as ``-DT_*=`` options."""
    t, lc = compiled_tables()
    keys = t.tetraloops.astype(np.uint32)
    lo = keys[:, 0] | keys[:, 1] << 8 | keys[:, 2] << 16 | keys[:, 3] << 24
    hi = keys[:, 4] | keys[:, 5] << 8
    small = [("STACK", t.stack), ("BULGE", t.bulge), ("LC", lc), ("MMH", t.mismatch_h),
             ("MMI", t.mismatch_i), ("D5", t.dangle5), ("D3", t.dangle3), ("PAIR", PAIR),
             ("RTYPE", RTYPE), ("ALIAS", ALIAS), ("CODE", CODE), ("SCALARS", t.scalars)]
    hp = hairpin_energies(t.hairpin, t.lxc, MAX_LENGTH)
    big = [("INT11", t.int11), ("INT21", t.int21), ("INT22", t.int22), ("HP", hp),
           ("TLKEY", np.stack([lo, hi], axis=1).view(np.int32)), ("TLE", t.tetraloop_e)]
    small_buf, defines = flat_tables(small, "T", np.int32, total="T_SMALL")
    big_buf, big_defines = flat_tables(big, "T", np.int32, total="T_BIG")
    defines += [*big_defines, f"-DN_TL={len(t.tetraloop_e)}"]
    return small_buf, big_buf, tuple(defines)


def _checked(seqs: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Packed bytes and offsets; fold strings above MAX_LENGTH are an error."""
    return _check_packed(*pack_strings(seqs))


def _check_packed(raw: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.diff(offsets)
    if lengths.size and lengths.max() > MAX_LENGTH:
        k = int(np.argmax(lengths))
        raise InputError(f"fold string #{k + 1} has {int(lengths[k])} nt; the GPU energy engine takes "
                         f"at most {MAX_LENGTH} (use device='cpu')")
    return raw, offsets


def refold_overflowed(out: np.ndarray, raw: np.ndarray, offsets: np.ndarray, fold32) -> np.ndarray:
    """``out`` (int64) with every ENERGY_OVERFLOW entry replaced by ``fold32(raw, offsets)`` of
    those strings (int32 cells, exact for every string the engine takes)."""
    out = out.astype(np.int64)
    bad = np.flatnonzero(out == ENERGY_OVERFLOW)
    if bad.size:
        out[bad] = fold32(*take_strings(raw, offsets, bad))
        if np.any(out[bad] == ENERGY_OVERFLOW):
            raise RuntimeError("int32 energy cells overflowed")  # cannot happen: int32 is never flagged
    return out


# ----------------------------------------------------------------------------------------------
# GPU
# ----------------------------------------------------------------------------------------------
@dataclass
class Timing:
    """Seconds spent in the kernels (CUDA events) and in the whole call."""

    kernel: float = 0.0
    total: float = 0.0
    launches: list[dict] = field(default_factory=list)


@functools.lru_cache(maxsize=None)
def _device_tables(device_id: int):
    """The packed tables on one device (uploaded once)."""
    import cupy as cp

    small, big, _ = table_buffers()
    with cp.cuda.Device(device_id):
        return cp.asarray(small), cp.asarray(big)


def _module(device_id: int):
    from gamut.cuda import load_module

    return load_module(KERNEL_FILE, options=(*table_buffers()[2], f"-DMAX_WARPS={MAX_WARPS}"), device_id=device_id)


def launch_plan(maxm: int, optin_bytes: int, cell_bytes: int = 2) -> tuple[str, int, int]:
    """(kernel, warps per block, dynamic shared bytes) for strings of padded length maxm, with
    int16 (cell_bytes 2) or int32 cells; int32 falls back to global scratch for long strings."""
    small_bytes = _round16(4 * table_buffers()[0].size)
    per_warp = work_bytes(maxm, cell_bytes)
    warps = min(MAX_WARPS, (optin_bytes - small_bytes) // per_warp)
    if warps >= 1:
        name = "energy_fold_shared16" if cell_bytes == 2 else "energy_fold_shared"
        return name, int(warps), small_bytes + warps * per_warp
    if cell_bytes == 2:
        return launch_plan(maxm, optin_bytes, 4)
    return "energy_fold_global", 4, small_bytes


def gpu_energies(seqs: list[str], device_id: int | None = None, timing: Timing | None = None) -> np.ndarray:
    """Energies (dcal/mol, int64, input order) of fold strings on a CUDA device."""
    t_start = time.perf_counter()
    return gpu_packed_energies(*_checked(seqs), device_id=device_id, timing=timing, t_start=t_start)


def gpu_packed_energies(raw: np.ndarray, offsets: np.ndarray, device_id: int | None = None,
                        timing: Timing | None = None, t_start: float | None = None) -> np.ndarray:
    """:func:`gpu_energies` of fold strings packed as bytes (string k: ``raw[offsets[k]:offsets[k+1]]``)."""
    import cupy as cp

    t_start = time.perf_counter() if t_start is None else t_start
    raw, offsets = _check_packed(np.ascontiguousarray(raw, np.uint8), np.ascontiguousarray(offsets, np.int64))
    if offsets.shape[0] == 1:
        return np.zeros(0, np.int64)
    dev = cp.cuda.Device(device_id) if device_id is not None else cp.cuda.Device()
    with dev, span("energies on GPU", strings=offsets.shape[0] - 1):
        out = refold_overflowed(_gpu_fold(raw, offsets, dev, 2, timing), raw, offsets,
                                lambda r, o: _gpu_fold(r, o, dev, 4, timing))
    if timing is not None:
        timing.total += time.perf_counter() - t_start
    return out


def _gpu_fold(raw: np.ndarray, offsets: np.ndarray, dev, cell_bytes: int, timing: Timing | None) -> np.ndarray:
    """Raw kernel results (int32, input order) of packed strings on ``dev``, by length bucket."""
    import cupy as cp

    count = offsets.shape[0] - 1
    lengths = np.diff(offsets)
    order = np.argsort(lengths, kind="stable").astype(np.int32)
    padded = lengths[order] + 2
    small, big = _device_tables(dev.id)
    module = _module(dev.id)
    sms = device_attributes(dev.id)["MultiProcessorCount"]
    optin = cp.cuda.runtime.deviceGetAttribute(97, dev.id)  # cudaDevAttrMaxSharedMemoryPerBlockOptin
    d_raw = cp.asarray(raw if raw.size else np.zeros(1, np.uint8))
    d_off = cp.asarray(offsets)
    d_order = cp.asarray(order)
    d_out = cp.zeros(count, cp.int32)
    begin, end = cp.cuda.Event(), cp.cuda.Event()
    begin.record()
    lo = 0
    for limit in BUCKET_M:
        hi = int(np.searchsorted(padded, limit, side="right"))
        if hi == lo:
            continue
        maxm = int(padded[hi - 1])
        name, warps, shared = launch_plan(maxm, optin, cell_bytes)
        fn = module.get_function(name)
        n = hi - lo
        if name != "energy_fold_global":
            if shared > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = shared
            blocks = min(-(-n // warps), sms * 32)
            scratch = d_raw  # unused
        else:
            per_block = work_bytes(maxm, 4) * warps
            blocks = max(1, min(-(-n // warps), SCRATCH_BYTES // per_block, sms * 8))
            scratch = cp.empty(blocks * per_block, cp.uint8)
        fn((blocks,), (32 * warps,), (small, big, d_raw, d_off, d_order[lo:hi], np.int32(n),
                                      np.int32(maxm), scratch, d_out), shared_mem=shared)
        if timing is not None:
            timing.launches.append({"kernel": name, "strings": n, "maxm": maxm, "warps": warps,
                                    "blocks": blocks, "shared_bytes": shared})
        lo = hi
    end.record()
    out = cp.asnumpy(d_out)
    if timing is not None:
        timing.kernel += cp.cuda.get_elapsed_time(begin, end) / 1000.0
    return out
