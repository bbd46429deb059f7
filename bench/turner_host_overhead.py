"""Host cost of ``gamut fold --model turner`` around the GPU kernels, stage by stage, on any machine
(no GPU needed): the kernels are replaced by a stand-in runner (:class:`InstantRunner`) that
returns a fixed, valid result at once, so what is timed is everything else: encoding and checking
the letters, planning, building the results, the API's records and names, reading the FASTA and
writing each output format.

    python bench/turner_host_overhead.py --records 1000000 --length 50 [--out bench/results]

Numbers are the best of ``--repeat`` runs (seconds for all records), on a shared machine.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gamut.folding.turner import engines, gpu_mfe  # noqa: E402
from gamut.folding.turner.batch_tuning import BatchTuning  # noqa: E402
from gamut.folding.turner.options import TurnerOptions  # noqa: E402


class InstantRunner:
    """A :class:`gpu_mfe.Runner` whose kernels take no time: every sequence of at least 8 letters
    gets ``((((...))))`` around dots (energy -1.00), shorter ones all dots (0). The result is built
    once per job size and kept, so later calls cost nothing."""

    kernel_s = 0.0
    tuning = BatchTuning()  # the default launches' shapes

    def __init__(self, device_id: int = 0) -> None:
        self._cache: dict = {}

    def free_bytes(self) -> int:
        return 64 << 30

    def multiprocessors(self) -> int:
        return 132

    def shared_limits(self) -> tuple[int, int]:
        return 232448, 233472

    def resident_blocks(self, kernel: str, threads: int, shared_bytes: int) -> int:
        return 2048 // threads

    def run(self, job, shapes):
        key = (int(job.S.size), int(job.lengths.size), job.starts[:3].tobytes(), job.starts[-3:].tobytes())
        if key not in self._cache:
            out = np.full(job.S.size, ord("."), np.uint8)
            paired = job.lengths >= 8
            for k in range(4):
                out[job.starts[paired] + k] = ord("(")
                out[job.starts[paired] + job.lengths[paired] - 1 - k] = ord(")")
            energy = np.where(paired, -100, 0).astype(np.int32)
            self._cache.clear()
            self._cache[key] = (energy, np.zeros(job.lengths.size, np.int32), out)
        return self._cache[key]


def windows(count: int, length: int, seed: int = 46) -> list[str]:
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"ACGU", np.uint8)[rng.integers(0, 4, count * length)].tobytes().decode()
    return [letters[k * length:(k + 1) * length] for k in range(count)]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


@contextlib.contextmanager
def stand_in():
    """The GPU engine on :class:`InstantRunner`, ``device="cuda"`` allowed without a GPU."""
    runner = InstantRunner()
    saved = gpu_mfe.CupyRunner, engines.resolve_device
    gpu_mfe.CupyRunner = lambda device_id=0: runner
    engines.resolve_device = lambda device, analysis: "cuda"
    try:
        yield runner
    finally:
        gpu_mfe.CupyRunner, engines.resolve_device = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", nargs="*", help="stages to run (default: all)")
    args = parser.parse_args()

    import gamut
    from gamut.cli import main as gamut_main
    from gamut.folding.turner import api, cli, letters

    options = TurnerOptions()
    sequences = windows(args.records, args.length)
    pairs = [(f"w{k}", s) for k, s in enumerate(sequences)]
    rows: list[tuple[str, float]] = []
    want = set(args.only or [])

    def stage(name: str, fn) -> None:
        if want and name not in want:
            return
        seconds = best(fn, args.repeat)
        rows.append((name, seconds))
        print(f"{name:45s} {seconds:8.3f} s", flush=True)

    with stand_in(), tempfile.TemporaryDirectory() as tmp:
        runner = InstantRunner()
        gpu_mfe.mfe_batch(sequences, options, runner=runner)  # fills its result
        stage("check_letters", lambda: letters.check_letters(sequences))
        stage("mfe_batch: plan (encode, check, launches)", lambda: gpu_mfe.plan(sequences, options))
        stage("mfe_batch (list of str)", lambda: gpu_mfe.mfe_batch(sequences, options, runner=runner))
        if hasattr(gpu_mfe, "mfe_batch_flat"):
            stage("mfe_batch_flat (one buffer)", lambda: gpu_mfe.mfe_batch_flat(sequences, options, runner=runner))
        gamut.fold(sequences[:10], model="turner", device="cuda")  # warm: imports, Numba
        stage("gamut.fold(list of str, cuda)", lambda: gamut.fold(sequences, model="turner", device="cuda"))
        stage("gamut.fold(list of (name, seq), cuda)", lambda: gamut.fold(pairs, model="turner", device="cuda"))

        fasta = Path(tmp) / "windows.fa"
        with open(fasta, "w") as handle:
            handle.write("".join(f">{n}\n{s}\n" for n, s in pairs))
        stage("CLI: read FASTA", lambda: cli.read_records(str(fasta)))
        names, read, headers = cli.read_records(str(fasta))
        stage("CLI: check letters", lambda: letters.check_letters(read, names))
        batch = api.fold_records(read, names, options, device="cuda")  # as the command line folds a chunk
        from gamut.folding.turner.sinks import SINKS

        for name in ("rnafold", "tsv", "jsonl", "parquet"):
            def write(name=name):
                with open(Path(tmp) / f"out.{name}", "wb") as out:
                    sink = SINKS[name]()
                    sink.start(out, False)
                    sink.write(batch, headers if name == "rnafold" else None)
                    sink.close()
            stage(f"CLI: write {name}", write)
        for suffix in ("fold", "tsv", "jsonl", "parquet"):
            argv = ["fold", str(fasta), "--model", "turner", "--device", "cuda", "-o", str(Path(tmp) / f"cli.{suffix}")]
            stage(f"CLI: whole run in-process (-o .{suffix})", lambda argv=argv: gamut_main(argv))

    if args.out:
        label = f"{platform.node()}-{dt.date.today().isoformat()}"
        path = args.out / f"turner_host_overhead_{label}.md"
        lines = [f"# Turner fold: host cost around the kernels ({args.records:,} records of {args.length} nt)", "",
                 f"`{' '.join(sys.argv)}` on {platform.node()} ({os.cpu_count()} cores), best of {args.repeat}; "
                 "the kernels replaced by a runner that returns at once.", "", "| stage | s |", "|---|---:|"]
        lines += [f"| {name} | {seconds:.3f} |" for name, seconds in rows]
        path.write_text("\n".join(lines) + "\n")
        print(path)


if __name__ == "__main__":
    main()
