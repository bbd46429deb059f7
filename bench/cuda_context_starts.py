"""Do CUDA context starts overlap? (issue 45: a scan's GPU workers were ready later the more of them
there were.) Times the driver's start (``cuInit``) and a device's primary context
(``cuDevicePrimaryCtxRetain``, what CuPy and gamut's workers make) through ctypes, for:

- ``processes``: one process per entry of ``--gpus`` (``0,1,2,3``; ``0,0,1,1`` for two per GPU), all
  started together, each seeing its GPU alone (``CUDA_VISIBLE_DEVICES``), as gamut's workers do;
- ``threads``: one process, one thread per entry, each making its device's context;
- ``serial``: one process making the contexts one after the other.

Prints a JSON object per mode: every unit's start, driver-ready and context-ready times in seconds
after the mode began (the launcher's clock), and the last context's time. Run on a GPU machine:
``python bench/cuda_context_starts.py --gpus 0,1,2,3``.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import threading
import time

LIB = "libcuda.so.1"


def _check(code: int, what: str) -> None:
    if code != 0:
        raise RuntimeError(f"{what} failed with CUDA error {code}")


def _context(lib, ordinal: int) -> float:
    """Make device ``ordinal``'s primary context; the wall clock when it is made."""
    device, context = ctypes.c_int(), ctypes.c_void_p()
    _check(lib.cuDeviceGet(ctypes.byref(device), ordinal), "cuDeviceGet")
    _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    _check(lib.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    pointer = ctypes.c_uint64()
    _check(lib.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(1 << 20)), "cuMemAlloc")
    return time.time()


def child() -> None:
    """One process: the driver, then device 0's context (its GPU alone is visible); a JSON line."""
    began = time.time()
    lib = ctypes.CDLL(LIB)
    _check(lib.cuInit(0), "cuInit")
    driver = time.time()
    print(json.dumps({"start": began, "driver": driver, "context": _context(lib, 0)}))


def processes(gpus: list[int]) -> dict:
    t0 = time.time()
    procs = [subprocess.Popen([sys.executable, __file__, "--child"], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "CUDA_VISIBLE_DEVICES": str(g)}) for g in gpus]
    units = []
    for g, p in zip(gpus, procs):
        out, _ = p.communicate()
        got = json.loads(out.strip().splitlines()[-1])
        units.append({"gpu": g, **{k: round(v - t0, 3) for k, v in got.items()}})
    return {"mode": "processes", "gpus": gpus, "units": units, "last_context_s": max(u["context"] for u in units)}


def in_one_process(gpus: list[int], threaded: bool) -> dict:
    t0 = time.time()
    lib = ctypes.CDLL(LIB)
    _check(lib.cuInit(0), "cuInit")
    driver = round(time.time() - t0, 3)
    distinct = sorted(set(gpus))
    done: dict[int, float] = {}

    def make(g: int) -> None:
        done[g] = round(_context(lib, g) - t0, 3)

    if threaded:
        threads = [threading.Thread(target=make, args=(g,)) for g in distinct]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        for g in distinct:
            make(g)
    return {"mode": "threads" if threaded else "serial", "gpus": distinct, "driver_s": driver,
            "contexts_s": done, "last_context_s": max(done.values())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", default="0")
    ap.add_argument("--modes", default="processes,threads,serial")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--in-one", choices=("threads", "serial"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child()
        return
    gpus = [int(g) for g in args.gpus.split(",")]
    if args.in_one:
        print(json.dumps(in_one_process(gpus, args.in_one == "threads")), flush=True)
        return
    for mode in args.modes.split(","):
        if mode == "processes":
            print(json.dumps(processes(gpus)), flush=True)
        else:  # a fresh process: the driver and contexts of an earlier mode must not be made already
            subprocess.run([sys.executable, __file__, "--gpus", args.gpus, "--in-one", mode], check=True)


if __name__ == "__main__":
    main()
