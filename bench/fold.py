"""Benchmark Nussinov folding: CPU engines (Li et al. Table 1) or the GPU engine (Li et al. Table 2,
Chang et al. Table II) on random RNA of n = 2,000 ... 16,000 and beyond, plus the SARS-CoV-2 genome.

    python bench/fold.py --target cpu            # CPU1, CPU2, multicore (OMP2), blocked
    python bench/fold.py --target gpu            # GPU engine, up to n = 100,000 when it fits
    python bench/fold.py --target gpu --sizes 16000 --big 100000 --no-genome --api-at 16000,100000

Writes bench/results/fold_<label>.json (raw) and .md (table with device, date, command). Times
are the fill of the score matrix (the O(n^3) part); traceback is timed separately (on the device for
the GPU, checked against the CPU traceback up to --compare-max), and ``api`` rows time
``gamut.fold`` with the structure end to end. bench/fold_batch.py times lists of short sequences.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gamut.folding.sequence import encode  # noqa: E402

GENOME = ROOT.parent / "shared" / "data" / "rna" / "NC_045512.2.fasta"

# Published times in seconds. Li, Ranka & Sahni 2014, Table 1 (i7-980, 6 cores): CPU1, CPU2, OMP2.
LI_TABLE1 = {
    3000: (35.9, 22.3, 4.8), 4000: (98.1, 52.8, 11.3), 5000: (208.1, 102.9, 22.2), 6000: (363.7, 177.5, 45.3),
    7000: (646.1, 281.3, 61.0), 8000: (924.4, 419.6, 92.5), 9000: (1461.5, 596.6, 129.9),
    10000: (1927.7, 819.1, 176.9), 11000: (2800.8, 1088.4, 234.5), 12000: (3525.2, 1413.6, 303.3),
    13000: (4852.3, 1795.4, 388.4), 14000: (6008.9, 2243.5, 485.2), 15000: (7930.0, 2757.3, 594.0),
    16000: (10120.0, 3343.5, 725.4),
}
# Li et al. Table 2 (Tesla C2050): Ours1 (their best) and Chang et al.'s code [12]; 37000: Ours2 only.
LI_TABLE2 = {2000: (0.1, 0.3), 6000: (0.6, 4.0), 10000: (1.9, 16.4), 14000: (4.5, 43.0), 18000: (8.8, 89.5),
             22000: (15.1, 161.7), 26000: (23.9, 266.3), 37000: (71.5, None)}
# Chang, Kimmer & Ouyang 2010, Table II: single-core CPU and Tesla C2050.
CHANG_TABLE2 = {1000: (0.6, 0.1), 2000: (11.6, 0.3), 3000: (50.8, 0.7), 4000: (135.9, 1.4), 5000: (281.1, 2.5),
                6000: (534.3, 4.1), 7000: (1028.5, 6.2), 8000: (1509.1, 8.9), 9000: (2731.0, 12.4),
                10000: (3931.7, 16.8), 11000: (5462.2, 21.9), 12000: (6816.1, 28.3), 13000: (9564.4, 35.6),
                14000: (12189.5, 44.0), 15000: (15591.6, 53.7), 16000: (17118.6, 65.0)}


def random_codes(n: int) -> np.ndarray:
    return np.random.default_rng(n).integers(0, 4, n).astype(np.uint8)


def genome_codes(path: Path) -> np.ndarray | None:
    if not path.exists():
        return None
    from gamut.io import read_fasta

    return encode(list(read_fasta(path))[0].sequence, where=str(path))


def cpu_fill(engine: str, codes: np.ndarray, min_loop: int) -> int:
    from gamut.folding.cpu import fill_matrix
    from gamut.folding.tiled import fill_tiled, tiled_value

    n = int(codes.shape[0])
    if engine == "blocked":
        tiles = fill_tiled(codes, min_loop, 64)
        return int(tiled_value(tiles, (n + 64) // 64, 0, n))
    return int(fill_matrix(codes, min_loop, engine)[0, n - 1])


def timed(fn, repeat: int) -> tuple[float, list[float], object, float]:
    """Best wall time of ``repeat`` runs (other work shares the machine), all times, the value, CPU time."""
    times, value, cpu = [], None, 0.0
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        value = fn()
        times.append(time.perf_counter() - start)
        cpu = time.process_time() - start_cpu
    return min(times), times, value, cpu


class Recorder:
    """Collects rows and rewrites the JSON and Markdown after every measurement."""

    def __init__(self, out: Path, label: str, device: str, args: argparse.Namespace):
        self.out, self.label, self.rows = out, label, []
        self.meta = {
            "device": device,
            "label": label,
            "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": "python bench/fold.py " + " ".join(sys.argv[1:]),
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "min_loop": args.min_loop,
            "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        }

    def add(self, **row) -> None:
        row["load_avg_1min"] = round(os.getloadavg()[0], 2)
        self.rows.append(row)
        print(json.dumps(row), flush=True)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / f"fold_{self.label}.json").write_text(json.dumps({**self.meta, "rows": self.rows}, indent=1))
        (self.out / f"fold_{self.label}.md").write_text(self.markdown())

    def markdown(self) -> str:
        m = self.meta
        lines = [f"# Nussinov folding benchmark: {m['device']}", "",
                 f"- date: {m['date']}", f"- command: `{m['command']}`",
                 f"- min_loop: {m['min_loop']} (the papers' variant); random RNA seeded by n; times in seconds "
                 "(best of the repeats, as other work shares the machines) for filling the score matrix; "
                 "`Gops/s` = n^3/6 max-plus steps per second",
                 f"- load average when it started: {m['load_avg_at_start']} (other work shares this machine); "
                 "each row of the JSON has the load average when it ended", ""]
        fills = [r for r in self.rows if r["kind"] == "fill"]
        if fills and fills[0]["engine"] != "gpu":
            lines += self._cpu_table(fills)
        elif fills:
            lines += self._gpu_table(fills)
        extra = [r for r in self.rows if r["kind"] != "fill"]
        if extra:
            lines += ["", "| what | n | seconds | detail |", "| --- | ---: | ---: | --- |"]
            for r in extra:
                lines.append(f"| {r['kind']} | {r['n']:,} | {r['seconds']:.3f} | {r.get('detail', '')} |")
        return "\n".join(lines) + "\n"

    @staticmethod
    def _cpu_table(fills: list[dict]) -> list[str]:
        by = {}
        for r in fills:
            by.setdefault((r["name"], r["n"]), {})[r["engine"]] = r
        lines = ["| input | n | CPU1 | CPU2 | multicore | blocked | CPU1/CPU2 | CPU2/multicore | CPU2/blocked "
                 "| Li CPU1/CPU2 | Li CPU2/OMP2 (6 cores) | pairs |",
                 "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for (name, n), e in sorted(by.items(), key=lambda kv: kv[0][1]):
            t = {k: e[k]["seconds"] if k in e else None for k in ("cpu1", "cpu2", "multicore", "blocked")}

            def fmt(x):
                return f"{x:.2f}" if x is not None else "-"

            def ratio(a, b):
                return f"{t[a] / t[b]:.2f}" if t[a] and t[b] else "-"

            li = LI_TABLE1.get(n)
            lines.append(
                f"| {name} | {n:,} | {fmt(t['cpu1'])} | {fmt(t['cpu2'])} | {fmt(t['multicore'])} | {fmt(t['blocked'])} "
                f"| {ratio('cpu1', 'cpu2')} | {ratio('cpu2', 'multicore')} | {ratio('cpu2', 'blocked')} "
                f"| {f'{li[0] / li[1]:.2f}' if li else '-'} | {f'{li[1] / li[2]:.2f}' if li else '-'} "
                f"| {next(iter(e.values()))['pairs']:,} |")
        return lines

    @staticmethod
    def _gpu_table(fills: list[dict]) -> list[str]:
        lines = ["| input | n | GPU s | Gops/s | GPU memory GB | Li Ours1 C2050 s | x Li | Chang C2050 s | x Chang "
                 "| pairs |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in sorted(fills, key=lambda r: r["n"]):
            n, s = r["n"], r["seconds"]
            li = LI_TABLE2.get(n, (None, None))[0]
            ch = CHANG_TABLE2.get(n, (None, None))[1]
            lines.append(
                f"| {r['name']} | {n:,} | {s:.3f} | {n ** 3 / 6 / s / 1e9:.0f} | {r['gpu_bytes'] / 1e9:.2f} "
                f"| {li if li else '-'} | {f'{li / s:.0f}' if li else '-'} | {ch if ch else '-'} "
                f"| {f'{ch / s:.0f}' if ch else '-'} | {r['pairs']:,} |")
        return lines


def run_cpu(args, rec: Recorder) -> None:
    small = random_codes(300)
    for engine in args.engines:  # compile outside the timings
        cpu_fill(engine, small, args.min_loop)
    for n in args.sizes:
        codes = random_codes(n)
        scores = set()
        for engine in args.engines:
            if engine == "cpu1" and n > args.cpu1_max or engine in ("cpu2", "multicore") and n > args.slow_max:
                continue
            repeat = args.repeat if n <= 4000 else 1
            best, times, score, cpu = timed(lambda: cpu_fill(engine, codes, args.min_loop), repeat)
            scores.add(score)
            rec.add(kind="fill", name="random", engine=engine, n=n, seconds=best, times=times, pairs=score,
                    cpu_seconds_last=cpu)
        assert len(scores) == 1, f"engines disagree at n={n}: {scores}"
    genome = genome_codes(Path(args.genome))
    if genome is not None and "blocked" in args.engines and not args.no_genome:
        from gamut.folding.tiled import fill_tiled
        from gamut.folding.traceback import traceback_tiled

        start = time.perf_counter()
        tiles = fill_tiled(genome, args.min_loop, 64)
        fill = time.perf_counter() - start
        n = int(genome.size)
        score = int(tiles[-1, 0, n % 64])
        rec.add(kind="fill", name="SARS-CoV-2", engine="blocked", n=n, seconds=fill, times=[fill], pairs=score)
        start = time.perf_counter()
        partner = traceback_tiled(tiles, genome, args.min_loop)
        trace = time.perf_counter() - start
        assert int((partner >= 0).sum()) == 2 * score
        rec.add(kind="traceback", name="SARS-CoV-2", n=n, seconds=trace, detail=f"{score:,} pairs checked")


def run_gpu(args, rec: Recorder) -> None:
    import cupy

    from gamut.folding.gpu import fill_gpu, max_length, score_of, traceback_gpu, triangle_bytes
    from gamut.folding.traceback import traceback_tiled

    fill_gpu(random_codes(500), args.min_loop)  # compile
    cupy.cuda.Device().synchronize()
    free = cupy.cuda.runtime.memGetInfo()[0]
    rec.meta["gpu_free_bytes"] = free
    rec.meta["gpu_max_n"] = max_length(free)

    def gpu_fold(codes):
        tiles = fill_gpu(codes, args.min_loop)
        cupy.cuda.Device().synchronize()
        return tiles

    inputs = [("random", random_codes(n)) for n in args.sizes]
    genome = genome_codes(Path(args.genome))
    if genome is not None and not args.no_genome:
        inputs.append(("SARS-CoV-2", genome))
    inputs += [("random", random_codes(n)) for n in args.big]
    for name, codes in sorted(inputs, key=lambda x: x[1].size):
        n = int(codes.size)
        if triangle_bytes(n) > free * 0.99 - (64 << 20):
            rec.add(kind="skipped", name=name, n=n, seconds=0.0, detail=f"needs {triangle_bytes(n) / 1e9:.1f} GB")
            continue
        repeat = args.repeat if n <= 40000 else 1
        times, score = [], None
        for _ in range(repeat):
            start = time.perf_counter()
            tiles = gpu_fold(codes)
            times.append(time.perf_counter() - start)
            score = score_of(tiles, n)
            if _ != repeat - 1:
                del tiles
        rec.add(kind="fill", name=name, engine="gpu", n=n, seconds=min(times), times=times,
                pairs=score, gpu_bytes=triangle_bytes(n))
        if name == "SARS-CoV-2" or n in args.traceback_at:
            trace_times = []
            for _ in range(args.repeat):  # the first call also loads the kernel
                start = time.perf_counter()
                partner = traceback_gpu(tiles, codes, args.min_loop)
                trace_times.append(time.perf_counter() - start)
            trace = min(trace_times)
            assert int((partner >= 0).sum()) == 2 * score
            detail = (f"on the device (partner table back; best of {len(trace_times)}, first call "
                      f"{trace_times[0]:.3f} s), {score:,} pairs checked")
            if n <= args.compare_max:  # the CPU traceback on the copied triangle: same structure?
                start = time.perf_counter()
                host = tiles.get()
                copy = time.perf_counter() - start
                start = time.perf_counter()
                same = np.array_equal(traceback_tiled(host, codes, args.min_loop), partner)
                cpu = time.perf_counter() - start
                assert same, f"device and CPU tracebacks differ at n={n}"
                detail += f"; = CPU traceback (copy {copy:.2f} s + CPU traceback {cpu:.2f} s)"
                del host
            rec.add(kind="traceback", name=name, n=n, seconds=trace, times=trace_times, detail=detail)
        del tiles
        cupy.get_default_memory_pool().free_all_blocks()
    for n in args.profile_at:
        profile: dict = {}
        start = time.perf_counter()
        fill_gpu(random_codes(n), args.min_loop, profile=profile)
        cupy.cuda.Device().synchronize()
        wall = time.perf_counter() - start
        detail = ", ".join(f"{k} {v:.1f} ms" for k, v in profile.items())
        rec.add(kind="profile", name="random", n=n, seconds=wall, detail=f"per-kernel event times: {detail}")
        cupy.get_default_memory_pool().free_all_blocks()


def run_api(args, rec: Recorder) -> None:
    """The path users take: ``gamut.fold(seq, device=...)`` with the structure, end to end,
    checked (pairs == structure's pairs == the GPU fill's corner where the GPU runs)."""
    import random

    import gamut

    device = "cuda" if args.target == "gpu" else "cpu"
    gamut.fold("GGGAAACCC" * 20, device=device)  # compile / load kernels
    for n in args.api_at:
        rng = random.Random(n)
        seq = "".join(rng.choice("ACGU") for _ in range(n))
        times = []
        for _ in range(args.repeat if n <= 40000 else 1):  # best of the repeats, as for the fill
            start = time.perf_counter()
            result = gamut.fold(seq, min_loop=args.min_loop, device=device)
            times.append(time.perf_counter() - start)
        seconds = min(times)
        opened = result.structure.count("(")
        assert opened == result.pairs == result.structure.count(")"), (n, opened, result.pairs)
        detail = f"gamut.fold(device={device!r}) with structure, {result.pairs:,} pairs checked"
        if device == "cuda" and n <= args.compare_max:  # a second fill: its corner must be the score
            import cupy

            from gamut.folding.gpu import fill_gpu, score_of

            tiles = fill_gpu(gamut_codes(seq), args.min_loop)
            corner = score_of(tiles, n)
            del tiles
            cupy.get_default_memory_pool().free_all_blocks()
            assert corner == result.pairs, (n, corner, result.pairs)
            detail += f" (= fill corner {corner:,})"
        rec.add(kind="api", name="random", engine=result.engine, n=n, seconds=seconds, times=times,
                pairs=result.pairs, detail=detail)


def gamut_codes(seq: str) -> np.ndarray:
    from gamut.folding.sequence import encode

    return encode(seq)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", choices=("cpu", "gpu"), default="cpu")
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=None)
    p.add_argument("--big", type=lambda s: [int(x) for x in s.split(",")], default=[50000, 100000],
                   help="extra GPU sizes run once (default 50000,100000)")
    p.add_argument("--engines", type=lambda s: s.split(","), default=["cpu1", "cpu2", "multicore", "blocked"])
    p.add_argument("--cpu1-max", type=int, default=6000, help="largest n for CPU1 (default 6000)")
    p.add_argument("--slow-max", type=int, default=8000, help="largest n for CPU2 and multicore (default 8000)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--min-loop", type=int, default=1)
    p.add_argument("--genome", default=str(GENOME), help="SARS-CoV-2 FASTA (default ../shared/data/rna)")
    p.add_argument("--no-genome", action="store_true")
    p.add_argument("--traceback-at", type=lambda s: [int(x) for x in s.split(",")], default=[16000, 100000])
    p.add_argument("--compare-max", type=int, default=30000,
                   help="largest n whose device traceback is compared with the CPU one (default 30000)")
    p.add_argument("--profile-at", type=lambda s: [int(x) for x in s.split(",")], default=[16000],
                   help="GPU sizes timed per kernel with events (default 16000)")
    p.add_argument("--api-at", type=lambda s: [int(x) for x in s.split(",") if x], default=None,
                   help="sizes timed through gamut.fold with structure (default GPU 16000,60000,100000; CPU 4000)")
    p.add_argument("--label", default=None, help="file name label (default: h100, h200, ... or cpu-<N>core)")
    p.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = p.parse_args()
    if args.target == "gpu":
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
        device = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        label = args.label or next((k for k in ("h200", "h100", "a100") if k in device.lower()), "gpu")
        args.sizes = args.sizes or [1000, 2000, 4000, 6000, 8000, 10000, 12000, 14000, 16000, 18000, 22000,
                                    26000, 37000]
    else:
        device = f"{platform.processor() or platform.machine()} CPU, {os.cpu_count()} cores"
        try:
            model = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line)
            device = f"{model}, {os.cpu_count()} cores"
        except (OSError, StopIteration):
            pass
        label = args.label or f"cpu-{os.cpu_count()}core"
        args.sizes = args.sizes or [2000, 3000, 4000, 6000, 8000, 10000, 12000, 14000, 16000]
    if args.api_at is None:
        args.api_at = [16000, 60000, 100000] if args.target == "gpu" else [4000]
    rec = Recorder(Path(args.out), label, device, args)
    (run_gpu if args.target == "gpu" else run_cpu)(args, rec)
    run_api(args, rec)
    print(rec.markdown())


if __name__ == "__main__":
    main()
