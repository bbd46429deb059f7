"""Load CUDA C++ kernels from ``gamut/cuda/kernels/*.cu``, compiled at run time by CuPy (NVRTC).

Modules are compiled once per (file, options, device) and cached by CuPy on disk as well.
"""
from __future__ import annotations

import functools
from importlib import resources


def kernel_source(filename: str) -> str:
    """The text of a kernel file shipped in ``gamut/cuda/kernels``."""
    return resources.files("gamut.cuda").joinpath("kernels", filename).read_text()


@functools.lru_cache(maxsize=None)
def _compiled(filename: str, options: tuple[str, ...], name_expressions: tuple[str, ...], device_id: int):
    import cupy

    with cupy.cuda.Device(device_id):
        cc = cupy.cuda.Device(device_id).compute_capability  # e.g. "90"
        opts = ("-std=c++17", f"--gpu-architecture=sm_{cc}", *options)
        module = cupy.RawModule(
            code=kernel_source(filename),
            options=opts,
            name_expressions=name_expressions or None,
        )
        module.compile()
        return module


def load_module(
    filename: str,
    *,
    options: tuple[str, ...] = (),
    name_expressions: tuple[str, ...] = (),
    device_id: int | None = None,
):
    """Compile (once) and return a ``cupy.RawModule`` for ``filename`` on ``device_id``.

    The code is built for the device's own architecture (``sm_90`` on Hopper, where DPX
    instructions such as ``__viaddmax_s32`` run natively). Extra NVRTC ``options`` such as
    ``-DTILE=32`` may be given.
    """
    import cupy

    if device_id is None:
        device_id = cupy.cuda.runtime.getDevice()
    return _compiled(filename, tuple(options), tuple(name_expressions), int(device_id))
