"""Cluster scan benchmark: ``gamut miranda`` in one process vs on Dask workers on this machine.

Workload: human miRNAs x real 50-nt AGO-CLIP fragments (``--data``, i.e. ``../shared/data``),
``-quiet`` with energies, as in a CLIP-site scan (synthetic fragments where the data is absent).
Each configuration is a whole ``python -m gamut miranda ...`` process, timed wall to wall:

- ``single``: one process, ``--threads N`` (N = the cores);
- ``run-dir``: one process in partitions with ``--run-dir`` (the partitioned path without Dask);
- ``local:W``: ``--cluster local:W``, W worker processes of N/W threads, cluster start-up included;
- ``tcp``: a ``dask scheduler`` and W ``dask worker`` processes started beforehand (their start-up
  not counted), the client process given ``--cluster tcp://...``;
- ``single`` and ``local:W`` on one pair: the fixed costs (process start-up; cluster start-up,
  workers' imports and shutdown).

Every output is compared with the single-process one (byte for byte). The report gives wall
times and each one's overhead against the single process. Writes ``scan_dask_<kind>.json`` and
``.md`` (machine, date, command) to ``--out``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scan_e2e import read_fasta, write_fasta  # noqa: E402  (bench/ is on sys.path when run as a script)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def workload(args, tmp: Path) -> tuple[Path, Path, str]:
    rng = np.random.default_rng(5)
    letters = np.array(list("ACGU"))
    mirbase, clip = args.data / "mirbase" / "mature.fa.gz", args.data / "clip" / "ago_clip_fragments.fa.gz"
    if mirbase.exists() and clip.exists():
        mirs = [r for r in read_fasta(mirbase) if r[0].startswith("hsa-")][: args.mirnas]
        refs = read_fasta(clip)[: args.fragments]
        what = f"{len(mirs)} human miRNAs x {len(refs)} AGO-CLIP fragments (50 nt), -quiet, energies"
    else:
        mirs = [(f"mir{k}", "".join(letters[rng.integers(0, 4, 22)])) for k in range(args.mirnas)]
        refs = [(f"frag{k}", "".join(letters[rng.integers(0, 4, 50)])) for k in range(args.fragments)]
        what = f"{len(mirs)} random miRNAs x {len(refs)} random 50-nt fragments, -quiet, energies"
    return write_fasta(tmp / "q.fa", mirs), write_fasta(tmp / "r.fa", refs), what


def run(cmd: list[str], env: dict | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env)
    return time.perf_counter() - start


class TcpCluster:
    """A scheduler and ``workers`` worker processes on 127.0.0.1 (each its own process group); with
    ``gpus``, gamut's preload on the scheduler and a worker for each entry of ``gpus`` seeing that GPU
    alone (``CUDA_VISIBLE_DEVICES``, named ``gpuN``, or ``gpuN-k`` for a GPU named more than once, with
    gamut's preload), as docs/cluster.md tells users to start a cluster of GPUs (two workers per GPU:
    ``gpus=[0, 0, 1, 1]``), with ``threads`` threads each
    (a CPU worker takes one task at a time: the command's ``--threads`` sets its cores). ``env``: the processes' environment."""

    def __init__(self, workers: int, threads: int, folder: Path, gpus: list[int] | None = None,
                 env: dict | None = None) -> None:
        self.procs: list[subprocess.Popen] = []
        self.env = dict(os.environ if env is None else env)
        sched_file = folder / "scheduler.json"
        sched_file.unlink(missing_ok=True)  # (a file left by an earlier cluster in the folder is not this one's)
        preload = ("--preload", "gamut.dask_preload") if gpus else ()
        self._start("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                    "--scheduler-file", str(sched_file), *preload)
        deadline = time.monotonic() + 60
        while not sched_file.exists():
            if time.monotonic() > deadline:
                raise SystemExit("the scheduler did not start")
            time.sleep(0.2)
        time.sleep(0.2)
        for k in range(len(gpus) if gpus else workers):
            if gpus:
                name = f"gpu{gpus[k]}" if gpus.count(gpus[k]) == 1 else f"gpu{gpus[k]}-{k}"  # (names are unique)
                pinned = ({"CUDA_VISIBLE_DEVICES": str(gpus[k])}, "--name", name, "--preload", "gamut.dask_preload")
            else:
                pinned = ({},)
            self._start("distributed.cli.dask_worker", "--scheduler-file", str(sched_file), "--nworkers", "1",
                        "--nthreads", str(threads) if gpus else "1", "--no-dashboard", "--host", "127.0.0.1", *pinned[1:], extra=pinned[0])
        self.address = json.loads(sched_file.read_text())["address"]
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(len(gpus) if gpus else workers, timeout=180)
            client.run(lambda: __import__("gamut.scanning.pipeline.partitioned"))  # imports, as a warm pool would have

    def _start(self, *args: str, extra: dict | None = None) -> None:
        self.procs.append(subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, start_new_session=True,
                                           env={**self.env, **(extra or {})}))

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirnas", type=int, default=400)
    ap.add_argument("--fragments", type=int, default=6000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--partition-pairs", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=2, help="runs per configuration (the best is reported)")
    ap.add_argument("--data", type=Path, default=SHARED)
    ap.add_argument("--kind", default=platform.node())
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    per_worker = max(1, cores // args.workers)
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        query, ref, what = workload(args, tmp)
        base = [sys.executable, "-m", "gamut", "miranda", str(query), str(ref), "-quiet", "--device", "cpu"]
        parts = ["--partition-pairs", str(args.partition_pairs)]
        cluster = TcpCluster(args.workers, per_worker, tmp)
        try:
            configs = {
                "single": ["--threads", str(cores)],
                "run-dir": ["--threads", str(cores), "--run-dir", "RUNDIR", *parts],
                f"local:{args.workers}": ["--cluster", f"local:{args.workers}", *parts],
                "tcp": ["--cluster", cluster.address, "--threads", str(per_worker), *parts],
            }
            reference = None
            run([*base, "-out", str(tmp / "warm.txt")])  # compiled-function caches, page cache
            for name, extra in configs.items():
                walls = []
                for k in range(args.repeats):
                    out = tmp / f"{name.replace(':', '_')}_{k}.txt"
                    cmd = [*base, *[str(tmp / f"rd_{name}_{k}") if x == "RUNDIR" else x for x in extra],
                           "-out", str(out)]
                    walls.append(run(cmd))
                    data = out.read_bytes()
                    reference = data if reference is None else reference
                    if data != reference:
                        raise SystemExit(f"{name}: output differs from the single-process output")
                row = {"config": name, "wall_s": min(walls), "walls_s": walls, "command": " ".join(cmd[2:])}
                rows.append(row)
                print(json.dumps(row), flush=True)
            # Fixed costs: the same commands on one pair (process start-up; cluster start-up and shutdown).
            tiny_q = write_fasta(tmp / "q1.fa", read_fasta(query)[:1])
            tiny_r = write_fasta(tmp / "r1.fa", read_fasta(ref)[:1])
            tiny = {}
            for name in ("single", f"local:{args.workers}"):
                walls = []
                for k in range(args.repeats):
                    out = tmp / f"tiny_{name.replace(':', '_')}_{k}.txt"
                    cmd = [*base[:4], str(tiny_q), str(tiny_r), *base[6:], *configs[name], "-out", str(out)]
                    walls.append(run(cmd))
                    tiny.setdefault(name, out.read_bytes())
                row = {"config": f"{name}, 1 pair (fixed cost)", "wall_s": min(walls), "walls_s": walls,
                       "command": " ".join(cmd[2:])}
                rows.append(row)
                print(json.dumps(row), flush=True)
            if len(set(tiny.values())) != 1:
                raise SystemExit("1 pair: the cluster output differs from the single-process output")
        finally:
            cluster.close()
        from gamut.scanning.fasta import read_miranda_fasta

        nq, nr = len(read_miranda_fasta(query)), len(read_miranda_fasta(ref))
    single = rows[0]["wall_s"]
    for row in rows:
        row["over_single"] = None if "1 pair" in row["config"] else row["wall_s"] / single
    write(rows, args, what, nq * nr, cores)
    return 0


NOTES = """\
Reading: `single` runs one process with all cores as threads; `tcp` runs the same partitions on
already-running workers (one thread each), so its wall time is the client's work plus the
partitions' (each partition a separate task with its own per-call costs);
`local:W` adds starting and stopping the cluster and each worker's first imports (compare the
1-pair rows: the fixed cost of a local cluster is about the difference); `run-dir` is the
partitioned path in one process (partitions stored and read back). On a 2-core machine a
cluster adds no cores; the point is the overhead, which is small next to
scans of minutes or hours. Timings vary by about 20% between runs where other jobs share the machine."""


def write(rows: list[dict], args, what: str, pairs: int, cores: int) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"scan_dask_{args.kind}"
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python " + " ".join(sys.argv)
    import dask

    info = {"kind": args.kind, "host": platform.node(), "cpus": cores, "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(), "dask": dask.__version__}
    stem.with_suffix(".json").write_text(json.dumps({"machine": info, "date": date, "command": command,
                                                     "workload": what, "pairs": pairs, "rows": rows}, indent=1))
    partitions = -(-pairs // args.partition_pairs)
    lines = [f"# Cluster scan: one process vs Dask workers ({args.kind})", "",
             f"- machine: {info}", f"- date: {date}", f"- command: `{command}`",
             f"- workload: {what}; {pairs:,} pairs in {partitions} partitions of {args.partition_pairs:,} pairs",
             f"- each row: a whole `gamut miranda` process, best of {args.repeats}; every output byte-identical to "
             "the single process'",
             "", "| configuration | wall s | vs single process | runs (s) |", "|---|---|---|---|"]
    for row in rows:
        ratio = "-" if row["over_single"] is None else f"{row['over_single']:.2f}x"
        lines.append(f"| {row['config']} | {row['wall_s']:.2f} | {ratio} | "
                     + ", ".join(f"{w:.2f}" for w in row["walls_s"]) + " |")
    lines += ["", NOTES]
    lines += ["", "Commands (after `python -m gamut miranda`):", ""]
    lines += [f"- {row['config']}: `{row['command']}`" for row in rows]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
