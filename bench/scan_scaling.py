"""Several GPUs on transcriptome-sized scans (issue 45): whole ``gamut scan`` processes of the
``transcriptome`` case of :mod:`scan_e2e` (all 1,921 human miRNAs x ten copies of the utr
references: 61,500 references, 124 Mb) on each GPU set, and on a Dask cluster of the same GPUs
started beforehand, in one run:

    python bench/scan_scaling.py --data .data --gpu-sets 0 0,1 0,1,2,3 --dask 0,1,2,3 0,0,1,1,2,2,3,3 --modes fast,default

- modes: ``fast`` = ``--noenergy --score-threshold 160 -o hits.tsv``; ``default`` = energies, ``-o
  hits.tsv`` (5.8 GB of text);
- start-up: a one-pair ``--device cuda`` process (median of 5) in the same run; a run's time after
  start-up is its whole time minus that, and the speed-up of a GPU set is the one GPU's time after
  start-up over its own;
- every output's checksum (xxh3-128, or SHA-256 without xxhash) and whether it equals the one GPU's;
- peak RSS of the main process (its own VmHWM, sampled: worker processes not counted) and of the
  whole process tree;
- ``--small-copies 1 3``: smaller sets timed beside the ten copies on one GPU, fast mode (time against
  size): the issue's ratio (ten copies' time after start-up over ten times one copy's), against the
  one-pair start-up of default mode (the issue's) and of fast mode (the one-pair process of the mode
  timed: no energies' code loaded), and a least-squares line through every size's whole time (its
  slope, intercept and largest residual);
- ``--dask SET...``: a Dask cluster of each set's workers (a GPU named twice: two workers on it),
  started beforehand, one after the other, in the modes of ``--dask-modes`` (default: fast);
- ``--golden DIR``: each golden miRanda case (``tests/data/miranda``) on every GPU set and the first
  Dask cluster, default mode and ``-noenergy``, compared with miRanda 3.3a's own output.

Writes ``scan_scaling_<kind>.{md,json}`` to ``--out``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scan_e2e  # noqa: E402
from scan_dask import TcpCluster  # noqa: E402

#: One-pair processes timed for the start-up, and runs of the small set for linearity: one copy's time
#: after start-up (about 0.5 s) is within the spread of single start-up runs (1.04-1.32 s on 2x H200).
STARTUP_RUNS = 5
SMALL_RUNS = 5

MODES = {"fast": ["--noenergy", "--score-threshold", "160"], "default": []}

def digest(path: Path) -> str:
    try:
        import xxhash

        h = xxhash.xxh3_128()
        name = "xxh3-128"
    except ImportError:
        h = hashlib.sha256()
        name = "sha256"
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 24):
            h.update(chunk)
    return f"{name}:{h.hexdigest()}"


def whole(cmd: list[str], env: dict) -> dict:
    got = scan_e2e.measure(cmd, env)
    return {"wall_s": got["wall_s"], "main_peak_rss": got["main_peak_rss"], "tree_peak_rss": got["peak_rss"]}


DEVICE = ["cuda"]


def gamut(*args: str) -> list[str]:
    """A gamut command line (``--device cuda`` as given; on the CPU check, without GPU options)."""
    args = list(args)
    if DEVICE[0] != "cuda":
        for option in ("--gpus", "--device"):
            while option in args:
                k = args.index(option)
                del args[k:k + 2]
        args += ["--device", DEVICE[0]]
    return [sys.executable, "-m", "gamut", *args]


def gpu_count() -> int:
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001
        return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=scan_e2e.SHARED)
    ap.add_argument("--gpu-sets", nargs="+", default=["0", "0,1", "0,1,2,3"])
    ap.add_argument("--modes", default="fast,default")
    ap.add_argument("--dask", nargs="*", default=None, metavar="GPUS",
                    help="also a Dask cluster of these GPU sets' workers, one cluster after the other (the modes of "
                         "--dask-modes; a GPU named twice gets two workers); no set: the largest of --gpu-sets")
    ap.add_argument("--dask-modes", default="fast", help="the modes scanned on each Dask cluster (default: fast)")
    ap.add_argument("--dask-threads", type=int, default=1,
                    help="threads of each GPU worker of the Dask cluster")
    ap.add_argument("--copies", type=int, default=scan_e2e.TRANSCRIPTOME_COPIES)
    ap.add_argument("--small-copies", type=int, nargs="*", default=[1],
                    help="smaller sets (copies) timed on one GPU in fast mode, for linearity (0 or none: none)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--golden", type=Path, default=None, help="tests/data/miranda: golden cases on every GPU set")
    ap.add_argument("--golden-sets", nargs="*", default=None, help="the GPU sets of the golden cases (default: all)")
    ap.add_argument("--kind", default=platform.node())
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--tmp", type=Path, default=None, help="folder for inputs and outputs (default: a temporary one)")
    ap.add_argument("--device", default="cuda", help="(cpu: a quick check of this script without a GPU, one set '0')")
    ap.add_argument("--timeline", action="store_true",
                    help="one more run of each configuration with GAMUT_TIMELINE on: bench/timeline.py's table and chart")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    DEVICE[0] = args.device
    have = gpu_count() if args.device == "cuda" else 1
    sets = [s for s in args.gpu_sets if max(int(g) for g in s.split(",")) < have]
    modes = [m for m in args.modes.split(",") if m]
    env = dict(os.environ, GAMUT_SERVER="off")
    report: dict = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                    "command": "python bench/scan_scaling.py " + " ".join(sys.argv[1:]), "gpus_present": have,
                    "host": {"cpus": os.cpu_count(), "node": platform.node()}, "rows": [], "golden": []}
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp_name:
        tmp = Path(tmp_name)
        mirs = [r for r in scan_e2e.read_fasta(args.data / "mirbase" / "mature.fa.gz") if r[0].startswith("hsa-")]
        query = scan_e2e.write_fasta(tmp / "hsa.fa", mirs)
        refs = scan_e2e.write_fasta(tmp / "transcriptome.fa", scan_e2e.transcriptome_references(args.data, args.copies))
        smalls = {c: scan_e2e.write_fasta(tmp / f"small{c}.fa", scan_e2e.transcriptome_references(args.data, c))
                  for c in sorted(set(args.small_copies)) if 0 < c < args.copies}
        warm = scan_e2e.write_fasta(tmp / "warm.fa", scan_e2e.utr_references(args.data, 30))
        one_q = scan_e2e.write_fasta(tmp / "one_q.fa", mirs[:1])
        one_r = scan_e2e.write_fasta(tmp / "one_r.fa", [("site", scan_e2e.complementary_site(mirs[0][1]))])
        for gpus in sets:  # caches filled: kernels of every row bucket, Numba's functions
            for flags in MODES.values():
                whole(gamut("scan", str(query), str(warm), *flags, "--device", "cuda", "--gpus", gpus, "-o",
                            str(tmp / "warm.tsv")), env)
        startups = sorted(whole(gamut("scan", str(one_q), str(one_r), "--device", "cuda", "-o", str(tmp / "one.tsv")),
                                env)["wall_s"] for _ in range(STARTUP_RUNS))
        startup = startups[len(startups) // 2]
        report["startup_s"], report["startups_s"] = startup, startups
        if smalls:  # (the one-pair process of fast mode too, for the line of fast-mode times against size)
            report["startups_fast_s"] = sorted(whole(gamut("scan", str(one_q), str(one_r), *MODES["fast"], "--device", "cuda",
                                                           "-o", str(tmp / "one.tsv")), env)["wall_s"] for _ in range(STARTUP_RUNS))
        print(f"start-up (one pair, --device cuda): {startup:.2f} s {startups}", flush=True)
        dask_sets = [] if args.dask is None or not sets else (args.dask or [max(sets, key=lambda s: len(s.split(",")))])
        dask_sets = [d for d in dask_sets if max(int(g) for g in d.split(",")) < have]
        dask_timeline = tmp / "dask_timeline.jsonl"  # where the workers' spans go (--timeline)
        cluster, cluster_set, cluster_address = None, None, None
        dask_modes = [m for m in args.dask_modes.split(",") if m]
        try:
            runs = ([(mode, gpus, False) for mode in modes for gpus in sets]
                    + [(mode, d, True) for d in dask_sets for mode in dask_modes])
            base: dict[str, dict] = {}
            golden_cluster: list[dict] = []
            for mode, gpus, on_dask in runs:
                if on_dask and cluster_set != gpus:  # a cluster of this set's workers, started beforehand, as docs/cluster.md says
                    if cluster is not None:
                        cluster.close()
                    cluster = TcpCluster(0, args.dask_threads, tmp, gpus=[int(g) for g in gpus.split(",")],
                                         env={**env, "GAMUT_TIMELINE": str(dask_timeline)})
                    cluster_set, cluster_address = gpus, cluster.address
                    report.setdefault("dask", []).append({"gpus": gpus, "address": cluster_address})
                address = cluster_address if on_dask else None
                out = tmp / f"hits_{mode}.tsv"
                placement = ["--cluster", address] if address else ["--gpus", gpus]
                cmd = gamut("scan", str(query), str(refs), *MODES[mode], "--device", "cuda", *placement, "-o", str(out))
                got = []
                for _ in range(args.repeat):
                    out.unlink(missing_ok=True)
                    got.append(whole(cmd, env))
                walls = sorted(g["wall_s"] for g in got)
                row = {"mode": mode, "gpus": gpus, "dask": bool(address), "wall_s": walls[len(walls) // 2],
                       "walls_s": walls, "runs_s": [g["wall_s"] for g in got],  # (in the order run)
                       "after_startup_s": walls[len(walls) // 2] - startup,
                       "main_peak_rss": max(g["main_peak_rss"] for g in got),
                       "tree_peak_rss": max(g["tree_peak_rss"] for g in got),
                       "output_bytes": out.stat().st_size, "checksum": digest(out)}
                if gpus == "0" and not address:
                    base[mode] = row
                if args.timeline:
                    row["timeline"] = timeline(cmd, env, args, f"{mode}_{'dask' if address else 'gpus'}{gpus.replace(',', '-')}",
                                               dask_timeline if address else None)
                ref = base.get(mode)
                row["speedup"] = ref["after_startup_s"] / row["after_startup_s"] if ref else None
                row["same_output"] = ref is not None and row["checksum"] == ref["checksum"]
                out.unlink()
                report["rows"].append(row)
                print(json.dumps(row), flush=True)
                if on_dask and args.golden is not None and not golden_cluster:  # (on the first cluster)
                    golden_cluster = golden_checks(args.golden, [], address, tmp, env)
                write(report, args, quiet=True)  # a run cut short keeps every row measured so far
            big = next((r for r in report["rows"] if r["mode"] == "fast" and r["gpus"] == "0" and not r["dask"]), None)
            if smalls and big is not None:
                walls = {}
                for copies, small in smalls.items():
                    out = tmp / "small.tsv"
                    got = sorted(whole(gamut("scan", str(query), str(small), *MODES["fast"], "--device", "cuda", "-o",
                                             str(out)), env)["wall_s"] for _ in range(max(args.repeat, SMALL_RUNS)))
                    walls[copies] = got[len(got) // 2]
                walls[args.copies] = big["wall_s"]
                report["linearity"] = linearity(walls, args.copies, startup, median(report["startups_fast_s"]))
                print(json.dumps(report["linearity"]), flush=True)
            if args.golden is not None:
                golden_sets = [g for g in (args.golden_sets or sets) if g in sets]
                report["golden"] = golden_checks(args.golden, golden_sets, None, tmp, env) + golden_cluster
        finally:
            if cluster is not None:
                cluster.close()
    write(report, args)
    return 0


def median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2]


def linearity(walls: dict[int, float], copies: int, startup: float, startup_fast: float) -> dict:
    """Whole times (``walls``, by copies) against size: the issue's ratio for each smaller size (the
    ``copies`` set's time after start-up over ``copies / c`` times the ``c`` set's), with the default
    mode's start-up (``startup``: the issue's) and fast mode's; and a least-squares line of whole time
    against copies, with its largest residual."""
    sizes = sorted(walls)
    ratios = {}
    for name, base in (("default_startup", startup), ("fast_startup", startup_fast)):
        ratios[name] = {str(c): (walls[copies] - base) / ((walls[c] - base) * copies / c) if walls[c] > base else None
                        for c in sizes if c != copies}
    n = len(sizes)
    mx, my = sum(sizes) / n, sum(walls[c] for c in sizes) / n
    sxx = sum((c - mx) ** 2 for c in sizes)
    slope = sum((c - mx) * (walls[c] - my) for c in sizes) / sxx if sxx else 0.0
    intercept = my - slope * mx
    residuals = {str(c): walls[c] - (intercept + slope * c) for c in sizes}
    return {"copies": sizes, "walls_s": [walls[c] for c in sizes], "startup_s": startup, "startup_fast_s": startup_fast,
            "ratio_to_linear": ratios, "fit": {"slope_s_per_copy": slope, "intercept_s": intercept,
                                               "residuals_s": residuals}}


def timeline(cmd: list[str], env: dict, args, name: str, shared_file: Path | None) -> str:
    """One more run of ``cmd`` with ``GAMUT_TIMELINE`` on (the Dask workers write to ``shared_file``,
    emptied first); its table and chart beside the results. Returns the chart's file name."""
    records = args.out / f"timeline_{args.kind}_{name}.jsonl"
    records.unlink(missing_ok=True)
    if shared_file is not None:
        shared_file.write_text("")
    whole(cmd, {**env, "GAMUT_TIMELINE": str(records)})
    if shared_file is not None:
        with open(records, "a") as out:
            out.write(shared_file.read_text())
    stem = args.out / f"timeline_{args.kind}_{name}"
    subprocess.run([sys.executable, str(HERE / "timeline.py"), str(records), "--out", str(stem), "--title",
                    f"{name} ({args.kind})"], check=False, stdout=subprocess.DEVNULL)
    return stem.with_suffix(".png").name


def golden_checks(folder: Path, sets: list[str], address: str | None, tmp: Path, env: dict) -> list[dict]:
    """Each golden case with its own options, default and -noenergy, on every GPU set (and the
    cluster): the results after the settings block equal miRanda 3.3a's expected output."""
    rows = []
    places = [("--gpus", s) for s in sets] + ([("--cluster", address)] if address else [])
    for case in sorted(p for p in folder.iterdir() if (p / "args.txt").exists()):
        extra = (case / "args.txt").read_text().split()
        for expected_name, flags in (("expected.txt", []), ("expected_noenergy.txt", ["-noenergy"])):
            expected = case / expected_name
            if not expected.exists() or ("-noenergy" in flags and "-noenergy" in extra):
                continue
            want = scan_e2e.results_digest(expected)
            for option, value in places:
                out = tmp / "golden.txt"
                out.unlink(missing_ok=True)
                done = subprocess.run(gamut("miranda", "query.fa", "reference.fa", *extra, *flags, "--device", "cuda",
                                            option, value, "-out", str(out)), cwd=case, env=env,
                                      capture_output=True, text=True)
                same = done.returncode == 0 and scan_e2e.results_digest(out) == want
                rows.append({"case": case.name, "flags": " ".join(flags) or "default", "where": f"{option} {value}",
                             "identical": same})
                if not same:
                    print(f"golden {case.name} {flags} {option} {value}: DIFFERENT ({done.stderr.strip()[:300]})",
                          flush=True)
    print(f"golden: {sum(r['identical'] for r in rows)}/{len(rows)} identical", flush=True)
    return rows


def linearity_lines(lin: dict) -> list[str]:
    """The markdown of :func:`linearity` (or of this script's older single ratio)."""
    if "fit" not in lin:
        return ["", f"Linearity (one GPU, fast): {lin['copies'][0]} copy {lin['after_startup_s'][0]:.2f} s after start-up, "
                    f"{lin['copies'][1]} copies {lin['after_startup_s'][1]:.2f} s: {lin['ratio_to_linear']:.3f}x the linear "
                    "extrapolation"]
    top = lin["copies"][-1]
    fit = lin["fit"]
    lines = ["", "Linearity (one GPU, fast mode; whole times, median of each size's runs):", "",
             "| copies | whole s | line s | residual s | ratio, default start-up | ratio, fast start-up |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c, wall in zip(lin["copies"], lin["walls_s"]):
        ratios = [lin["ratio_to_linear"][k].get(str(c)) for k in ("default_startup", "fast_startup")]
        shown = [f"{r:.2f}x" if r is not None else ("-" if c == top else "n/a") for r in ratios]
        lines.append(f"| {c} | {wall:.2f} | {fit['intercept_s'] + fit['slope_s_per_copy'] * c:.2f} | "
                     f"{fit['residuals_s'][str(c)]:+.2f} | {shown[0]} | {shown[1]} |")
    lines += ["", f"Line: {fit['intercept_s']:.2f} s + {fit['slope_s_per_copy']:.3f} s per copy. Ratio: {top} copies' time "
                  f"after start-up over {top}/c times c copies' (the issue asks at most 1.1x), with the one-pair start-up "
                  f"of default mode ({lin['startup_s']:.2f} s, the issue's) and of fast mode ({lin['startup_fast_s']:.2f} s)."]
    return lines


def write(report: dict, args, quiet: bool = False) -> None:
    stem = args.out / f"scan_scaling_{args.kind}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    gib = 2 ** 30
    lines = [f"# Several GPUs on the transcriptome set ({args.kind})", "",
             f"- date: {report['date']}", f"- command: `{report['command']}`",
             f"- GPUs present: {report['gpus_present']}; host: {report['host']}",
             f"- start-up: a one-pair `--device cuda` process, median of {len(report.get('startups_s', []))}: {report.get('startup_s', float('nan')):.2f} s "
             f"{report.get('startups_s')}",
             "- fast: `--noenergy --score-threshold 160 -o hits.tsv`; default: energies, `-o hits.tsv`; wall: median "
             f"of {args.repeat}; after start-up: wall - start-up; speed-up: one GPU's after start-up / this one's",
             "- RSS: the main process' own peak (VmHWM, sampled), and the largest of the process tree (ru_maxrss)",
             "- runs: each run's wall, in the order run (on the Dask cluster, the first is its first scan since it started)",
             "",
             "| mode | GPUs | where | wall s | runs s | after start-up s | speed-up | output | identical to 1 GPU | main peak RSS | tree peak RSS |",
             "| --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: |"]
    for r in report["rows"]:
        speed = f"{r['speedup']:.2f}x" if r["speedup"] else "-"
        runs = ", ".join(f"{w:.2f}" for w in r.get("runs_s", r["walls_s"]))
        lines.append(f"| {r['mode']} | {r['gpus']} | {'Dask cluster' if r['dask'] else 'here'} | {r['wall_s']:.2f} | {runs} | "
                     f"{r['after_startup_s']:.2f} | {speed} | {r['output_bytes'] / 1e9:.2f} GB | {r['same_output']} | "
                     f"{r['main_peak_rss'] / gib:.2f} GiB | {r['tree_peak_rss'] / gib:.2f} GiB |")
    lines += ["", "Checksums:", ""] + [f"- {r['mode']} {r['gpus']}{' (Dask)' if r['dask'] else ''}: `{r['checksum']}`"
                                        for r in report["rows"]]
    if report.get("linearity"):
        lines += linearity_lines(report["linearity"])
    if report.get("golden"):
        ok = sum(r["identical"] for r in report["golden"])
        lines += ["", f"Golden miRanda cases on every GPU set{' and the first Dask cluster' if report.get('dask') else ''}: "
                      f"{ok}/{len(report['golden'])} identical to miRanda 3.3a's output"]
        lines += [f"- {r['case']} {r['flags']} {r['where']}: {'identical' if r['identical'] else 'DIFFERENT'}"
                  for r in report["golden"] if not r["identical"]]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    if not quiet:
        print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
