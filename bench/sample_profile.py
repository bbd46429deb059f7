"""Where a whole ``gamut`` command spends its wall time, thread by thread, without a tracer's distortion:
``gamut.cli.main(argv)`` runs in this process while a sampler thread reads every thread's stack every
``--interval`` seconds. Each sample is charged to the innermost frame of each thread that is in
``--focus`` (default: gamut's code, or an import statement, or CuPy/Numba's loading), or marked as
waiting, so the report says, per thread, how many seconds went where, and when (first and last sample).

    python bench/sample_profile.py --out profile.md -- miranda q.fa r.fa --device cuda -quiet -out o.txt

or a workload of :mod:`bench.scan_e2e` (``one``: the one-pair process of :mod:`bench.startup`), in a
fresh process after an untimed warm-up one (caches filled, as for any run after the first)::

    python bench/sample_profile.py --case clip --data ../shared/data --device cuda --out sample_clip.md

Costs about 1% of one core at the default 2 ms. The timeline starts at this script's first line
(``t0``), so imports before ``main`` are counted too.
"""
from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402


WAITS = ("threading.py", "queue.py", "concurrent/futures", "selectors.py", "connection.py")


def where(frame, focus: tuple[str, ...]) -> str:
    """The innermost frame of ``frame``'s stack whose file path holds one of ``focus``, as
    ``file:function``; the import being run, if the stack is importing; else the innermost frame.
    Prefixed ``waiting in`` when the innermost frame waits (a lock, a queue, a future, a pipe)."""
    waiting = any(key in frame.f_code.co_filename for key in WAITS)
    return ("waiting in " if waiting else "") + _place(frame, focus)


def _place(frame, focus: tuple[str, ...]) -> str:
    innermost = None
    f = frame
    while f is not None:
        name = f.f_code.co_filename
        if innermost is None:
            innermost = f
        if "importlib._bootstrap" in name and f.f_code.co_name == "_find_and_load":
            module = f.f_locals.get("name", "?")
            return f"import {str(module).split('.')[0]}"
        if any(key in name for key in focus):
            short = "/".join(Path(name).parts[-2:])
            return f"{short}:{f.f_code.co_name}"
        f = f.f_back
    code = innermost.f_code if innermost is not None else None
    return f"{Path(code.co_filename).name}:{code.co_name}" if code else "?"


def sample(stop: threading.Event, interval: float, focus: tuple[str, ...], table: dict, spans: dict) -> None:
    me = threading.get_ident()
    while not stop.wait(interval):
        now = time.perf_counter() - T0
        names = {t.ident: t.name for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            key = (names.get(ident, str(ident)), where(frame, focus))
            table[key] += interval
            first, _ = spans.get(key, (now, now))
            spans[key] = (first, now)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--interval", type=float, default=0.002)
    ap.add_argument("--focus", default="gamut/,cupy/_core,cupy/cuda,numba/core/caching,numba/core/dispatcher")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", type=Path, help="also write the report here (markdown)")
    ap.add_argument("--case", choices=("one", "clip", "sars", "utr"), help="a workload instead of a command line")
    ap.add_argument("--data", type=Path, help="with --case: the folder of ../shared/data")
    ap.add_argument("--device", default="cuda", help="with --case: --device of the scan")
    ap.add_argument("argv", nargs=argparse.REMAINDER, help="the gamut command line, after --")
    args = ap.parse_args()
    if args.case:
        return sample_case(args)
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    table: dict = defaultdict(float)
    spans: dict = {}
    stop = threading.Event()
    sampler = threading.Thread(target=sample, args=(stop, args.interval, tuple(args.focus.split(",")), table, spans),
                               daemon=True)
    sampler.start()
    began = time.perf_counter() - T0
    from gamut.cli import main as gamut_main

    code = gamut_main(argv)
    ended = time.perf_counter() - T0
    stop.set()
    sampler.join()
    by_thread: dict = defaultdict(list)
    for (thread, place), seconds in table.items():
        by_thread[thread].append((seconds, place))
    lines = [f"# Sampled wall time of `gamut {' '.join(argv)}`", "",
             f"- interval {args.interval * 1000:.1f} ms; gamut.cli.main from {began:.3f} s to {ended:.3f} s "
             f"(process start to main's end: {ended:.3f} s; exit code {code})", ""]
    for thread, rows in sorted(by_thread.items(), key=lambda kv: -sum(s for s, _ in kv[1])):
        rows.sort(reverse=True)
        lines += [f"## thread {thread}: {sum(s for s, _ in rows):.3f} s sampled", "",
                  "| seconds | first s | last s | where |", "| ---: | ---: | ---: | --- |"]
        for seconds, place in rows[:args.top]:
            first, last = spans[(thread, place)]
            lines.append(f"| {seconds:.3f} | {first:.3f} | {last:.3f} | `{place}` |")
        lines.append("")
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.write_text(report)
    return code


def sample_case(args) -> int:
    """``--case``: the workload's inputs written to a temporary folder, then this script on its
    command line in a fresh process, twice (the first untimed); the second's report is printed."""
    import subprocess
    import tempfile
    import types

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import scan_e2e
    import startup

    data = args.data or scan_e2e.SHARED
    with tempfile.TemporaryDirectory() as tmp:
        if args.case == "one":
            query, ref = startup.inputs(data, Path(tmp))
            flags: list[str] = []
        else:
            work = types.SimpleNamespace(data=data, mirnas=1921, clip=20000, utr_refs=scan_e2e.UTR_COUNT,
                                         cases=args.case, big=False, t2_length=20_000)
            query, ref, flags = scan_e2e.workloads(work, Path(tmp))[args.case]
        argv = ["miranda", str(query), str(ref), *flags, "--device", args.device, "-out", str(Path(tmp) / "out.txt")]
        own = [sys.executable, str(Path(__file__).resolve()), "--interval", str(args.interval), "--focus", args.focus,
               "--top", str(args.top)]
        for timed in (False, True):
            (Path(tmp) / "out.txt").unlink(missing_ok=True)
            done = subprocess.run([*own, *(["--out", str(args.out)] if timed and args.out else []), "--", *argv],
                                  capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"{' '.join(argv)}: exit code {done.returncode}\n{done.stderr[-2000:]}")
    note = (f"- workload: `python bench/sample_profile.py --case {args.case} --device {args.device}` "
            f"(inputs as in bench/scan_e2e.py and bench/startup.py), after an untimed warm-up process\n")
    report = done.stdout.replace("\n\n", "\n\n" + note, 1)
    if args.out:
        args.out.write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
