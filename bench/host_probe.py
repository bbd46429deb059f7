"""What a GPU host is, and what a whole scan costs on it, in one call (issue 45: one GPU took
8.0 s for the transcriptome set on the 16-core host and 10-17.8 s on the 32-core hosts).

    python bench/host_probe.py --data .data --out DIR [--copies 1 5 10] [--gpu-sets 0,1]

Reports, as markdown and JSON in ``--out``:

- the host: CPU model, cores, threads per core, NUMA nodes, memory, GPU topology;
- costs the scan's host side pays: first touch of fresh memory (a Firecracker VM grows its memory
  as it is touched), copies of warm memory, page-locked allocation and host-to-device copies, one
  core's Python speed, a Numba parallel loop on 1..all cores;
- whole ``gamut scan`` processes of the transcriptome case (``bench/scan_e2e.py``) at several sizes
  with ``--noenergy --score-threshold 160 -o hits.tsv`` on one GPU (time after start-up against
  size: a straight line or not), each GPU set of ``--gpu-sets`` on the largest, and the largest
  sampled thread by thread (``bench/sample_profile.py``).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scan_e2e  # noqa: E402

GiB = 1 << 30
FLAGS = ["--noenergy", "--score-threshold", "160"]


def sh(cmd: str) -> str:
    done = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    return (done.stdout + done.stderr).strip()


def host_facts() -> dict:
    lscpu = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in sh("lscpu").splitlines()) if v}
    mem = {k: v.strip() for k, _, v in (line.partition(":") for line in Path("/proc/meminfo").read_text().splitlines()[:3])}
    return {"cpu": lscpu.get("Model name"), "cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
            "threads_per_core": lscpu.get("Thread(s) per core"), "sockets": lscpu.get("Socket(s)"),
            "numa_nodes": lscpu.get("NUMA node(s)"), "numa": {k: v for k, v in lscpu.items() if k.startswith("NUMA node")},
            "mhz": lscpu.get("CPU MHz") or lscpu.get("CPU max MHz"), "memory": mem, "kernel": platform.release(),
            "cgroup_cpu_max": sh("cat /sys/fs/cgroup/cpu.max 2>/dev/null"),
            "gpu_topology": sh("nvidia-smi topo -m 2>/dev/null"),
            "gpus": sh("nvidia-smi --query-gpu=index,name,pci.bus_id,clocks.max.sm --format=csv,noheader 2>/dev/null")}


def seconds(fn, repeat: int = 1) -> list[float]:
    out = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        out.append(round(time.perf_counter() - began, 4))
    return out


def micro() -> dict:
    """Host costs, each in seconds (per GiB where it says so)."""
    res: dict = {}
    res["first_touch_s_per_gib"] = seconds(lambda: np.ones(GiB, np.uint8), 4)  # fresh mapping each time
    warm = np.ones(GiB, np.uint8)
    other = np.empty_like(warm)
    res["copy_warm_s_per_gib"] = seconds(lambda: np.copyto(other, warm), 3)
    res["python_loop_10m_s"] = seconds(lambda: sum(range(10_000_000)), 2)
    from numba import njit, prange, set_num_threads

    @njit(parallel=True, cache=False)
    def work(a):
        total = 0.0
        for i in prange(a.shape[0]):
            x = a[i] * 1.0001
            for _ in range(20):
                x = x * 0.999 + 0.5
            total += x
        return total

    data = np.ones(1 << 26)
    work(data)
    res["numba_parallel_s"] = {}
    for threads in sorted({1, 8, 16, os.cpu_count() or 1}):
        if threads <= (os.cpu_count() or 1):
            set_num_threads(threads)
            res["numba_parallel_s"][threads] = min(seconds(lambda: work(data), 3))
    try:
        import cupy

        res["pinned_alloc_s_per_gib"] = seconds(lambda: cupy.cuda.alloc_pinned_memory(GiB), 2)
        pinned = np.frombuffer(cupy.cuda.alloc_pinned_memory(GiB), np.uint8, GiB)
        pinned[:] = 1
        dev = cupy.empty(GiB, np.uint8)

        def h2d(src):
            dev.set(src)
            cupy.cuda.Device().synchronize()

        res["h2d_pageable_s_per_gib"] = seconds(lambda: h2d(warm), 3)
        res["h2d_pinned_s_per_gib"] = seconds(lambda: h2d(pinned), 3)
    except Exception as exc:  # noqa: BLE001 (reported)
        res["cuda"] = f"unavailable: {exc}"
    return res


def whole(cmd: list[str], env: dict | None = None) -> dict:
    """Wall seconds, peak RSS (bytes), page faults and CPU seconds of one process."""
    return scan_e2e.measure(cmd, env)


DEVICE = ["cuda"]


def scan(query: Path, ref: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "gamut", "scan", str(query), str(ref), *FLAGS, "--device", DEVICE[0], "-o", str(out),
            *extra]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--copies", type=int, nargs="+", default=[1, 5, 10])
    ap.add_argument("--gpu-sets", nargs="*", default=["0,1"])
    ap.add_argument("--no-sample", action="store_true")
    ap.add_argument("--device", default="cuda", help="(cpu: a quick check of this script on a machine without a GPU)")
    ap.add_argument("--mirnas", type=int, default=1921)
    args = ap.parse_args()
    DEVICE[0] = args.device
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "command": "python " + " ".join(sys.argv), "host": host_facts()}
    print(json.dumps(report["host"], indent=1), flush=True)
    report["micro"] = micro()
    print(json.dumps(report["micro"]), flush=True)
    runs = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        mirs = [r for r in scan_e2e.read_fasta(args.data / "mirbase" / "mature.fa.gz") if r[0].startswith("hsa-")]
        query = scan_e2e.write_fasta(tmp / "hsa.fa", mirs[:args.mirnas])
        utr = scan_e2e.utr_references(args.data, scan_e2e.UTR_COUNT)
        refs = {c: scan_e2e.write_fasta(tmp / f"tx{c}.fa", [(f"{n}_c{k}", s) for k in range(c) for n, s in utr])
                for c in args.copies}
        small = scan_e2e.write_fasta(tmp / "small.fa", utr[:50])
        one_q = scan_e2e.write_fasta(tmp / "one_q.fa", mirs[:1])
        one_r = scan_e2e.write_fasta(tmp / "one_r.fa", [("site", scan_e2e.complementary_site(mirs[0][1]))])
        for _ in range(2):  # caches filled (kernels of every row bucket, Numba's functions)
            whole(scan(query, small, tmp / "warm.tsv"))
        startup = sorted(whole(scan(one_q, one_r, tmp / "one.tsv"))["wall_s"] for _ in range(3))[1]
        report["startup_s"] = startup
        print(f"start-up (one pair, one GPU): {startup:.2f} s", flush=True)
        for c in args.copies:
            got = whole(scan(query, refs[c], tmp / f"tx{c}.tsv"))
            runs.append({"copies": c, "gpus": "0", **got, "after_startup_s": got["wall_s"] - startup})
            print(json.dumps(runs[-1]), flush=True)
        largest = max(args.copies)
        got = whole(scan(query, refs[largest], tmp / "again.tsv"))
        runs.append({"copies": largest, "gpus": "0", **got, "after_startup_s": got["wall_s"] - startup, "note": "again"})
        got = whole(scan(query, refs[largest], tmp / "t16.tsv", "--threads", "16"))
        runs.append({"copies": largest, "gpus": "0", **got, "after_startup_s": got["wall_s"] - startup,
                     "note": "--threads 16"})
        print(json.dumps(runs[-1]), flush=True)
        for gpus in args.gpu_sets:
            got = whole(scan(query, refs[largest], tmp / f"g{gpus}.tsv", "--gpus", gpus))
            same = (tmp / f"g{gpus}.tsv").read_bytes() == (tmp / f"tx{largest}.tsv").read_bytes()
            runs.append({"copies": largest, "gpus": gpus, **got, "after_startup_s": got["wall_s"] - startup,
                         "same_output": same})
            print(json.dumps(runs[-1]), flush=True)
        if not args.no_sample:
            sample = args.out / f"sample_tx{largest}.md"
            subprocess.run([sys.executable, str(HERE / "sample_profile.py"), "--out", str(sample), "--",
                            *scan(query, refs[largest], tmp / "sampled.tsv")[3:]],
                           env=dict(os.environ, GAMUT_SERVER="off"), check=False)
    report["runs"] = runs
    (args.out / "host_probe.json").write_text(json.dumps(report, indent=1))
    lines = [f"# Host probe ({report['date']})", "", f"- command: `{report['command']}`",
             f"- host: {json.dumps({k: v for k, v in report['host'].items() if k != 'gpu_topology'})}",
             f"- micro: {json.dumps(report['micro'])}", f"- start-up: {report['startup_s']:.2f} s", "",
             "| copies | GPUs | wall s | after start-up s | peak RSS GiB | minor faults | user s | system s | note |",
             "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in runs:
        lines.append(f"| {r['copies']} | {r['gpus']} | {r['wall_s']:.2f} | {r['after_startup_s']:.2f} | "
                     f"{r['peak_rss'] / GiB:.2f} | {r['minor_faults']:,} | {r['user_s']:.1f} | {r['system_s']:.1f} | "
                     f"{r.get('note', '')}{' same output' if r.get('same_output') else ''} |")
    lines += ["", "```", report["host"]["gpu_topology"], "```"]
    (args.out / "host_probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
