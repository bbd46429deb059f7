"""The Turner MFE batch launch's measurement variants side by side (issue 46), in one process on one
GPU: 1,000,000 random windows of 50 nt and 100,000 random RNAs of 150 nt, each folded by the default
launch and by every variant of ``gamut.folding.turner.batch_tuning`` (blocks per multiprocessor,
a warp per sequence, work areas in shared memory). Per row: GPU time (CUDA events around the
launches: ``CupyRunner.kernel_s``), the call's wall time (``mfe_batch_flat``: encoding, copies and
the structures as one buffer), the launch's shape, and whether its energies and structures are the
default launch's byte for byte; the default's are checked on a sample against ViennaRNA.

    python bench/turner_batch_variants.py --out bench/results --label nvidia-h200 [--budget-s 150]

(expected, not yet measured: about a minute on an H200 after the kernels' first compilation; ``--scale
0.01`` for a quick look).

Each row is printed as it is measured, and the json/md are rewritten after it (a run cut short
leaves what it measured); a variant that would start after ``--budget-s`` seconds is skipped and
marked. A variant whose results differ from the default's is marked ``DIFFERS`` (a bug: the
variants change how the work runs, never what it computes).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gamut.folding.turner import gpu_mfe  # noqa: E402
from gamut.folding.turner.batch_tuning import BatchTuning  # noqa: E402
from gamut.folding.turner.options import TurnerOptions  # noqa: E402
from gamut.io.packed import PackedSequences  # noqa: E402

T = BatchTuning
#: The sets (name, sequences, length) and the variants measured on each, the default first.
SETS = {
    "w50": (1_000_000, 50, [
        T(), T(blocks_per_sm=24), T(blocks_per_sm=16), T(blocks_per_sm=12), T(blocks_per_sm=8),
        T(warps=1), T(warps=1, blocks_per_sm=16), T(warps=4), T(warps=4, blocks_per_sm=4), T(warps=8, blocks_per_sm=2),
        T(shared_upto=64), T(warps=2, shared_upto=64), T(warps=4, shared_upto=64),
        T(warps=1, shared_upto=64, blocks_per_sm=8),
    ]),
    "r150": (100_000, 150, [
        T(), T(blocks_per_sm=4), T(blocks_per_sm=2), T(shared_upto=256),
    ]),
}
#: Sequences of each set checked against ViennaRNA (the default launch's results).
VIENNA_SAMPLE = 200


def random_packed(count: int, width: int, seed: int) -> PackedSequences:
    """``count`` random RNAs of ``width`` letters (A, C, G, U alike), end to end."""
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"ACGU", np.uint8)[rng.integers(0, 4, count * width)].tobytes()
    return PackedSequences(letters, np.arange(count + 1, dtype=np.int64) * width)


def vienna_check(packed: PackedSequences, energies: np.ndarray, structures: np.ndarray, sample: int) -> dict:
    """ViennaRNA's MFE (integer dcal/mol) and its evaluation of our structure on ``sample`` evenly
    spread sequences: how many agree."""
    try:
        import RNA
    except ImportError:
        return {"checked": 0, "note": "ViennaRNA (RNA) is not installed: not checked"}
    md = TurnerOptions().model_details()
    picks = np.linspace(0, len(packed) - 1, min(sample, len(packed))).astype(int)
    same_energy = optimal = 0
    for x in picks.tolist():
        a, b = int(packed.offsets[x]), int(packed.offsets[x + 1])
        fc = RNA.fold_compound(packed.letters[a:b].decode(), md)
        _, mfe = fc.mfe()
        ref = int(round(mfe * 100))
        same_energy += int(energies[x]) == ref
        optimal += int(round(fc.eval_structure(structures[a:b].tobytes().decode()) * 100)) == ref
    return {"checked": int(picks.size), "same_mfe": same_energy, "structure_optimal": optimal}


def device_info(runner: gpu_mfe.CupyRunner) -> dict:
    cp = runner.cp
    with cp.cuda.Device(runner.device_id):
        props = cp.cuda.runtime.getDeviceProperties(runner.device_id)
        attrs = cp.cuda.Device(runner.device_id).attributes
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return {"name": name, "multiprocessors": runner.multiprocessors(), "l2_bytes": int(attrs.get("L2CacheSize", 0)),
            "shared_limits": list(runner.shared_limits()),
            "registers": {k: int(f.num_regs) for k, f in runner.kernels.items()}}


def shape_text(shapes) -> str:
    return "; ".join(f"{s.kernel} {s.blocks}x{s.threads}" + (f" g{s.groups}" if s.groups > 1 else "")
                     + (f" smem {s.shared_bytes // 1024} KB" if s.shared_bytes else "") for s in shapes if s)


def write(report: dict, out: Path, label: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"turner_batch_variants_{label}.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [f"# Turner MFE batch variants ({label}, {report['date']})", "",
             f"Device: {report['device']['name']}, {report['device']['multiprocessors']} SMs, "
             f"L2 {report['device']['l2_bytes'] / 2**20:.0f} MiB; registers a thread: {report['device']['registers']}.",
             f"Command: `{report['command']}`", "",
             "| set | variant | GPU s | call wall s | vs default GPU | same as default | launch |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in report["rows"]:
        if "skipped" in row:
            lines.append(f"| {row['set']} | {row['variant']} | | | | | skipped: {row['skipped']} |")
            continue
        lines.append(f"| {row['set']} | {row['variant']} | {row['gpu_s']:.3f} | {row['wall_s']:.3f} | "
                     f"{row['speedup']:.2f}x | {row['same_as_default']} | {row['launch']} |")
    lines += ["", "ViennaRNA sample (default launch):", ""]
    lines += [f"- {name}: {check}" for name, check in report["vienna"].items()]
    (out / f"turner_batch_variants_{label}.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--label", default="gpu")
    ap.add_argument("--budget-s", type=float, default=150.0, help="start no variant after this many seconds")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of each set's sequences (smoke runs)")
    ap.add_argument("--sets", default=",".join(SETS), help="which sets (w50, r150)")
    args = ap.parse_args()
    begin = time.perf_counter()
    options = TurnerOptions()
    runner = gpu_mfe.CupyRunner(0, BatchTuning())
    report = {"date": dt.datetime.now().isoformat(timespec="seconds"), "command": " ".join(sys.argv),
              "host": platform.node(), "device": device_info(runner), "rows": [], "vienna": {}}
    out = Path(args.out)
    print(json.dumps(report["device"]), flush=True)
    for name in args.sets.split(","):
        count, width, variants = SETS[name]
        packed = random_packed(max(1, int(count * args.scale)), width, seed=46 + width)
        job = gpu_mfe.plan(packed, options)
        base = None
        for tuning in variants:
            label = tuning.label()
            if time.perf_counter() - begin > args.budget_s:
                report["rows"].append({"set": name, "variant": label, "skipped": f"past {args.budget_s:.0f} s"})
                print(name, label, "skipped", flush=True)
                write(report, out, args.label)
                continue
            runner = gpu_mfe.CupyRunner(0, tuning)
            warm = random_packed(min(4096, len(packed)), width, seed=1)
            gpu_mfe.mfe_batch_flat(warm, options, runner=runner)  # the kernel's first launch, its attributes
            runner.kernel_s = 0.0
            start = time.perf_counter()
            energies, structures, _ = gpu_mfe.mfe_batch_flat(packed, options, runner=runner)
            wall = time.perf_counter() - start
            if base is None:
                base = (energies, structures, runner.kernel_s)
                report["vienna"][name] = vienna_check(packed, energies, structures, VIENNA_SAMPLE)
                print(name, "ViennaRNA sample", report["vienna"][name], flush=True)
            same = bool(np.array_equal(energies, base[0]) and np.array_equal(structures, base[1]))
            row = {"set": name, "sequences": len(packed), "nt": width, "variant": label,
                   "gpu_s": round(runner.kernel_s, 4), "wall_s": round(wall, 4),
                   "speedup": round(base[2] / runner.kernel_s, 3) if runner.kernel_s else 0.0,
                   "same_as_default": "yes" if same else "DIFFERS",
                   "launch": shape_text(gpu_mfe.launch_shapes(job, runner))}
            report["rows"].append(row)
            print(json.dumps(row), flush=True)
            write(report, out, args.label)
    print(f"done in {time.perf_counter() - begin:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
