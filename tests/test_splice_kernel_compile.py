"""Compile the splice kernels for sm_90 with ``nvcc`` (no GPU needed; skipped without nvcc), with
the options the engine passes: catches syntax errors and register spills on machines without a GPU."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gamut.splicing.gpu_layout import STREAM_OPTIONS, TB_MIN_BLOCKS, TB_THREADS, TRACEBACK_OPTIONS

KERNELS = Path(__file__).resolve().parents[1] / "src" / "gamut" / "cuda" / "kernels"


def nvcc_compile(tmp_path: Path, name: str, options: tuple[str, ...]) -> str:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not installed")
    wrapper = tmp_path / f"{name}.cu"
    wrapper.write_text(f'#include "{KERNELS / name}"\n')
    run = subprocess.run([nvcc, "-std=c++17", "-arch=sm_90", "-Xptxas", "-v", *options, "-c", "-o", "/dev/null",
                          str(wrapper)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stderr


@pytest.mark.parametrize("cols", [4, 8, 16])
def test_forward_kernel_compiles_without_spills(tmp_path, cols):
    log = nvcc_compile(tmp_path, "splice.cu", (f"-DCOLS={cols}", *STREAM_OPTIONS))
    assert "splice_forward" in log
    assert re.findall(r"(\d+) bytes spill stores", log) == ["0"], log


@pytest.mark.parametrize("threads", sorted({TB_THREADS, *TB_MIN_BLOCKS}))
def test_traceback_kernel_compiles_without_spills(tmp_path, threads):
    """With the options the engine passes: registers bounded for TB_MIN_BLOCKS blocks per SM, no spills."""
    blocks_per_sm = TB_MIN_BLOCKS[threads]
    log = nvcc_compile(tmp_path, "splice_traceback.cu", (f"-DTB_THREADS={threads}", f"-DTB_MIN_BLOCKS={blocks_per_sm}",
                                                         *TRACEBACK_OPTIONS))
    assert "splice_traceback" in log
    assert re.findall(r"(\d+) bytes spill stores", log) == ["0"], log
    registers = int(re.search(r"Used (\d+) registers", log).group(1))
    assert registers * threads * blocks_per_sm <= 65536, log
