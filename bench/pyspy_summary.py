"""Sum py-spy's raw collapsed stacks (``py-spy record --format raw --threads``) by thread and by the
innermost gamut function of each sample (or the innermost frame where none is gamut's), as markdown.

    python3 bench/pyspy_summary.py FILE... [--top N]
"""
from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

THREAD = re.compile(r"^thread \((\d+)\): ([^;]*)")


def summarise(path: Path, top: int) -> list[str]:
    total = 0
    by_thread: Counter = Counter()
    by_function: Counter = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        m = THREAD.match(stack)
        by_thread[re.sub(r"_\d+$", "", m.group(2)) if m else frames[0]] += n
        ours = [f for f in frames if "gamut/" in f]
        by_function[re.sub(r":\d+\)", ")", ours[-1] if ours else frames[-1])] += n
    lines = [f"## {path.name}: {total:,} samples", "", "| thread | samples | share |", "| --- | ---: | ---: |"]
    lines += [f"| {k} | {v:,} | {v / total:.1%} |" for k, v in by_thread.most_common(top)]
    lines += ["", "| innermost gamut function | samples | share |", "| --- | ---: | ---: |"]
    lines += [f"| `{k}` | {v:,} | {v / total:.1%} |" for k, v in by_function.most_common(top)]
    return lines + [""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    for path in args.files:
        print("\n".join(summarise(path, args.top)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
