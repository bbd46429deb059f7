"""gpu_mfe.CupyRunner without a GPU: a stand-in for CuPy whose arrays are NumPy arrays and whose
kernels are the host build's functions. Every launch's arguments are checked against the kernel's
parameter list read from turner_mfe.cu (count, order, array element types and scalar widths), so the
driver's calls are the ones the device code expects; the results must equal ViennaRNA's."""
from __future__ import annotations

import ctypes
import re
import sys
import types

import numpy as np
import pytest

pytest.importorskip("RNA")

from turner_mfe_host import build_turner_mfe_host  # noqa: E402
from turner_mfe_reference import check_folds, random_rnas  # noqa: E402

from gamut.cuda.kernels import kernel_source  # noqa: E402
from gamut.folding.turner import gpu_mfe  # noqa: E402
from gamut.folding.turner.batch_tuning import BatchTuning  # noqa: E402
from gamut.folding.turner.options import TurnerOptions  # noqa: E402

#: C parameter types of the kernels -> what the driver must pass.
PARAMETER_TYPES = {
    "const int*": np.int32, "int*": np.int32, "const unsigned char*": np.uint8, "char*": np.uint8,
    "const long long*": np.int64, "int": np.int32, "long long": np.int64,
}


def kernel_parameters() -> dict[str, list[tuple[str, bool]]]:
    """Each kernel's parameters as (type, is_pointer), read from turner_mfe.cu."""
    source = kernel_source("turner_mfe.cu")
    model = re.search(r"#define TMFE_MODEL_ARGS (.*)", source).group(1)
    out = {}
    for name, params in re.findall(r'extern "C" __global__ void (\w+)\(([^)]*)\)', source):
        params = params.replace("TMFE_MODEL_ARGS", model)
        parsed = []
        for param in params.split(","):
            param = " ".join(param.replace("*", "* ").split())
            words = param.split()
            ctype = " ".join(words[:-1]).replace(" *", "*")
            parsed.append((ctype, ctype.endswith("*")))
        out[name] = parsed
    return out


class FakeKernel:
    #: A CUDA function's attributes that the driver reads or sets (CuPy's RawKernel properties).
    num_regs = 64
    shared_size_bytes = 16
    max_dynamic_shared_size_bytes = 48 * 1024
    preferred_shared_memory_carveout = -1

    def __init__(self, name: str, params, lib, calls: list) -> None:
        self.name, self.params, self.lib, self.calls = name, params, lib, calls

    def __call__(self, grid, block, args, shared_mem: int = 0) -> None:
        assert len(args) == len(self.params), f"{self.name}: {len(args)} arguments for {len(self.params)} parameters"
        converted = []
        for x, (arg, (ctype, pointer)) in enumerate(zip(args, self.params)):
            want = PARAMETER_TYPES[ctype]
            if pointer:
                assert isinstance(arg, np.ndarray) and arg.dtype == want, f"{self.name} argument {x}: {ctype}"
                assert arg.flags.c_contiguous
                converted.append(ctypes.c_void_p(arg.ctypes.data))
            else:
                assert type(arg) is want, f"{self.name} argument {x}: {ctype}, got {type(arg).__name__}"
                converted.append(ctypes.c_longlong(int(arg)) if want is np.int64 else ctypes.c_int(int(arg)))
        self.calls.append((self.name, grid, block, shared_mem))
        assert shared_mem <= self.max_dynamic_shared_size_bytes, f"{self.name}: {shared_mem} bytes of shared memory"
        if self.name.startswith("tmfe_batch"):
            assert block[0] % 32 == 0
            if self.name == "tmfe_batch_shared" or (self.name == "tmfe_batch_warps" and args[-1]):
                assert self.preferred_shared_memory_carveout == 100
                groups = block[0] // 32 if self.name == "tmfe_batch_warps" else 1
                assert shared_mem == groups * 4 * int(args[10 if self.name == "tmfe_batch_shared" else 11])  # work_ints
            else:
                assert shared_mem == 0
            getattr(self.lib, f"host_{self.name}")(*converted, ctypes.c_int(grid[0]), ctypes.c_int(block[0]))
        elif self.name == "tmfe_diagonal":
            n, d, parts = int(args[6]), int(args[8]), int(args[9])
            assert grid[0] * block[0] >= (n - d) * parts and block[0] % parts == 0
            self.lib.host_tmfe_diagonal(*converted)
        else:
            assert grid == (1,) and block[0] % 32 == 0 and shared_mem == 0
            self.lib.host_tmfe_finish(*converted)


def fake_cupy(lib, calls: list) -> types.ModuleType:
    """The parts of CuPy that CupyRunner uses, on NumPy."""
    cp = types.ModuleType("cupy")
    cp.int32, cp.int64, cp.uint8 = np.int32, np.int64, np.uint8
    cp.asarray = lambda a, dtype=None: np.ascontiguousarray(a, dtype)
    cp.asnumpy = np.asarray
    cp.full, cp.zeros, cp.empty = np.full, np.zeros, np.empty

    class Device:
        attributes = {"MultiProcessorCount": 2, "MaxSharedMemoryPerBlockOptin": 232448,
                      "MaxSharedMemoryPerMultiprocessor": 233472, "L2CacheSize": 50 << 20}

        def __init__(self, *_):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *_):
            return False

    class Event:
        def record(self):
            pass

        def synchronize(self):
            pass

    class Pool:
        def free_bytes(self):
            return 0

        def free_all_blocks(self):
            pass

    cuda = types.SimpleNamespace(Device=Device, Event=Event, get_elapsed_time=lambda a, b: 0.0,
                                 runtime=types.SimpleNamespace(memGetInfo=lambda: (1 << 32, 1 << 32),
                                                               getDeviceProperties=lambda _: {"name": b"host"}),
                                 memory=types.SimpleNamespace(OutOfMemoryError=MemoryError))
    cp.cuda = cuda
    cp.get_default_memory_pool = Pool
    return cp


@pytest.fixture()
def driver(tmp_path, monkeypatch):
    lib = ctypes.CDLL(build_turner_mfe_host(tmp_path))
    calls: list = []
    params = kernel_parameters()
    assert set(params) == set(gpu_mfe.KERNELS)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(lib, calls))
    module = types.SimpleNamespace(get_function=lambda name: FakeKernel(name, params[name], lib, calls))
    monkeypatch.setattr("gamut.cuda.kernels.load_module", lambda *a, **k: module)
    return lambda tuning=None: gpu_mfe.CupyRunner(0, tuning), calls


@pytest.mark.parametrize("options", [TurnerOptions(), TurnerOptions(no_lp=True, dangles=0, max_bp_span=60)])
def test_cupy_runner_calls_the_kernels_as_they_are_declared(driver, options):
    make, calls = driver
    runner = make()
    sequences = random_rnas(70, 1, 150, seed=5) + random_rnas(1, 300, 300, seed=6)
    energies, structures = gpu_mfe.mfe_batch(sequences, options, runner=runner, long_from=300)
    check_folds(sequences, options, energies, structures)
    names = [c[0] for c in calls]
    assert names.count("tmfe_diagonal") == 300 and names.count("tmfe_finish") == 1
    assert names.count("tmfe_batch") == 3


@pytest.mark.parametrize("tuning", [BatchTuning(warps=4, shared_upto=64), BatchTuning(shared_upto=128, blocks_per_sm=1),
                                    BatchTuning(warps=2, blocks_per_sm=3)], ids=lambda t: t.label())
def test_cupy_runner_calls_the_variants_as_they_are_declared(driver, tuning):
    """The batch variants' launches (GAMUT_TMFE_* knobs given as a BatchTuning): arguments as the
    kernels declare them, shared memory as the shape asks (opted in above 48 KB), ViennaRNA's results."""
    make, calls = driver
    runner = make(tuning)
    sequences = random_rnas(70, 1, 150, seed=5)
    for options in (TurnerOptions(), TurnerOptions(no_lp=True)):
        calls.clear()
        energies, structures = gpu_mfe.mfe_batch(sequences, options, runner=runner)
        check_folds(sequences, options, energies, structures)
        names = [c[0] for c in calls]
        assert names[0] == ("tmfe_batch_warps" if tuning.warps else "tmfe_batch_shared")
        assert (calls[0][3] > 0) == bool(tuning.shared_upto)
        if tuning.shared_upto == 128:  # the 65-128-nt class's area needs more than 48 KB
            assert names[1] == "tmfe_batch_shared" and calls[1][3] > 48 * 1024
            assert runner.kernels["tmfe_batch_shared"].max_dynamic_shared_size_bytes >= calls[1][3]


def test_tuning_comes_from_the_environment(driver, monkeypatch):
    make, _ = driver
    monkeypatch.setenv("GAMUT_TMFE_WARPS", "4")
    monkeypatch.setenv("GAMUT_TMFE_BLOCKS_PER_SM", "6")
    assert make().tuning == BatchTuning(blocks_per_sm=6, warps=4)
    monkeypatch.delenv("GAMUT_TMFE_WARPS")
    monkeypatch.delenv("GAMUT_TMFE_BLOCKS_PER_SM")
    assert make().tuning == BatchTuning()


def test_batch_variants_bench_runs(driver, tmp_path, monkeypatch):
    """bench/turner_batch_variants.py end to end on a sliver of its sets (the host kernels behind
    the stand-in CuPy): every row measured, every variant the same as the default, md and json."""
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "turner_batch_variants.py"
    spec = importlib.util.spec_from_file_location("turner_batch_variants", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.setattr(bench, "VIENNA_SAMPLE", 5)
    monkeypatch.setattr(sys, "argv", ["turner_batch_variants.py", "--out", str(tmp_path), "--label", "host",
                                      "--scale", "0.0001"])
    assert bench.main() == 0
    report = json.loads((tmp_path / "turner_batch_variants_host.json").read_text())
    assert len(report["rows"]) == sum(len(v) for _, _, v in bench.SETS.values())
    assert all(row["same_as_default"] == "yes" for row in report["rows"])
    assert report["vienna"]["w50"] == {"checked": 5, "same_mfe": 5, "structure_optimal": 5}
    assert (tmp_path / "turner_batch_variants_host.md").read_text().count("| w50 |") == len(bench.SETS["w50"][2])
