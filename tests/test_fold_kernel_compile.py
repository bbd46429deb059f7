"""Compile ``nussinov.cu`` for sm_90 with NVRTC alone (no GPU needed); skipped where NVRTC is absent.

NVRTC ships in the ``nvidia-cuda-nvrtc`` wheels (and with CuPy's CUDA); this catches syntax errors,
register spills and shared-memory overflows on machines without a GPU.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import re
import sys
from pathlib import Path

import pytest

KERNEL = Path(__file__).resolve().parents[1] / "src" / "gamut" / "cuda" / "kernels" / "nussinov.cu"


def _nvrtc():
    candidates = [ctypes.util.find_library("nvrtc")]
    for root in sys.path + [os.environ.get("NVRTC_DIR", "")]:
        candidates += sorted(glob.glob(os.path.join(root, "nvidia", "*", "lib", "libnvrtc.so*")))
    for path in filter(None, candidates):
        if "builtins" in path or ".alt." in path:
            continue
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    pytest.skip("NVRTC not installed (pip install nvidia-cuda-nvrtc-cu12 to run this check)")


def nvrtc_compile(source: bytes, name: str, options: list[str], expressions: tuple[str, ...] = ()) -> tuple[int, str]:
    """Compile CUDA ``source`` for sm_90 with NVRTC alone: (return code, compiler log)."""
    lib = _nvrtc()
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source, name.encode(), 0, None, None) == 0
    for expression in expressions:
        assert lib.nvrtcAddNameExpression(prog, expression.encode()) == 0
    flags = [b"-std=c++17", b"--gpu-architecture=sm_90", *(o.encode() for o in options)]
    rc = lib.nvrtcCompileProgram(prog, len(flags), (ctypes.c_char_p * len(flags))(*flags))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    return rc, log.value.decode()


def test_kernel_compiles_for_hopper_without_spills():
    rc, text = nvrtc_compile(KERNEL.read_bytes(), "nussinov.cu", ["-DTILE=64", "--ptxas-options=-v"])
    assert rc == 0, text
    names = ("nussinov_diagonal", "nussinov_maxplus", "nussinov_maxplus16", "nussinov_maxplus16w", "nussinov_finish",
             "nussinov_traceback", "nussinov_batch")
    for name in names:
        assert f"'{name}'" in text
    assert re.findall(r"(\d+) bytes spill stores", text) == ["0"] * len(names), text
    shared = [int(x) for x in re.findall(r"(\d+) bytes smem", text)]
    assert shared and max(shared) <= 48 * 1024, text  # static shared memory only


def test_finish_shared_memory_matches_the_kernel_layout():
    """``gamut.folding.gpu.FINISH_SHARED_BYTES`` (what the launch reserves) equals the layout
    ``nussinov_finish`` carves out of its dynamic shared memory (FINISH_SHARED_BYTES in the .cu)."""
    from gamut.folding.gpu import FINISH_SHARED_BYTES, TILE

    text = KERNEL.read_text()
    macros = dict(re.findall(r"^#define (FPITCH|FINISH_SHARED_BYTES) (\(.*\))", text, re.M))
    expression = macros["FINISH_SHARED_BYTES"].replace("FPITCH", macros["FPITCH"]).replace("TILE", str(TILE))
    assert re.fullmatch(r"[\d\s()+*]+", expression)
    assert eval(expression) == FINISH_SHARED_BYTES  # noqa: S307 - digits and + * ( ) only
    assert FINISH_SHARED_BYTES <= 227 * 1024
