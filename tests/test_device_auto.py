"""``--device auto`` for the scan: the CPU engine below the measured break-even size, else the GPU."""
from __future__ import annotations

import math
import sys

import pytest

from gamut.cuda import device as dev
from gamut.scanning import engines
from gamut.scanning.engines import auto_gpu_min_cells, make_engine, pick_device


@pytest.fixture
def with_gpus(monkeypatch):
    monkeypatch.setattr(dev, "available_gpus", lambda: (0, 1))


def test_threshold_is_the_break_even_point():
    for threads in (2, 16):
        cells = auto_gpu_min_cells(threads)
        cpu = engines.AUTO_CPU_CELLS_PER_CORE_S * threads
        assert cells / cpu == pytest.approx(engines.AUTO_GPU_EXTRA_STARTUP_S + cells / engines.AUTO_GPU_CELLS_S)
    assert auto_gpu_min_cells(2) < auto_gpu_min_cells(16)  # more cores: the CPU holds out longer


def test_cpu_faster_than_gpu_never_picks_gpu(monkeypatch, with_gpus):
    monkeypatch.setattr(engines, "AUTO_GPU_CELLS_S", engines.AUTO_CPU_CELLS_PER_CORE_S * 8)
    assert math.isinf(auto_gpu_min_cells(8))
    assert pick_device("auto", 8, None, 10**15) == "cpu"
    assert pick_device("cuda", 8, None, 10) == "cuda"


def test_auto_picks_by_size(with_gpus):
    small = int(auto_gpu_min_cells(16) * 0.9)
    large = int(auto_gpu_min_cells(16) * 1.1)
    assert pick_device("auto", 16, None, small) == "cpu"
    assert pick_device("auto", 16, None, large) == "cuda"
    assert pick_device("auto", 16, None, None) == "cuda"  # size unknown: as before
    assert pick_device("cuda", 16, None, 1) == "cuda"  # asked for: always
    assert pick_device("cpu", 16, None, 10**15) == "cpu"
    assert pick_device("auto", 16, "0", small) == "cuda"  # GPUs named: the GPU


def test_auto_without_gpu_is_cpu(monkeypatch):
    monkeypatch.setattr(dev, "available_gpus", lambda: ())
    assert pick_device("auto", 16, None, 10**15) == "cpu"


def test_small_auto_scan_does_not_look_for_a_gpu(monkeypatch):
    """Below the threshold, auto decides before CuPy is imported or the driver touched."""
    def fail():
        raise AssertionError("GPU discovery on a small auto scan")

    monkeypatch.setattr(dev, "available_gpus", fail)
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert pick_device("auto", 4, None, 1000) == "cpu"
    assert make_engine("auto", 2, None, cells=1000).name != "cuda"


def test_unknown_device_is_still_refused():
    from gamut.errors import UsageError

    with pytest.raises(UsageError, match="unknown device"):
        pick_device("tpu", 2, None, 10)
