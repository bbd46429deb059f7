"""Probe: the first read of a large FASTA file on a new thread, under the C heap's settings (issue 45).

With gamut's heap settings (gamut.io.heap: mmap threshold 256 MiB), the first read of the 124 Mb
transcriptome set on a new thread took 0.9-1.0 s where the main thread took 0.4 s and the same thread's
second read 0.2 s (2-core development machine, 2026-11-29); with glibc's defaults, or with one arena
for every thread (M_ARENA_MAX=1), 0.21-0.27 s. A Dask worker reads its stripe on its executor thread,
which is new for a cluster's first scan. On a 16-core H200 host the slow first read did not happen
(0.30 s with gamut's settings, 0.34 s with the defaults; bench/results/issue45_arena_nvidia-h200-2026-11-29j.md).
Each variant runs in a process of its own:

    python bench/thread_heap_probe.py /tmp/w/tx.fa
"""
from __future__ import annotations

import subprocess
import sys

CHILD = """
import ctypes, sys, threading, time
from gamut.io.heap import reuse_large_buffers
from gamut.scanning.fasta import read_miranda_fasta
variant, path = sys.argv[1], sys.argv[2]
if variant != "defaults":
    reuse_large_buffers()
if variant == "one-arena":
    ctypes.CDLL(None).mallopt(-8, 1)  # M_ARENA_MAX
start = time.perf_counter(); read_miranda_fasta(path); main = time.perf_counter() - start
def on_a_thread():
    a = time.perf_counter(); got = read_miranda_fasta(path); b = time.perf_counter(); del got
    read_miranda_fasta(path); c = time.perf_counter()
    print(f"{variant:>10}: main thread {main:.3f} s, new thread first {b - a:.3f} s, second {c - b:.3f} s")
thread = threading.Thread(target=on_a_thread); thread.start(); thread.join()
"""


def main() -> int:
    path = sys.argv[1]
    for variant in ("defaults", "gamut", "one-arena"):
        subprocess.run([sys.executable, "-c", CHILD, variant, path], check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
