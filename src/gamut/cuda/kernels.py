"""Load CUDA C++ kernels from ``gamut/cuda/kernels/*.cu``, compiled at run time by NVRTC (CuPy).

A module is compiled once per (file, options, name expressions, device) in a process, and its
cubin is kept on disk in gamut's cache folder (``cache_root()/kernels``), keyed by the source text,
the options, the name expressions, the device's compute capability and the CuPy and NVRTC
versions; the lowered (mangled) names of the name expressions are stored beside it. CuPy's own
disk cache does not serve these modules: it recompiles every module that has name expressions
(to learn their mangled names), and runs NVRTC on an empty program once per option set and
process to key its cache. A cache hit here loads the cubin with no NVRTC call at all.
``GAMUT_KERNEL_CACHE=0`` turns the cache off (every process compiles through CuPy again).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
import threading
from importlib import resources
from pathlib import Path

from gamut.numerals import env_switch

#: Bump to drop every cached cubin (a change in how modules are built here).
CACHE_FORMAT = 1
_ELF = b"\x7fELF"
_lock = threading.Lock()


def kernel_source(filename: str) -> str:
    """The text of a kernel file shipped in ``gamut/cuda/kernels``."""
    return resources.files("gamut.cuda").joinpath("kernels", filename).read_text()


def kernel_cache_dir() -> Path | None:
    """Where compiled kernels are kept (None when ``GAMUT_KERNEL_CACHE=0``)."""
    if not env_switch("GAMUT_KERNEL_CACHE", True):
        return None
    from gamut.cache import cache_root

    return cache_root() / "kernels"


def cache_key(source: str, options: tuple[str, ...], name_expressions: tuple[str, ...], arch: str,
              toolchain: str) -> str:
    """The hex key of a compiled module: everything that changes the cubin."""
    blob = json.dumps([CACHE_FORMAT, source, list(options), list(name_expressions), arch, toolchain])
    return hashlib.sha256(blob.encode()).hexdigest()[:40]


class CachedModule:
    """A ``cupy.RawModule`` loaded from a cached cubin, whose ``get_function`` takes the same names
    (name expressions such as ``scan_pass1<24>``, or plain ``extern "C"`` names) as a module
    compiled from source with those name expressions."""

    def __init__(self, raw, mapping: dict[str, str]) -> None:
        self.raw = raw
        self.mapping = mapping

    def get_function(self, name: str):
        return self.raw.get_function(self.mapping.get(name, name))

    def __getattr__(self, name: str):
        return getattr(self.raw, name)


def _toolchain() -> str:
    import cupy

    try:
        nvrtc = ".".join(str(v) for v in cupy.cuda.nvrtc.getVersion())
    except Exception:  # noqa: BLE001 (no NVRTC: compiling fails below with CuPy's own message)
        nvrtc = "?"
    return f"cupy {cupy.__version__} nvrtc {nvrtc}"


def _read_cache(folder: Path, key: str):
    import cupy

    cubin, names = folder / f"{key}.cubin", folder / f"{key}.json"
    try:
        mapping = json.loads(names.read_text())
        if not cubin.is_file():
            return None
        raw = cupy.RawModule(path=str(cubin))
        raw.module  # noqa: B018 (loads it now, so a damaged file is a miss here, not an error later)
    except (OSError, ValueError, cupy.cuda.driver.CUDADriverError):
        return None
    return CachedModule(raw, mapping)


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _compile_and_store(source: str, opts: tuple[str, ...], names: tuple[str, ...], folder: Path, key: str):
    """Compile through CuPy into a private folder, keep the cubin and the mangled names under
    ``key`` and return the module (None when the cubin cannot be found: the caller compiles)."""
    import cupy
    from cupy.cuda import compiler

    with tempfile.TemporaryDirectory(prefix="gamut-nvrtc-") as scratch:
        module = compiler.compile_with_cache(source, opts, cache_dir=scratch, name_expressions=names or None)
        files = list(Path(scratch).glob("*.cubin"))
        if len(files) != 1:
            return None
        data = files[0].read_bytes()
    start = data.find(_ELF, 0, 256)  # CuPy's file: a hash of the cubin, then the cubin
    if start < 0:
        return None
    mapping = dict(getattr(module, "mapping", None) or {})
    if names and not all(n in mapping for n in names):
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(folder / f"{key}.cubin", data[start:])
        _write_atomic(folder / f"{key}.json", json.dumps(mapping).encode())
    except OSError:  # a read-only cache folder: the module still works, from memory
        pass
    raw = cupy.RawModule(path=str(folder / f"{key}.cubin")) if (folder / f"{key}.cubin").is_file() else None
    return CachedModule(raw, mapping) if raw is not None else None


@functools.lru_cache(maxsize=None)
def _compiled(filename: str, options: tuple[str, ...], name_expressions: tuple[str, ...], device_id: int):
    import cupy

    with cupy.cuda.Device(device_id):
        cc = cupy.cuda.Device(device_id).compute_capability  # e.g. "90"
        opts = ("-std=c++17", f"--gpu-architecture=sm_{cc}", *options)
        source = kernel_source(filename)
        folder = kernel_cache_dir()
        if folder is not None:
            key = cache_key(source, opts, name_expressions, f"sm_{cc}", _toolchain())
            with _lock:
                module = _read_cache(folder, key)
                if module is None:
                    try:
                        module = _compile_and_store(source, opts, name_expressions, folder, key)
                    except (AttributeError, TypeError, ImportError):  # another CuPy's internals: compile below
                        module = None
            if module is not None:
                return module
        module = cupy.RawModule(code=source, options=opts, name_expressions=name_expressions or None)
        module.compile()
        return module


def load_module(
    filename: str,
    *,
    options: tuple[str, ...] = (),
    name_expressions: tuple[str, ...] = (),
    device_id: int | None = None,
):
    """Compile (once; later processes load the cached cubin) and return the module for
    ``filename`` on ``device_id``; ``get_function`` takes kernel names or name expressions.

    The code is built for the device's own architecture (``sm_90`` on Hopper, where DPX
    instructions such as ``__viaddmax_s32`` run natively). Extra NVRTC ``options`` such as
    ``-DTILE=32`` may be given.
    """
    import cupy

    if device_id is None:
        device_id = cupy.cuda.runtime.getDevice()
    return _compiled(filename, tuple(options), tuple(name_expressions), int(device_id))
