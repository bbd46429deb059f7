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
    def __init__(self, name: str, params, lib, calls: list) -> None:
        self.name, self.params, self.lib, self.calls = name, params, lib, calls

    def __call__(self, grid, block, args) -> None:
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
        self.calls.append((self.name, grid, block))
        if self.name == "tmfe_batch":
            self.lib.host_tmfe_batch(*converted, ctypes.c_int(grid[0]), ctypes.c_int(block[0]))
        elif self.name == "tmfe_diagonal":
            n, d, parts = int(args[6]), int(args[8]), int(args[9])
            assert grid[0] * block[0] >= (n - d) * parts and block[0] % parts == 0
            self.lib.host_tmfe_diagonal(*converted)
        else:
            assert grid == (1,) and block[0] % 32 == 0
            self.lib.host_tmfe_finish(*converted)


def fake_cupy(lib, calls: list) -> types.ModuleType:
    """The parts of CuPy that CupyRunner uses, on NumPy."""
    cp = types.ModuleType("cupy")
    cp.int32, cp.int64, cp.uint8 = np.int32, np.int64, np.uint8
    cp.asarray = lambda a, dtype=None: np.ascontiguousarray(a, dtype)
    cp.asnumpy = np.asarray
    cp.full, cp.zeros, cp.empty = np.full, np.zeros, np.empty

    class Device:
        attributes = {"MultiProcessorCount": 2}

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
                                 runtime=types.SimpleNamespace(memGetInfo=lambda: (1 << 32, 1 << 32)),
                                 memory=types.SimpleNamespace(OutOfMemoryError=MemoryError))
    cp.cuda = cuda
    cp.get_default_memory_pool = Pool
    return cp


@pytest.fixture()
def driver(tmp_path, monkeypatch):
    lib = ctypes.CDLL(build_turner_mfe_host(tmp_path))
    calls: list = []
    params = kernel_parameters()
    assert set(params) == {"tmfe_batch", "tmfe_diagonal", "tmfe_finish"}
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(lib, calls))
    module = types.SimpleNamespace(get_function=lambda name: FakeKernel(name, params[name], lib, calls))
    monkeypatch.setattr("gamut.cuda.kernels.load_module", lambda *a, **k: module)
    return gpu_mfe.CupyRunner(0), calls


@pytest.mark.parametrize("options", [TurnerOptions(), TurnerOptions(no_lp=True, dangles=0, max_bp_span=60)])
def test_cupy_runner_calls_the_kernels_as_they_are_declared(driver, options):
    runner, calls = driver
    sequences = random_rnas(70, 1, 150, seed=5) + random_rnas(1, 300, 300, seed=6)
    energies, structures = gpu_mfe.mfe_batch(sequences, options, runner=runner, long_from=300)
    check_folds(sequences, options, energies, structures)
    names = [c[0] for c in calls]
    assert names.count("tmfe_diagonal") == 300 and names.count("tmfe_finish") == 1
    assert names.count("tmfe_batch") == 3
