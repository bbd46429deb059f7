"""Draw a run's timeline: the spans and marks gamut's processes wrote to ``GAMUT_TIMELINE``
(:mod:`gamut.timeline`), as a markdown table (first and last time of each kind of span, per
process) and a PNG Gantt chart, one row per process.

    GAMUT_TIMELINE=run.jsonl gamut scan ... ; python bench/timeline.py run.jsonl --out timeline --title "2 GPUs"
    python bench/timeline.py --run -- scan q.fa r.fa --gpus 0,1 --device cuda -o hits.tsv   (runs it, then draws)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

COLOURS = {"align": "#4c72b0", "read inputs": "#dd8452", "engine and stripe ready": "#55a868",
           "worker receives": "#c44e52", "write group": "#8172b3", "plan stripes": "#937860",
           "hits": "#da8bc3", "chunk text": "#8c8c8c", "chunk built": "#ccb974"}


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def table(records: list[dict]) -> list[str]:
    t0 = min(r["t0"] for r in records)
    start = {}
    for r in records:
        start.setdefault(r["pid"], r["t0"])
    order = sorted(start, key=start.get)
    rows = defaultdict(lambda: [float("inf"), 0.0, 0, 0.0])
    for r in records:
        row = rows[(order.index(r["pid"]), r["name"])]
        row[0] = min(row[0], r["t0"] - t0)
        row[1] = max(row[1], r["t1"] - t0)
        row[2] += 1
        row[3] += r["t1"] - r["t0"]
    lines = ["| process | span | count | first s | last s | total s |", "| ---: | --- | ---: | ---: | ---: | ---: |"]
    for (proc, name), (a, b, n, total) in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[1][0])):
        lines.append(f"| {proc} | {name} | {n} | {a:.2f} | {b:.2f} | {total:.2f} |")
    return lines


def chart(records: list[dict], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = min(r["t0"] for r in records)
    start = {}
    for r in records:
        start.setdefault(r["pid"], r["t0"])
    order = sorted(start, key=start.get)
    fig, ax = plt.subplots(figsize=(11, 0.6 + 0.5 * len(order)))
    seen = set()
    for r in records:
        y = order.index(r["pid"])
        width = r["t1"] - r["t0"]
        colour = COLOURS.get(r["name"], "#999999")
        if width > 0:
            ax.barh(y, width, left=r["t0"] - t0, height=0.6, color=colour,
                    label=r["name"] if r["name"] not in seen else None, alpha=0.85)
            seen.add(r["name"])
        else:
            ax.plot([r["t0"] - t0], [y], marker="|", color="black", markersize=12)
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(["command" if k == 0 else f"worker {k}" for k in range(len(order))])
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the command started")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", nargs="?", type=Path)
    ap.add_argument("--out", type=Path, required=True, help="stem of the .md and .png written")
    ap.add_argument("--title", default="gamut timeline")
    ap.add_argument("--run", nargs=argparse.REMAINDER, help="a gamut command line to run with the timeline on")
    args = ap.parse_args()
    if args.run:
        argv = args.run[1:] if args.run[0] == "--" else args.run
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "timeline.jsonl"
            subprocess.run([sys.executable, "-m", "gamut", *argv], check=True,
                           env=dict(os.environ, GAMUT_TIMELINE=str(path), GAMUT_SERVER="off"))
            records = load(path)
    else:
        records = load(args.records)
    lines = [f"# {args.title}", "", *table(records)]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    chart(records, args.out.with_suffix(".png"), args.title)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
