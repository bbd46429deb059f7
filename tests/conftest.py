"""Shared test fixtures: data paths and the ``gpu`` marker (skipped where no CUDA GPU exists)."""
from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


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
