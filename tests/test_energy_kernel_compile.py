"""Compile ``energy.cu`` for sm_90 with NVRTC alone (no GPU needed): no errors, no register spills,
no static shared memory (the work areas are dynamic); skipped where NVRTC is absent."""
from __future__ import annotations

import re

from gamut.cuda.kernels import kernel_source
from gamut.scanning.energy import gpu as G
from test_fold_kernel_compile import nvrtc_compile


def test_energy_kernel_compiles_for_hopper_without_spills():
    rc, text = nvrtc_compile(kernel_source(G.KERNEL_FILE).encode(), "energy.cu",
                             ["--ptxas-options=-v", *G.table_buffers()[2]])
    assert rc == 0, text
    names = ("energy_fold_shared16", "energy_fold_shared", "energy_fold_global")
    for name in names:
        assert f"'{name}'" in text
    assert re.findall(r"(\d+) bytes spill stores", text) == ["0"] * len(names), text
    assert re.findall(r"(\d+) bytes stack frame", text) == ["0"] * len(names), text
