"""Benchmark and acceptance check of ``gamut fold --model turner`` (issue 46): our GPU kernels
against ViennaRNA on every host core, in one run.

Speed (default): MFE with structures of

- ``windows``: 1,000,000 windows of 50 nt cut from the AGO-CLIP fragments
  (``shared/data/clip/ago_clip_fragments.fa.gz``; random UTR-like letters without it): ViennaRNA
  on all cores (a process pool; on ``--vienna-sample`` windows, extrapolated, and said so), the
  GPU engine (``mfe_batch``), a warm ``gamut.fold`` call and the whole ``gamut fold`` process;
- ``long4000`` / ``long20000``: one random RNA of 4,000 / 20,000 nt: GPU engine, warm API, whole
  process; ViennaRNA on one core for 4,000 nt (20,000: the fit of ``cpu.record_seconds``, marked);
- ``pf3000``: partition function and pair probabilities of one random 3,000-nt RNA: GPU
  (``pf_batch``) against one ViennaRNA core.

``--check``: acceptance 1 and 2 on the large sets (human miRBase hairpins, 2,000 CLIP fragments,
50 random RNAs of 1,000-3,000 nt) for each option set: GPU against ViennaRNA (the CPU engine),
counting identical MFE integers, identical structures, structures whose ViennaRNA energy equals
the MFE, ensemble energies within 1e-6 relative and pair probabilities within 1e-6.

    python bench/fold_turner.py --out bench/results                 # speed, on the GPU
    python bench/fold_turner.py --check --out bench/results         # acceptance 1 and 2
    python bench/fold_turner.py --device cpu --windows 20000 --skip-long   # a smoke run without a GPU

Writes ``fold_turner_<label>.json`` / ``.md`` (``fold_turner_check_<label>`` with ``--check``):
device, date, command, and GPU (engine) time, warm API time and whole-process time side by side.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import multiprocessing
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from scan_e2e import UTR_COMPOSITION, read_fasta  # noqa: E402

SHARED = next((p for p in (ROOT / "shared" / "data", ROOT.parent / "shared" / "data",
                            ROOT.parent.parent / "shared" / "data") if p.exists()), ROOT.parent / "shared" / "data")
CLIP = SHARED / "clip" / "ago_clip_fragments.fa.gz"
HAIRPINS = SHARED / "mirbase" / "hairpin.fa.gz"
#: The option sets of --check (RNAfold's flags).
OPTION_SETS = {"default": {}, "T25": {"temperature": 25.0}, "d0": {"dangles": 0}, "noLP": {"no_lp": True},
               "span100": {"max_bp_span": 100}}


def random_rna(n: int, rng: np.random.Generator) -> str:
    return "".join(np.array(list("ACGU"))[rng.choice(4, n, p=UTR_COMPOSITION)])


def windows(count: int, width: int = 50, seed: int = 46) -> tuple[list[str], str]:
    """``count`` windows of ``width`` nt cut at even steps from the CLIP fragments end to end (or
    from random UTR-like letters), and where they came from."""
    rng = np.random.default_rng(seed)
    if CLIP.exists():
        text, source = "".join(s for _, s in read_fasta(CLIP)).upper().replace("T", "U"), str(CLIP)
    else:
        text, source = random_rna(5_000_000, rng), "random UTR-like letters (no CLIP data)"
    starts = np.linspace(0, len(text) - width, count).astype(np.int64)
    return [text[a:a + width] for a in starts.tolist()], source


# -- ViennaRNA on every core ----------------------------------------------------------------------

def as_read(sequence: str) -> str:
    """A record as RNAfold (and gamut) folds it: upper case, T as U (RNA.fold_compound keeps a T)."""
    return sequence.upper().replace("T", "U")


def _vienna_chunk(job: tuple[list[str], dict, bool]) -> tuple[list[int], list[str], list, list]:
    import RNA

    sequences, options, partition = job
    md = RNA.md()
    md.temperature = options.get("temperature", 37.0)
    md.dangles = options.get("dangles", 2)
    md.noLP = int(options.get("no_lp", False))
    md.max_bp_span = options.get("max_bp_span", -1)
    energies, structures, ensemble, probabilities = [], [], [], []
    for s in sequences:
        fc = RNA.fold_compound(as_read(s), md)
        structure, e = fc.mfe()
        energies.append(round(e * 100))
        structures.append(structure)
        if partition:
            fc.exp_params_rescale(e)
            ensemble.append(fc.pf()[1])
            probabilities.append(np.triu(np.array(fc.bpp())[1:, 1:], 1))
    return energies, structures, ensemble, probabilities


def _warm(seconds: float) -> None:
    import RNA  # noqa: F401

    time.sleep(seconds)


def vienna_pool(sequences: list[str], workers: int, options: dict | None = None, partition: bool = False):
    """ViennaRNA on ``workers`` processes (started before the clock), records in order: seconds and results."""
    options = options or {}
    chunks = max(1, min(len(sequences), workers * 8))
    step = math.ceil(len(sequences) / chunks)
    jobs = [(sequences[a:a + step], options, partition) for a in range(0, len(sequences), step)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_warm, [0.5] * workers))  # every worker started and ViennaRNA imported before the clock
        start = time.perf_counter()
        parts = list(pool.map(_vienna_chunk, jobs))
        seconds = time.perf_counter() - start
    merged = tuple([x for part in parts for x in part[k]] for k in range(4))
    return seconds, merged


def vienna_one(sequence: str, partition: bool = False) -> float:
    start = time.perf_counter()
    _vienna_chunk(([sequence], {}, partition))
    return time.perf_counter() - start


# -- gamut ----------------------------------------------------------------------------------------

def engine_seconds(device: str, sequences: list[str], partition: bool = False, repeat: int = 2) -> float:
    """The engine call alone (``mfe_batch`` / ``pf_batch`` on the GPU; their time includes the copies
    to and from the device), best of ``repeat`` after a warm-up call."""
    from gamut.folding.turner.engines import make_engine
    from gamut.folding.turner.options import TurnerOptions

    with make_engine("cuda" if device == "cuda" else "cpu") as engine:
        call = (lambda: engine.pf(sequences, TurnerOptions())) if partition else \
            (lambda: engine.mfe(sequences, TurnerOptions()))
        call()
        return min(_timed(call) for _ in range(repeat))


def api_seconds(device: str, sequences: list[str], partition: bool = False, repeat: int = 2) -> tuple[float, object]:
    import gamut

    call = lambda: gamut.fold(sequences, model="turner", device=device, partition=partition)  # noqa: E731
    result = call()
    return min(_timed(call) for _ in range(repeat)), result


def process_seconds(device: str, fasta: Path, out: Path, partition: bool = False) -> float:
    cmd = [sys.executable, "-m", "gamut", "fold", str(fasta), "--model", "turner", "--device", device,
           "-o", str(out), "--no-progress"] + (["-p"] if partition else [])
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=dict(os.environ, GAMUT_SERVER="off"))
    return time.perf_counter() - start


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def write_fasta(path: Path, sequences: list[str]) -> Path:
    with open(path, "w") as handle:
        handle.writelines(f">w{k}\n{s}\n" for k, s in enumerate(sequences))
    return path


def device_name(device: str) -> str:
    if device != "cuda":
        return f"CPU only ({platform.processor() or platform.machine()})"
    import cupy

    return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()


# -- speed ----------------------------------------------------------------------------------------

def speed(args, tmp: Path, save) -> dict:
    """The speed rows of ``args.parts``, each printed and saved (``save(results)``) as soon as it is
    measured, so that a run cut short still leaves what it measured."""
    from gamut.folding.turner.cpu import record_seconds

    workers = args.threads or len(os.sched_getaffinity(0))
    rows: dict = {}
    done = {"workers": workers, "rows": rows}

    def finished(name: str, row: dict) -> None:
        base = row.get("vienna_all_cores_s", row.get("vienna_one_core_s"))
        for key in ("gpu_engine_s", "warm_api_s", "process_s"):
            row[key.replace("_s", "_speedup")] = base / row[key]
        rows[name] = row
        print(name, json.dumps(row), flush=True)
        save(done)

    parts = set(args.parts.split(","))
    if args.skip_long:
        parts &= {"windows"}
    if "windows" in parts:
        speed_windows(args, tmp, workers, finished)
    rng = np.random.default_rng(4000)
    for n in (4000, 20000):
        s = random_rna(n, rng)
        if f"long{n}" not in parts:
            continue
        one = vienna_one(s) if n <= 4000 else float(record_seconds(np.array([n]))[0])
        api_s, result = api_seconds(args.device, [s], repeat=1)
        finished(f"long{n}", {"what": f"one random RNA of {n:,} nt", "vienna_one_core_s": one,
                              "vienna_estimated": n > 4000,
                              "gpu_engine_s": engine_seconds(args.device, [s], repeat=1), "warm_api_s": api_s,
                              "process_s": process_seconds(args.device, write_fasta(tmp / f"l{n}.fa", [s]),
                                                           tmp / f"l{n}.tsv"),
                              "targets": "GPU <= 0.3 s" if n == 4000 else "GPU <= 10 s"})
    if "pf3000" in parts:
        s = random_rna(3000, rng)
        api_s, _ = api_seconds(args.device, [s], partition=True, repeat=1)
        row = {"what": "partition function + pair probabilities of one random RNA of 3,000 nt",
               "gpu_engine_s": engine_seconds(args.device, [s], True, repeat=1), "warm_api_s": api_s,
               "process_s": process_seconds(args.device, write_fasta(tmp / "p.fa", [s]), tmp / "p.tsv", partition=True),
               "targets": "GPU >= 50x one ViennaRNA core"}
        row["vienna_one_core_s"] = vienna_one(s, partition=True)  # last: the slowest part (about a minute)
        finished("pf3000", row)
    return done


def speed_windows(args, tmp: Path, workers: int, finished) -> None:
    """The million windows: ViennaRNA on every core (a sample, extrapolated), the GPU engine, a warm
    API call and the whole process."""
    seqs, source = windows(args.windows)
    sample = seqs[:min(args.vienna_sample, len(seqs))]
    vienna_s, ref = vienna_pool(sample, workers)
    vienna_total = vienna_s * len(seqs) / len(sample)
    api_s, batch = api_seconds(args.device, seqs)
    same = sum(int(a == b) for a, b in zip(batch.energies_dcal[:len(sample)].tolist(), ref[0]))
    finished("windows", {
        "what": f"{len(seqs):,} windows of 50 nt ({source})", "vienna_all_cores_s": vienna_total,
        "vienna_extrapolated_from": len(sample) if len(sample) < len(seqs) else None,
        "gpu_engine_s": engine_seconds(args.device, seqs), "warm_api_s": api_s,
        "process_s": process_seconds(args.device, write_fasta(tmp / "windows.fa", seqs), tmp / "windows.tsv"),
        "identical_mfe": f"{same}/{len(sample)}", "targets": "API >= 50x, process >= 10x ViennaRNA on all cores"})


# -- acceptance 1 and 2 ---------------------------------------------------------------------------

def human_hairpins(path: Path = HAIRPINS) -> list[str]:
    """The human (``hsa-``) miRBase hairpins, as RNAfold reads them."""
    return [s.upper().replace("T", "U") for n, s in read_fasta(path) if n.startswith("hsa-")]


def clip_fragments(count: int, path: Path = CLIP) -> list[str]:
    """The first ``count`` AGO-CLIP fragments, as written."""
    return [s for _, s in read_fasta(path)[:count]]


def check_sets(args) -> dict[str, list[str]]:
    rng = np.random.default_rng(50)
    sets = {}
    if HAIRPINS.exists():
        sets["mirbase_hsa_hairpins"] = human_hairpins()
    if CLIP.exists():
        sets["clip_2000"] = clip_fragments(2000)
    sets["random_1000_3000"] = [random_rna(int(n), rng) for n in rng.integers(1000, 3001, args.random_count)]
    return sets


def check(args, save) -> dict:
    import RNA

    import gamut

    workers = args.threads or len(os.sched_getaffinity(0))
    out = {}
    for set_name, seqs in check_sets(args).items():
        for option_name in args.options:
            options = OPTION_SETS[option_name]
            partition = not args.no_pf
            _, ref = vienna_pool(seqs, workers, options, partition)
            gpu = gamut.fold(seqs, model="turner", device=args.device, partition=partition, **options)
            md = RNA.md()
            md.temperature, md.dangles = options.get("temperature", 37.0), options.get("dangles", 2)
            md.noLP, md.max_bp_span = int(options.get("no_lp", False)), options.get("max_bp_span", -1)
            energies = gpu.energies_dcal.tolist()
            structures = gpu.structures
            evaluated = [round(RNA.fold_compound(as_read(s), md).eval_structure(st) * 100) for s, st in zip(seqs, structures)]
            row = {"records": len(seqs), "identical_mfe": sum(a == b for a, b in zip(energies, ref[0])),
                   "identical_structure": sum(a == b for a, b in zip(structures, ref[1])),
                   "structure_energy_is_mfe": sum(a == b for a, b in zip(evaluated, ref[0]))}
            if partition:
                row["ensemble_within_1e-6_rel"] = sum(
                    abs(pf.ensemble_energy - g) <= 1e-6 * max(abs(g), 1e-300) for pf, g in zip(gpu.partition, ref[2]))
                row["bpp_within_1e-6"] = sum(float(np.max(np.abs(pf.probabilities - p), initial=0.0)) <= 1e-6
                                             for pf, p in zip(gpu.partition, ref[3]))
            out[f"{set_name}/{option_name}"] = row
            print(set_name, option_name, row, flush=True)
            save(out)
    return out


# -- report ---------------------------------------------------------------------------------------

def markdown(report: dict) -> str:
    lines = [f"# gamut fold --model turner: {'acceptance check' if report['check'] else 'speed'}", "",
             f"- device: {report['device']}; host cores used by ViennaRNA: {report['workers']}",
             f"- date: {report['date']}", f"- command: `{report['command']}`", ""]
    if report["check"]:
        keys = sorted({k for row in report["results"].values() for k in row})
        lines += ["| set / options | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
        lines += [f"| {name} | " + " | ".join(str(row.get(k, "")) for k in keys) + " |"
                  for name, row in report["results"].items()]
        return "\n".join(lines) + "\n"
    lines += ["| workload | ViennaRNA (s) | GPU engine (s) | warm API (s) | whole process (s) | speed-ups "
              "(engine / API / process) | target |", "|---|---|---|---|---|---|---|"]
    for name, row in report["results"].get("rows", {}).items():
        base = row.get("vienna_all_cores_s", row.get("vienna_one_core_s"))
        how = "all cores" if "vienna_all_cores_s" in row else "one core"
        if row.get("vienna_extrapolated_from"):
            how += f", extrapolated from {row['vienna_extrapolated_from']:,} windows"
        if row.get("vienna_estimated"):
            how += ", estimated from the fit (not run)"
        lines.append(f"| {row['what']} | {base:.3f} ({how}) | {row['gpu_engine_s']:.3f} | {row['warm_api_s']:.3f} | "
                     f"{row['process_s']:.3f} | {row['gpu_engine_speedup']:.1f}x / {row['warm_api_speedup']:.1f}x / "
                     f"{row['process_speedup']:.1f}x | {row['targets']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--label", default=None, help="file name label (default: the device, e.g. nvidia-h200)")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--threads", type=int, default=None, help="ViennaRNA processes (default: every core)")
    parser.add_argument("--windows", type=int, default=1_000_000)
    parser.add_argument("--vienna-sample", type=int, default=100_000,
                        help="windows ViennaRNA folds (its time is extrapolated to all windows)")
    parser.add_argument("--skip-long", action="store_true", help="only the windows")
    parser.add_argument("--parts", default="windows,long4000,long20000,pf3000",
                        help="speed rows to measure, comma-separated (default: all)")
    parser.add_argument("--check", action="store_true", help="acceptance 1 and 2 instead of speed")
    parser.add_argument("--options", nargs="+", choices=tuple(OPTION_SETS), default=list(OPTION_SETS))
    parser.add_argument("--random-count", type=int, default=50)
    parser.add_argument("--no-pf", action="store_true", help="--check: the MFE only")
    args = parser.parse_args()
    label = args.label or device_name(args.device).lower().replace(" ", "-")
    stem = f"fold_turner{'_check' if args.check else ''}_{label}"
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"check": args.check, "device": device_name(args.device), "date": dt.datetime.now().isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.executable).name, *sys.argv]), "host": platform.node(),
              "workers": args.threads or len(os.sched_getaffinity(0)), "results": {}}

    def save(results: dict) -> None:
        report["results"] = results
        (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
        (args.out / f"{stem}.md").write_text(markdown(report))

    with tempfile.TemporaryDirectory() as tmp:
        save(check(args, save) if args.check else speed(args, Path(tmp), save))
    print(markdown(report))


if __name__ == "__main__":
    main()
