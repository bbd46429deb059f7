"""The heap settings of a streaming process (gamut.io.heap): taken where set, as a call or through the
environment of a process about to start (Dask's nanny's own setting replaced), and left off on request."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

import pytest

import gamut.io.heap as heap
from gamut.cluster import local_worker_specs

linux_glibc = pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(ctypes.CDLL(None), "mallinfo2"),
                                 reason="glibc's mallinfo2 reports where the C heap put a buffer")

#: A child process: optionally take the settings by the call, malloc 64 MiB (above glibc's largest
#: dynamic mmap threshold, 32 MiB) and print the bytes the C heap holds in mmapped blocks.
MAPPED = """
import ctypes, sys
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
if sys.argv[1] == "call":
    import gamut.io.heap
    assert gamut.io.heap.reuse_large_buffers()
block = libc.malloc(64 << 20)
print(libc.mallinfo2().hblkhd)
"""


def _mapped_bytes(how: str, env: dict[str, str]) -> int:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GAMUT_HEAP_REUSE"}
    done = subprocess.run([sys.executable, "-c", MAPPED, how], env={**base, **env}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


@linux_glibc
@pytest.mark.parametrize("how", ["call", "environment"])
@pytest.mark.parametrize("nanny", [False, True])
def test_a_large_buffer_comes_from_the_heap_once_the_settings_are_taken(how, nanny):
    nannys = {"MALLOC_TRIM_THRESHOLD_": "65536"} if nanny else {}  # what Dask's nanny gives its workers
    assert _mapped_bytes("none", nannys) >= 64 << 20  # without them: a fresh mapping
    env = {**nannys, **heap.reuse_environ()} if how == "environment" else nannys
    assert _mapped_bytes("call" if how == "call" else "none", env) < 64 << 20


def test_the_settings_are_left_off_on_request(monkeypatch):
    monkeypatch.setattr(ctypes, "CDLL", lambda name: pytest.fail("mallopt called"))
    monkeypatch.setenv("GAMUT_HEAP_REUSE", "0")
    assert heap.reuse_large_buffers() is False
    assert heap.reuse_environ() == {}
    assert all(spec["env"] == {} for spec in local_worker_specs(2, False, []).values())
    monkeypatch.setenv("GAMUT_HEAP_REUSE", "1")
    assert heap.reuse_environ() == {"MALLOC_MMAP_THRESHOLD_": str(heap.REUSE_LIMIT),
                                    "MALLOC_TRIM_THRESHOLD_": str(2 * heap.REUSE_LIMIT)}


def test_local_workers_get_the_settings_with_their_gpu(monkeypatch):
    monkeypatch.delenv("GAMUT_HEAP_REUSE", raising=False)
    monkeypatch.delenv("GAMUT_WORKERS_PER_GPU", raising=False)
    specs = local_worker_specs(None, True, [0, 3])
    assert {name: spec["env"] for name, spec in specs.items()} == {
        f"gamut-gpu{g}-{k}": {**heap.reuse_environ(), "CUDA_VISIBLE_DEVICES": str(g)} for g in (0, 3) for k in (0, 1)}
    monkeypatch.setenv("GAMUT_WORKERS_PER_GPU", "1")
    assert list(local_worker_specs(1, True, [2, 3])) == ["gamut-gpu2-0"]
    assert all(spec["nthreads"] == 1 for spec in specs.values())


def test_a_local_cluster_worker_starts_with_the_settings_in_place_of_the_nannys(monkeypatch):
    pytest.importorskip("distributed")
    from gamut.cluster import connect

    monkeypatch.delenv("GAMUT_HEAP_REUSE", raising=False)
    with connect("local:1", device="cpu") as conn:
        got = conn.client.run(lambda: json.dumps({k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}))
    assert [json.loads(v) for v in got.values()] == [heap.reuse_environ()]
