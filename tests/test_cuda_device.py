"""Device selection: --device auto|cpu|cuda and --gpus, with and without a GPU."""
from __future__ import annotations

import pytest

from gamut.cuda import device as dev
from gamut.errors import DeviceError, UsageError


def test_cpu_is_always_cpu():
    assert dev.resolve_device("cpu") == "cpu"


def test_unknown_device_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown device 'tpu'"):
        dev.resolve_device("tpu")


def test_without_gpu(monkeypatch):
    monkeypatch.setattr(dev, "available_gpus", lambda: ())
    assert dev.resolve_device("auto") == "cpu"
    with pytest.raises(DeviceError, match="no CUDA GPU"):
        dev.resolve_device("cuda")
    with pytest.raises(DeviceError, match="not present"):
        dev.parse_gpus("0")
    assert dev.parse_gpus(None) == []


def test_with_gpus(monkeypatch):
    monkeypatch.setattr(dev, "available_gpus", lambda: (0, 1, 2))
    assert dev.resolve_device("cuda", "scan") == "cuda"
    assert dev.resolve_device("auto") == "cuda"
    # auto uses an analysis' GPU engine only once it is verified on hardware
    monkeypatch.setattr(dev, "VERIFIED_GPU_ENGINES", frozenset({"fold"}))
    assert dev.resolve_device("auto", "fold") == "cuda"
    assert dev.resolve_device("auto", "scan") == "cpu"
    assert dev.parse_gpus("all") == [0, 1, 2]
    assert dev.parse_gpus("0,2") == [0, 2]
    assert dev.parse_gpus(None) == [0]
    with pytest.raises(UsageError):
        dev.parse_gpus("zero")
    with pytest.raises(DeviceError):
        dev.parse_gpus("5")
