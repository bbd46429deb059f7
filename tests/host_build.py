"""Builds of the CUDA kernels for the CPU, for tests on machines without a GPU.

Each harness in ``tests/host/`` includes a kernel source of :mod:`gamut.cuda` (found on the
include path) and exposes its device functions as plain C functions; this module compiles it
with g++ into a shared library and loads it with :mod:`ctypes`.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Iterable

import pytest

HARNESSES = Path(__file__).resolve().parent / "host"
FLAGS = ("-x", "c++", "-std=c++17", "-O2", "-shared", "-fPIC")


def kernel_dir() -> Path:
    """The installed package's directory of kernel sources."""
    return Path(str(resources.files("gamut.cuda").joinpath("kernels")))


def require_compiler() -> None:
    """Skip the calling test when g++ is not installed."""
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed to build the host version of the kernels")


def build_host_library(harness: str, out_dir: str | Path, *, options: Iterable[str] = (),
                       tag: str = "") -> str:
    """Compile ``tests/host/<harness>.cu`` with g++ into ``out_dir``; returns the library's path.

    ``options`` are extra compiler flags (``-D`` definitions, warnings)."""
    require_compiler()
    lib = str(Path(out_dir) / f"{harness}{tag}.so")
    command = ["g++", *FLAGS, f"-I{kernel_dir()}", *options, "-o", lib, str(HARNESSES / f"{harness}.cu")]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"g++ failed on {harness}.cu:\n{done.stderr}")
    return lib


def load_host_library(harness: str, out_dir: str | Path, *, options: Iterable[str] = (),
                      tag: str = "") -> ctypes.CDLL:
    """:func:`build_host_library`, then load it."""
    return ctypes.CDLL(build_host_library(harness, out_dir, options=options, tag=tag))
