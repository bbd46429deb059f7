"""Compile ``energy.cu`` for sm_90 with NVRTC alone (no GPU needed): no errors, no register spills,
no static shared memory (the work areas are dynamic); skipped where NVRTC is absent."""
from __future__ import annotations

import ctypes
import re

from gamut.cuda.kernels import kernel_source
from gamut.scan import energy_gpu as G
from test_fold_kernel_compile import _nvrtc


def test_energy_kernel_compiles_for_hopper_without_spills():
    lib = _nvrtc()
    prog = ctypes.c_void_p()
    src = kernel_source(G.KERNEL_FILE).encode()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"energy.cu", 0, None, None) == 0
    options = [b"-std=c++17", b"--gpu-architecture=sm_90", b"--ptxas-options=-v",
               *(d.encode() for d in G.table_buffers()[2])]
    rc = lib.nvrtcCompileProgram(prog, len(options), (ctypes.c_char_p * len(options))(*options))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    text = log.value.decode()
    assert rc == 0, text
    for name in ("energy_fold_shared", "energy_fold_global"):
        assert f"'{name}'" in text
    assert re.findall(r"(\d+) bytes spill stores", text) == ["0", "0"], text
    assert re.findall(r"(\d+) bytes stack frame", text) == ["0", "0"], text
