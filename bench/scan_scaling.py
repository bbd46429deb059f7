"""Multi-GPU scaling of whole ``gamut miranda`` processes: :mod:`scan_e2e` once per GPU set (``--gpus 0,1``
etc.: the process on the first GPU, a worker process on each other one), then one table of wall time
and speed-up over the first set per case.

    python bench/scan_scaling.py --gpu-sets 0 0,1 0,1,2,3 --cases clip,utr --clip 20000 --data .data

Sets naming GPUs the machine lacks are skipped (and said so). Writes ``scan_scaling_<kind>.{md,json}``
to ``--out``; each run's own report (``scan_e2e_<kind>_gpus<set>.*``) lands beside it.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def gpu_count() -> int:
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 (no CuPy or no driver: no GPU)
        return 0


def run_set(gpus: str, args) -> list[dict]:
    """One :mod:`scan_e2e` run on GPU set ``gpus``; its rows."""
    cmd = [sys.executable, str(HERE / "scan_e2e.py"), "--device", args.device, "--cases", args.cases,
           "--clip", str(args.clip), "--modes", args.modes, "--repeat", str(args.repeat), "--data", str(args.data),
           "--kind", args.kind, "--out", str(args.out), "--gpus", gpus, *(["--served"] if args.served else [])]
    subprocess.run(cmd, check=True)
    stem = f"scan_e2e_{args.kind}_gpus{gpus.replace(',', '-')}"
    return json.loads((args.out / f"{stem}.json").read_text())["rows"]


def table(runs: dict[str, list[dict]]) -> list[dict]:
    """Rows (case, mode, GPUs, wall, speed-up over the first set, output identical to it)."""
    first = next(iter(runs.values()))
    base = {(r["case"], r["mode"]): r for r in first}
    out = []
    for gpus, rows in runs.items():
        for r in rows:
            b = base[(r["case"], r["mode"])]
            out.append({"case": r["case"], "mode": r["mode"], "gpus": gpus, "n_gpus": len(gpus.split(",")),
                        "wall_s": r["wall_s"], "walls_s": r["walls_s"], "speedup": b["wall_s"] / r["wall_s"],
                        "same_output": r["output_sha256"] == b["output_sha256"], "pairs": r["pairs"],
                        "served_wall_s": r.get("served_wall_s"),
                        "served_speedup": (b["served_wall_s"] / r["served_wall_s"]) if r.get("served_wall_s") else None})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu-sets", nargs="+", default=["0", "0,1", "0,1,2,3"])
    ap.add_argument("--cases", default="clip,utr")
    ap.add_argument("--clip", type=int, default=20000)
    ap.add_argument("--modes", default="default")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    ap.add_argument("--kind", default=platform.node())
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--served", action="store_true", help="also time each command run by a `gamut serve` process "
                    "(scan_e2e --served: the workers kept between commands)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    have = gpu_count()
    runs: dict[str, list[dict]] = {}
    for gpus in args.gpu_sets:
        ids = [int(g) for g in gpus.split(",")]
        if max(ids) >= have:
            print(f"skipping --gpus {gpus}: this machine has {have} GPU(s)", flush=True)
            continue
        runs[gpus] = run_set(gpus, args)
    if not runs:
        raise SystemExit("no GPU set fits this machine")
    rows = table(runs)
    stem = args.out / f"scan_scaling_{args.kind}"
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python bench/scan_scaling.py " + " ".join(sys.argv[1:])
    stem.with_suffix(".json").write_text(json.dumps({"date": date, "command": command, "gpus_present": have,
                                                     "rows": rows}, indent=1))
    lines = [f"# Multi-GPU scaling, whole `gamut miranda` processes ({args.kind})", "",
             f"- date: {date}", f"- command: `{command}`",
             f"- GPUs present: {have}; the process scans on the first GPU of a set and a worker process on each "
             f"other one; wall: median of {args.repeat}", "",
             "| case | mode | GPUs | wall s | speed-up | output identical | served wall s | served speed-up |",
             "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: |"]
    lines += [f"| {r['case']} | {r['mode']} | {r['gpus']} | {r['wall_s']:.2f} | {r['speedup']:.2f}x | {r['same_output']} | "
              + (f"{r['served_wall_s']:.2f} | {r['served_speedup']:.2f}x |" if r["served_wall_s"] else "- | - |")
              for r in rows]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
