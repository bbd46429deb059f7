"""Shared test fixtures: data paths and the ``gpu`` marker (skipped where no CUDA GPU exists)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

# Every command a test runs runs in its own process, never in a `gamut serve` the developer left
# running (tests/test_serve.py starts its own, on a socket of its own).
os.environ["GAMUT_SERVER"] = "off"


@pytest.fixture(autouse=True)
def _compiling_notice_off(monkeypatch):
    """The compiling notice (gamut.cache) shows when a command, or a compile in it, runs past a
    delay: a matter of timing in a test that runs a command in-process. Its own tests set a delay."""
    monkeypatch.setattr("gamut.cache.NOTICE_DELAY", 3600.0)


def pytest_collection_modifyitems(config, items):
    from gamut.cuda import gpu_available

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU (CuPy + device) available")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA
