"""What one worker process per GPU can give at best on this host: a scan split in two halves by
hand, each half a separate ``gamut miranda`` process on its own GPU, both at once (no merging, no
shared output), next to the whole scan in one process on one GPU and as ``--gpus 0,1``.

    python bench/scan_two_process_bound.py --cases utr,clip --clip 20000 --data .data --repeat 3

For each case (inputs as in ``bench/scan_e2e.py``; the references dealt alternately into two halves
of about equal cells), median of ``--repeat`` whole processes, each writing its own new output:

- ``whole, GPU 0``: one process, all references, every core;
- ``--gpus 0,1``: the same command on two GPUs (this process and a worker process);
- ``half alone``: one half on GPU 0 with half the cores (``--threads``), nothing else running;
- ``two halves at once``: both halves, GPU 0 and GPU 1, half the cores each, started together:
  the wall until the later one ends.

``whole / two halves at once`` bounds the speed-up of any process-per-GPU design on this host (its
processes still have to merge their outputs); ``two halves at once / half alone`` is what two
processes running side by side cost each other. ``--served`` adds the same columns (but ``--gpus 0,1``)
with every process a client of a ``gamut serve`` process on its GPU: what one server per GPU, the
work split among them, could give. Needs two GPUs. Writes
``scan_two_process_bound_<kind>.{md,json}`` to ``--out``.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from scan_e2e import SHARED, Server, machine, read_fasta, workloads, write_fasta  # noqa: E402


def _env(gpu: int | None, servers: list[Server] | None) -> dict[str, str]:
    """Every GPU (``gpu`` None) or only ``gpu``; its own process, or a client of ``servers[gpu]``."""
    if servers is not None and gpu is not None:
        return servers[gpu].env
    return dict(os.environ, GAMUT_SERVER="off", **({} if gpu is None else {"CUDA_VISIBLE_DEVICES": str(gpu)}))


@contextlib.contextmanager
def _servers(tmp: Path, gpus: int) -> Iterator[list[Server]]:
    """A ``gamut serve --device cuda`` process on each of the first ``gpus`` GPUs."""
    servers: list[Server] = []
    try:
        for k in range(gpus):
            servers.append(Server(tmp, "cuda", f"serve{k}.sock", CUDA_VISIBLE_DEVICES=str(k)))
        yield servers
    finally:
        for server in servers:
            server.stop()


def _processes(query: Path, flags: list[str], runs: list[tuple[Path, list[str], int | None]], tmp: Path,
               servers: list[Server] | None = None) -> float:
    """Start a ``gamut miranda`` process for every ``(reference, extra options, GPU or None)`` at
    once (clients of ``servers``, one per GPU, if given); seconds until the last ends (outputs
    removed after)."""
    began = time.perf_counter()
    started = []
    for k, (ref, extra, gpu) in enumerate(runs):
        out = tmp / f"out{k}_{time.monotonic_ns()}.txt"
        env = _env(gpu, servers)
        cmd = [sys.executable, "-m", "gamut", "miranda", str(query), str(ref), *flags, "--device", "cuda",
               "-out", str(out), *extra]
        started.append((subprocess.Popen(cmd, env=env), out))
    for process, _ in started:
        if process.wait() != 0:
            raise SystemExit(f"a timed process failed with status {process.returncode}: {process.args}")
    wall = time.perf_counter() - began
    for _, out in started:
        out.unlink(missing_ok=True)
    return wall


def measure(query: Path, ref: Path, flags: list[str], tmp: Path, repeat: int, threads: int,
            servers: list[Server] | None = None) -> dict:
    """The columns of one case (see the module's docstring); with ``servers``, every process a
    client of the server on its GPU (and no ``--gpus 0,1`` column)."""
    records = read_fasta(ref)
    halves = [write_fasta(tmp / f"{ref.stem}_half{k}.fa", records[k::2]) for k in range(2)]
    half = ["--threads", str(max(1, threads // 2))]
    plans = {
        "whole_gpu0": [(ref, [], 0)],
        "whole_gpus01": [(ref, ["--gpus", "0,1"], None)],
        "half_alone": [(halves[0], half, 0)],
        "two_halves_at_once": [(halves[k], half, k) for k in range(2)],
    }
    if servers is not None:
        del plans["whole_gpus01"]
        before = [server.commands() for server in servers]
    for warm in ("two_halves_at_once", "whole_gpu0"):  # Numba's and CuPy's on-disk caches filled
        _processes(query, flags, plans[warm], tmp, servers)
    walls: dict[str, list[float]] = {name: [] for name in plans}
    for _ in range(repeat):  # interleaved, so that drifts of the machine fall on every plan alike
        for name, runs in plans.items():
            walls[name].append(_processes(query, flags, runs, tmp, servers))
    if servers is not None:
        ran = [server.commands() - b for server, b in zip(servers, before)]
        expected = [2 + 3 * repeat, 1 + repeat]
        if ran != expected:  # a client the server declined ran as its own process
            raise SystemExit(f"served commands per server: {ran}, expected {expected}")
    row: dict = {f"{name}_s": statistics.median(w) for name, w in walls.items()}
    row.update({f"{name}_walls_s": w for name, w in walls.items()})
    row["bound_speedup"] = row["whole_gpu0_s"] / row["two_halves_at_once_s"]
    if "whole_gpus01_s" in row:
        row["gpus01_speedup"] = row["whole_gpu0_s"] / row["whole_gpus01_s"]
    row["side_by_side_cost"] = row["two_halves_at_once_s"] / row["half_alone_s"]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="utr,clip", help="comma-separated: clip, utr, sars")
    ap.add_argument("--clip", type=int, default=20000, help="CLIP fragments to use")
    ap.add_argument("--mirnas", type=int, default=1921)
    ap.add_argument("--utr-refs", type=int, default=6150)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, default=SHARED)
    ap.add_argument("--kind", default="multi-gpu")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    ap.add_argument("--served", action="store_true",
                    help="also every column with each process a client of a `gamut serve` process on its GPU")
    args = ap.parse_args()
    args.big, args.device = False, "cuda"
    threads = os.cpu_count() or 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        servers = stack.enter_context(_servers(Path(tmp), 2)) if args.served else None
        for case, (query, ref, flags) in workloads(args, Path(tmp)).items():
            for runs in ("own", "served")[: 1 + args.served]:
                row = {"case": case, "runs": runs, "flags": " ".join(flags), "threads": threads,
                       **measure(query, ref, flags, Path(tmp), max(1, args.repeat), threads,
                                 servers if runs == "served" else None)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python " + " ".join(sys.argv)
    info = machine(args)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"scan_two_process_bound_{args.kind}"
    stem.with_suffix(".json").write_text(json.dumps({"machine": info, "date": date, "command": command,
                                                     "rows": rows}, indent=1))
    lines = [f"# Two processes on two GPUs at best ({args.kind})", "", f"- machine: {info}", f"- date: {date}",
             f"- command: `{command}`", f"- median of {args.repeat} whole `gamut miranda --device cuda` processes "
             f"per column ({threads} cores; halves with `--threads {max(1, threads // 2)}`); see the script's "
             "docstring; served: each process a client of a `gamut serve` process on its GPU", "",
             "| case | processes | whole, GPU 0 s | `--gpus 0,1` s | half alone s | two halves at once s | bound speed-up "
             "| `--gpus 0,1` speed-up | side by side cost |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        gpus01 = (f"{r['whole_gpus01_s']:.2f}", f"{r['gpus01_speedup']:.2f}x") if "whole_gpus01_s" in r else ("-", "-")
        lines.append(f"| {r['case']} | {r['runs']} | {r['whole_gpu0_s']:.2f} | {gpus01[0]} | {r['half_alone_s']:.2f} "
                     f"| {r['two_halves_at_once_s']:.2f} | {r['bound_speedup']:.2f}x | {gpus01[1]} "
                     f"| {r['side_by_side_cost']:.2f}x |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
