"""Compile ``plfold.cu`` for sm_90 with NVRTC alone (no GPU needed): no errors and no register spills
in any kernel; skipped where NVRTC is absent."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("RNA")

from test_fold_kernel_compile import nvrtc_compile  # noqa: E402

from gamut.access.boltzmann import plfold_tables  # noqa: E402
from gamut.access.gpu import KERNELS  # noqa: E402
from gamut.cuda.kernels import kernel_source  # noqa: E402


def test_plfold_kernels_compile_for_hopper_without_spills():
    rc, text = nvrtc_compile(kernel_source("plfold.cu").encode(), "plfold.cu",
                             ["--ptxas-options=-v", *plfold_tables().defines])
    assert rc == 0, text
    for name in KERNELS:
        assert f"'{name}'" in text
    assert re.findall(r"(\d+) bytes spill stores", text) == ["0"] * len(KERNELS), text
