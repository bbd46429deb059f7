"""What the hit table's context columns cost (issue 26): whole ``gamut scan -o hits.tsv`` processes
of this tree against a baseline tree without the columns, on the ``clip`` and ``utr`` workloads of
``bench/scan_e2e.py``, interleaved (baseline, current, baseline, ...), median of ``--repeat``.

    python bench/site_columns_cost.py --baseline-src OLD/src --device cpu --cases clip,utr --repeat 3

Writes ``site_columns_cost_<kind>.{json,md}`` to ``--out``. The TSV of the current tree has the
columns ``site_type``, ``dist_to_end``, ``supp_pairs`` and ``local_au`` after the baseline's; the
report checks that the baseline's columns are equal in both.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import scan_e2e  # noqa: E402  (the workloads)


def run(src: Path, query: Path, ref: Path, out: Path, device: str) -> float:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gamut", "scan", str(query), str(ref), "-o", str(out), "--device", device],
                   check=True, env=env)
    return time.perf_counter() - start


def same_base_columns(old: Path, new: Path) -> bool:
    """The baseline's columns of every row are the current tree's first columns."""
    with open(old) as a, open(new) as b:
        for x, y in zip(a, b):
            fields = x.rstrip("\n").split("\t")
            if y.rstrip("\n").split("\t")[: len(fields)] != fields:
                return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-src", type=Path, required=True, help="the src folder of the tree to compare with")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--cases", default="clip,utr")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--utr-refs", type=int, default=scan_e2e.UTR_COUNT)
    ap.add_argument("--clip", type=int, default=2000)
    ap.add_argument("--data", type=Path, default=scan_e2e.SHARED)
    ap.add_argument("--kind", default=platform.node())
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args()
    wl_args = argparse.Namespace(data=args.data, mirnas=1921, cases=args.cases.split(","), big=False,
                                 clip=args.clip, utr_refs=args.utr_refs, t2_length=20_000)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for case, (query, ref, _flags) in scan_e2e.workloads(wl_args, tmp).items():
            trees = {"baseline": args.baseline_src.resolve(), "current": ROOT / "src"}
            for name, src in trees.items():  # warm-up: Numba's and CuPy's caches
                run(src, query, ref, tmp / f"{name}.tsv", args.device)
            walls: dict[str, list[float]] = {name: [] for name in trees}
            for _ in range(args.repeat):
                for name, src in trees.items():
                    walls[name].append(run(src, query, ref, tmp / f"{name}.tsv", args.device))
            med = {name: statistics.median(w) for name, w in walls.items()}
            rows.append({"case": case, "walls_s": walls, "median_s": med,
                         "cost": med["current"] / med["baseline"] - 1.0,
                         "same_base_columns": same_base_columns(tmp / "baseline.tsv", tmp / "current.tsv")})
            print(json.dumps(rows[-1]), flush=True)
    report = {"machine": {"kind": args.kind, "cpus": os.cpu_count(), "python": platform.python_version()},
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "command": "python " + " ".join(sys.argv), "device": args.device, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"site_columns_cost_{args.kind}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    lines = [f"# Cost of the site-context columns ({args.kind}, --device {args.device})", "",
             f"- date: {report['date']}", f"- command: `{report['command']}`",
             "- whole `gamut scan q.fa r.fa -o hits.tsv` processes, median of the interleaved runs", "",
             "| case | baseline s | current s | cost | baseline columns equal |", "| --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['median_s']['baseline']:.2f} | {r['median_s']['current']:.2f} | "
                     f"{100 * r['cost']:+.1f}% | {r['same_base_columns']} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
