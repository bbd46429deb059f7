"""Device selection: --device auto|cpu|cuda and --gpus, with and without a GPU."""
from __future__ import annotations

import sys

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


def test_discovery_runs_once(monkeypatch):
    calls = []
    monkeypatch.setattr(dev, "_discovered", None)
    monkeypatch.setattr(dev, "_count_gpus", lambda: calls.append(1) or (0,))
    threads = [dev.prewarm(5) for _ in range(3)]  # device 5 absent: discovery only, no context
    for t in threads:
        t.join(5)
    assert dev.available_gpus() == (0,) and dev.available_gpus() == (0,)
    assert calls == [1]


def test_cuda_requested_from_argv():
    from gamut.cli import cuda_requested

    assert cuda_requested(["miranda", "q", "r", "--device", "cuda"]) == 0
    assert cuda_requested(["scan", "q", "r", "--device=cuda", "--gpus", "2,3"]) == 2
    assert cuda_requested(["scan", "--device", "cuda", "--gpus", "all"]) == 0
    assert cuda_requested(["scan", "--device", "cuda", "--gpus", "x"]) is None
    assert cuda_requested(["miranda", "q", "r", "--device", "cpu"]) is None
    assert cuda_requested(["miranda", "q", "r"]) is None


class _FakeModule:
    def __init__(self, mapping):
        self.mapping = mapping


class _FakeRaw:
    loaded: list = []

    def __init__(self, *, path=None, code=None, options=(), name_expressions=None):
        self.path = path
        _FakeRaw.loaded.append(path)

    @property
    def module(self):
        return None

    def get_function(self, name):
        return (self.path, name)

    def compile(self):
        pass


def _fake_cupy(monkeypatch, tmp_path):
    """A CuPy stand-in whose compiler writes CuPy's cache-file layout (hash + ELF cubin)."""
    import types

    compiles = []

    def compile_with_cache(source, options, cache_dir=None, name_expressions=None):
        compiles.append((options, name_expressions))
        import pathlib

        pathlib.Path(cache_dir, "abc.cubin").write_bytes(b"0" * 32 + b"\x7fELF" + source.encode())
        return _FakeModule({n: f"_Z{len(n)}{n}" for n in name_expressions or ()})

    class Device:
        def __init__(self, i=0):
            self.id, self.compute_capability = i, "90"

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    driver = types.SimpleNamespace(CUDADriverError=RuntimeError)
    cuda = types.SimpleNamespace(Device=Device, driver=driver,
                                 nvrtc=types.SimpleNamespace(getVersion=lambda: (12, 4)),
                                 runtime=types.SimpleNamespace(getDevice=lambda: 0))
    compiler = types.SimpleNamespace(compile_with_cache=compile_with_cache)
    cupy = types.SimpleNamespace(__version__="13.0", cuda=cuda, RawModule=_FakeRaw)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", types.SimpleNamespace(compiler=compiler))
    monkeypatch.setitem(sys.modules, "cupy.cuda.compiler", compiler)
    return compiles


def test_kernel_cache_compiles_once_across_processes(monkeypatch, tmp_path):
    from gamut.cuda import kernels

    monkeypatch.setenv("GAMUT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GAMUT_KERNEL_CACHE", raising=False)
    compiles = _fake_cupy(monkeypatch, tmp_path)
    names = ("scan_pass1<24>", "scan_trace<24>")
    first = kernels._compiled.__wrapped__("scan_dp.cu", (), names, 0)
    assert len(compiles) == 1
    # a later process (no in-memory cache): the cubin and the mangled names come from disk
    again = kernels._compiled.__wrapped__("scan_dp.cu", (), names, 0)
    assert len(compiles) == 1
    assert again.get_function("scan_pass1<24>")[1] == "_Z14scan_pass1<24>"
    assert again.get_function("plain_kernel")[1] == "plain_kernel"
    assert first.mapping == again.mapping
    cubins = list((tmp_path / "cache" / "kernels").glob("*.cubin"))
    assert len(cubins) == 1 and cubins[0].read_bytes().startswith(b"\x7fELF")
    # other name expressions or options: another key, another compile
    kernels._compiled.__wrapped__("scan_dp.cu", (), ("scan_pass1<16>",), 0)
    kernels._compiled.__wrapped__("scan_dp.cu", ("-DX=1",), names, 0)
    assert len(compiles) == 3


def test_kernel_cache_off(monkeypatch, tmp_path):
    from gamut.cuda import kernels

    monkeypatch.setenv("GAMUT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GAMUT_KERNEL_CACHE", "0")
    compiles = _fake_cupy(monkeypatch, tmp_path)
    module = kernels._compiled.__wrapped__("scan_dp.cu", (), (), 0)
    assert isinstance(module, _FakeRaw) and not compiles
    assert not (tmp_path / "cache" / "kernels").exists()


def test_the_driver_is_started_without_cupy_where_there_is_one(tmp_path):
    assert dev.start_driver(0, library=str(tmp_path / "no_libcuda.so")) is False


def test_a_process_of_gpu_workers_takes_the_driver_listing(monkeypatch):
    """The main process of a scan on several GPUs never initialises CUDA: its GPUs are those
    CUDA_VISIBLE_DEVICES (or the driver) lists, when CuPy is installed."""
    import importlib.util

    monkeypatch.setattr(dev, "_discovered", None)
    monkeypatch.setattr(dev, "_count_gpus", lambda: pytest.fail("CUDA initialised"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name == "cupy" else None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert dev.discover_from_driver_listing() == (0, 1, 2)
    assert dev.parse_gpus("0,2") == [0, 2] and dev.resolve_device("cuda") == "cuda"


def test_without_cupy_the_listing_is_not_taken(monkeypatch):
    import importlib.util

    monkeypatch.setattr(dev, "_discovered", None)
    monkeypatch.setattr(dev, "_count_gpus", lambda: ())
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert dev.discover_from_driver_listing() == ()


def test_the_dask_preload_on_a_scheduler_imports_the_modules_of_gamuts_tasks(monkeypatch):
    """A scheduler unpickles each task, importing its function's module: the preload imports those of
    every function gamut's cluster tasks run, and nothing of a worker's start."""
    pytest.importorskip("distributed")
    import importlib

    import distributed

    from gamut import dask_preload
    from gamut.scanning.pipeline import ahead, partitions
    from gamut.splicing import api as splice_api

    tasks = (ahead.tile_run, partitions.compute_partition, partitions.compute_partitions,
             partitions.engine_chunking, splice_api._splice_batch)
    assert {fn.__module__ for fn in tasks} == set(dask_preload.TASK_MODULES)
    imported = []
    monkeypatch.setattr(importlib, "import_module", imported.append)
    monkeypatch.setattr(dev, "prewarm", lambda *a: pytest.fail("started CUDA on the scheduler"))
    scheduler = object.__new__(distributed.Scheduler)  # (its class is what the preload looks at)
    dask_preload.dask_setup(scheduler)
    assert imported == list(dask_preload.TASK_MODULES)


def test_the_dask_preload_takes_the_heap_settings_and_starts_no_cuda_where_no_gpu_is_seen(monkeypatch):
    import gamut.io.heap as heap
    from gamut import dask_preload

    taken = []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setattr(heap, "reuse_large_buffers", lambda: taken.append(True) or True)
    monkeypatch.setattr(dev, "prewarm", lambda *a: pytest.fail("started CUDA without a GPU"))
    dask_preload.dask_setup(None)
    assert taken == [True]
