"""Which compute device to use: ``auto`` picks a CUDA GPU when CuPy and a device are present."""
from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import threading
import types
from typing import Mapping, Sequence

from gamut.errors import DeviceError, UsageError

DEVICES = ("auto", "cpu", "cuda")

#: Analyses whose CUDA engine has passed its GPU tests (``python -m pytest -m gpu tests/``) on
#: real hardware: ``--device auto`` uses the GPU only for these, so that an engine not yet checked
#: on a GPU is never picked unasked; ``--device cuda`` always can. ``energy`` is the duplex-energy
#: engine (used by the scan when it runs on the GPU). ``fold-turner`` is ``gamut fold --model
#: turner`` (its GPU tests passed on an H200 on the code as it is on 2026-11-28,
#: ``bench/results/pytest_gpu_turner_h200_2026-11-28.log``).
VERIFIED_GPU_ENGINES: frozenset[str] = frozenset({"scan", "fold", "splice", "energy", "access", "fold-turner"})


_discovery_lock = threading.Lock()
_discovered: tuple[int, ...] | None = None


def available_gpus() -> tuple[int, ...]:
    """Indices of the CUDA devices CuPy can use (empty without CuPy or a GPU).

    Found once per process (importing CuPy and initialising the CUDA driver), under a lock, so
    that :func:`prewarm`'s thread and the main thread never do it twice.
    """
    global _discovered
    if _discovered is None:
        with _discovery_lock:
            if _discovered is None:
                _discovered = _count_gpus()
    return _discovered


def _count_gpus() -> tuple[int, ...]:
    try:
        import cupy  # noqa: F401
        from cupy.cuda import runtime

        return tuple(range(runtime.getDeviceCount()))
    except Exception:  # ImportError, CUDARuntimeError, missing driver...
        return ()


def discover_from_driver_listing() -> tuple[int, ...]:
    """Take the GPUs this process can use to be those :func:`visible_gpu_count` lists (when CuPy is
    installed), without initialising CUDA, for a process that never drives a GPU itself: the main
    process of a scan on several GPUs, whose worker processes do (initialising the driver there
    took 0.3-0.6 s of the interpreter lock on 2x H200, before the inputs were read). A GPU listed
    but not usable fails in its worker, with a one-line error. Returns what discovery now holds."""
    global _discovered
    with _discovery_lock:
        if _discovered is None and importlib.util.find_spec("cupy") is not None:
            count = visible_gpu_count()
            if count:
                _discovered = tuple(range(count))
    return available_gpus()


def start_driver(device_id: int, library: str = "libcuda.so.1") -> bool:
    """Initialise the CUDA driver and create device ``device_id``'s primary context (the one the
    runtime and CuPy use) through the driver's C calls, which run without Python's interpreter
    lock (ctypes lets it go): CuPy's own first calls (device count, ``cudaFree(0)``) hold the lock
    for 0.3-0.45 s each and stopped every other thread of the process meanwhile (its imports).
    Its later calls find the driver and context made. False (and nothing done) where the driver
    library or the device is missing."""
    try:
        lib = ctypes.CDLL(library)
    except OSError:
        return False
    device = ctypes.c_int()
    context = ctypes.c_void_p()
    return (lib.cuInit(0) == 0 and lib.cuDeviceGet(ctypes.byref(device), int(device_id)) == 0
            and lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0)


def visible_gpu_count(environ: Mapping[str, str] | None = None, driver: str = "/proc/driver/nvidia/gpus") -> int:
    """How many GPUs CUDA will show, as far as can be told without initialising it: the entries of
    ``CUDA_VISIBLE_DEVICES`` when set, else the NVIDIA driver's GPUs; 0 when neither says."""
    environ = os.environ if environ is None else environ
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([g for g in visible.split(",") if g.strip()])
    try:
        return len(os.listdir(driver))
    except OSError:
        return 0


def prewarm(device_id: int = 0) -> threading.Thread:
    """Start, on a daemon thread, what a CUDA run pays before its first kernel: importing CuPy,
    initialising the driver (:func:`available_gpus`), creating device ``device_id``'s context
    and importing ``cupyx`` (which CuPy's first kernel imports; without its SciPy probe, see
    :mod:`gamut.probes`). The command line calls it for ``--device cuda`` as its first step, so
    that this overlaps the main thread's own imports and input reading; failures are left to the
    main thread, which meets them again and reports them."""

    def warm() -> None:
        from gamut.timeline import span

        try:
            with span("CUDA context", gpu=device_id):
                start_driver(device_id)  # the slow part, without the interpreter lock
                if device_id in available_gpus():
                    from cupy.cuda import runtime

                    runtime.setDevice(device_id)
                    runtime.free(0)  # cudaFree(NULL): creates the primary context
                    from gamut.probes import import_without_probes

                    import_without_probes(["cupyx"])
        except Exception:  # noqa: BLE001 (reported by the main thread when it needs the GPU)
            pass

    thread = threading.Thread(target=warm, name="gamut-cuda-prewarm", daemon=True)
    thread.start()
    return thread


@functools.lru_cache(maxsize=None)
def _attributes(device_id: int) -> Mapping[str, int]:
    import cupy

    return types.MappingProxyType(dict(cupy.cuda.Device(device_id).attributes))


def device_attributes(device_id: int | None = None) -> Mapping[str, int]:
    """CuPy's attributes of CUDA device ``device_id`` (default: the current one), read once per
    process: ``cupy.cuda.Device.attributes`` queries every attribute on each access."""
    if device_id is None:
        import cupy

        device_id = cupy.cuda.Device().id
    return _attributes(int(device_id))


def gpu_available() -> bool:
    """True when at least one CUDA device can be used through CuPy."""
    return bool(available_gpus())


def gpu_engine_verified(analysis: str) -> bool:
    """Whether ``analysis``' CUDA engine has passed its GPU tests (:data:`VERIFIED_GPU_ENGINES`),
    so that ``auto`` may choose it."""
    return analysis in VERIFIED_GPU_ENGINES


def resolve_device(device: str = "auto", analysis: str | None = None) -> str:
    """Map ``auto|cpu|cuda`` to ``cpu`` or ``cuda``; ``cuda`` without a GPU is an error.

    With ``auto`` and an ``analysis`` name ("scan", "fold", "splice"), the GPU is chosen only when
    that analysis' CUDA engine is in :data:`VERIFIED_GPU_ENGINES`.
    """
    if device not in DEVICES:
        raise UsageError(f"unknown device '{device}' (choose from {', '.join(DEVICES)})")
    if device == "cpu":
        return "cpu"
    if device == "auto" and analysis is not None and not gpu_engine_verified(analysis):
        return "cpu"
    if gpu_available():
        return "cuda"
    if device == "cuda":
        raise DeviceError(
            "--device cuda requested but no CUDA GPU is usable "
            "(install CuPy, e.g. pip install 'gamut-rna[cuda12]', and check the driver)"
        )
    return "cpu"


def check_gpus_used(spec: str | Sequence[int] | None, device: str, analysis: str, cluster: object = None) -> None:
    """Refuse ``--gpus`` when no GPU engine will run here, where it would be silently ignored.

    A remote cluster (a scheduler address) is left alone: its workers choose their own devices.
    ``--device cuda`` without a GPU raises :class:`DeviceError` from :func:`resolve_device`.
    """
    if spec is None or (cluster is not None and not str(cluster).startswith("local")):
        return
    if device == "cpu":
        raise UsageError(f"--gpus {_shown(spec)} needs a GPU engine, but --device cpu was given")
    if resolve_device(device, analysis) != "cuda":
        raise UsageError(f"--gpus {_shown(spec)} needs a GPU engine, but no CUDA GPU is usable here "
                         "(the CPU engine would run); drop --gpus or install CuPy")


def _shown(spec: str | Sequence[int]) -> str:
    return spec if isinstance(spec, str) else ",".join(str(g) for g in spec)


def parse_gpus(spec: str | Sequence[int] | None) -> list[int]:
    """Parse ``--gpus``: ``None``/``"0"`` style lists, ``"0,1,3"`` or ``"all"``; checks they exist.

    An index may be named more than once (``"0,0"``): the scan then runs two worker processes on
    it (:func:`gamut.scanning.pipeline.lanes.worker_lanes`)."""
    gpus = available_gpus()
    if spec is None:
        return [gpus[0]] if gpus else []
    if isinstance(spec, str):
        if spec.strip().lower() == "all":
            return list(gpus)
        try:
            wanted = [int(part) for part in spec.split(",") if part.strip()]
        except ValueError:
            raise UsageError(f"--gpus expects 'all' or a comma-separated list of indices, got '{spec}'") from None
    else:
        wanted = [int(g) for g in spec]
    missing = [g for g in wanted if g not in gpus]
    if missing:
        raise DeviceError(f"GPU(s) {missing} not present (available: {list(gpus) or 'none'})")
    if not wanted:
        raise UsageError("--gpus names no GPU")
    return wanted
