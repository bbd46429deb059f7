"""Start-up of a one-pair ``gamut miranda`` process, CPU and CUDA (issue #24, "GPU start-up").

Run from (or with ``--repo``) the tree to measure, so that the old and the new tree are measured
alike::

    python bench/startup.py --repo . --data ../shared/data --out $OUT/startup_new

It writes (and prints):

- wall times of one-pair processes (``python -m gamut miranda q.fa r.fa [-noenergy] --device D``,
  the first human miRNA against a site complementary to it, so that every stage runs): median
  and all of ``--runs`` (5) after ``--warm`` (2) untimed ones, for each device of ``--devices``;
- ``python -X importtime`` of the CUDA process: the 20 largest cumulative imports;
- a cProfile of the CUDA process (``--profile-device``) (``gamut.cli.main(argv)`` in-process, as ``gamut.cli.run`` ends
  with ``os._exit``): the 40 largest cumulative entries;
- ``python -X importtime`` of the CPU process likewise (for comparison);
- with ``--floors``, the floors under any process of this stack: wall times of fresh interpreters
  that only import NumPy, Numba (its SciPy and ``coverage`` probes hidden, as gamut imports it),
  CuPy, create the CUDA context (through CuPy, and through the driver alone with ``ctypes``), and
  all of them as a ``--device cuda`` process does (the context on a thread beside the imports).

Nothing here needs more than the repository and ``mirbase/mature.fa.gz`` under ``--data``.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def inputs(data: Path, folder: Path) -> tuple[Path, Path]:
    with gzip.open(data / "mirbase" / "mature.fa.gz", "rt") as handle:
        lines = iter(handle)
        for line in lines:
            if line.startswith(">hsa-"):
                name, seq = line[1:].split()[0], next(lines).strip()
                break
    site = "ACGUACGUAAGCU" + seq.translate(str.maketrans("ACGUT", "UGCAA"))[::-1] + "ACGAUCGAUCGAUUAGC"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "q.fa").write_text(f">{name}\n{seq}\n")
    (folder / "r.fa").write_text(f">site\n{site}\n")
    return folder / "q.fa", folder / "r.fa"


def argv_for(q: Path, r: Path, device: str, out: Path, extra: list[str]) -> list[str]:
    return ["miranda", str(q), str(r), *extra, "--device", device, "-out", str(out)]


def timed(cmd: list[str], env: dict, runs: int, warm: int, cwd: Path | None = None) -> dict:
    """Median and all wall times of ``runs`` processes ``cmd`` (after ``warm`` untimed ones)."""
    def once() -> float:
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, check=True)
        return time.perf_counter() - start

    for _ in range(warm):
        once()
    walls = [once() for _ in range(runs)]
    return {"median_s": statistics.median(walls), "all_s": walls}


_HIDE_PROBES = "import sys; sys.modules['scipy'] = sys.modules['coverage'] = None; "
_DRIVER_CONTEXT = ("import ctypes; c = ctypes.CDLL('libcuda.so.1'); d = ctypes.c_int(); x = ctypes.c_void_p(); "
                   "assert c.cuInit(0) == 0; assert c.cuDeviceGet(ctypes.byref(d), 0) == 0; "
                   "assert c.cuDevicePrimaryCtxRetain(ctypes.byref(x), d) == 0; assert c.cuCtxSetCurrent(x) == 0")
_CUPY_CONTEXT = "import cupy; cupy.cuda.runtime.setDevice(0); cupy.cuda.runtime.free(0)"

#: name -> the code of a fresh interpreter (``python -c``): what any process of the stack pays.
FLOORS = {
    "python, nothing imported": "pass",
    "numpy": "import numpy",
    "numpy + numba (probes hidden)": _HIDE_PROBES + "import numpy, numba",
    "cupy": "import cupy",
    "CUDA context, driver alone (ctypes)": _DRIVER_CONTEXT,
    "cupy + CUDA context": _CUPY_CONTEXT,
    "numpy + numba + cupy + context, one thread": _HIDE_PROBES + "import numpy, numba; " + _CUPY_CONTEXT,
    "numpy + numba + cupy + context, context on a thread": (
        _HIDE_PROBES + "import concurrent.futures as cf; f = cf.ThreadPoolExecutor(1).submit(exec, "
        + repr(_CUPY_CONTEXT) + "); import numpy, numba; f.result()"),
}


def floors(env: dict, runs: int, warm: int) -> dict[str, dict]:
    """Median and all wall times of ``runs`` fresh interpreters (after ``warm``) for each of
    :data:`FLOORS`."""
    out = {}
    for name, code in FLOORS.items():
        out[name] = timed([sys.executable, "-c", code], env, runs, warm)
        print(f"floor {name}: median {out[name]['median_s']:.3f} s", flush=True)
    return out


def importtime(repo: Path, argv: list[str], env: dict, top: int = 20) -> str:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "gamut", *argv], cwd=repo, env=env,
                          check=True, capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if not line.startswith("import time:") or len(parts) != 3 or not parts[0].strip().isdigit():
            continue
        rows.append((int(parts[1]), int(parts[0]), parts[2]))
    total = sum(c for c, _, name in rows if not name[1:].startswith(" "))
    rows.sort(reverse=True)
    lines = [f"top-level imports: {total / 1e6:.3f} s", "cumulative s | self s | module"]
    lines += [f"{c / 1e6:.3f} | {s / 1e6:.3f} | {name.rstrip()}" for c, s, name in rows[:top]]
    return "\n".join(lines)


def profile(repo: Path, argv: list[str], top: int = 40) -> str:
    """cProfile of ``gamut.cli.main(argv)`` in a child process (a fresh interpreter)."""
    code = ("import cProfile, pstats, io, sys\n"
            "from gamut.cli import main\n"
            "prof = cProfile.Profile()\n"
            f"prof.enable(); code = main({argv!r}); prof.disable()\n"
            "s = io.StringIO(); pstats.Stats(prof, stream=s).sort_stats('cumulative').print_stats("
            f"{top}); print(s.getvalue()); sys.exit(code)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo, check=True, capture_output=True, text=True)
    return proc.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", type=Path, default=Path.cwd(), help="the tree to measure (default: the cwd)")
    ap.add_argument("--data", type=Path, default=None, help="folder with mirbase/mature.fa.gz (default: REPO/../shared/data)")
    ap.add_argument("--devices", default="cpu,cuda")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warm", type=int, default=2)
    ap.add_argument("--noenergy", action="store_true", help="one-pair processes with -noenergy")
    ap.add_argument("--profile-device", default="cuda", help="the device of the cProfile'd process")
    ap.add_argument("--floors", action="store_true", help="also the floors of the stack (see the docstring)")
    ap.add_argument("--out", type=Path, default=Path("startup_results"))
    args = ap.parse_args()
    repo = args.repo.resolve()
    data = (args.data or repo.parent / "shared" / "data").resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    q, r = inputs(data, args.out / "inputs")
    extra = ["-noenergy"] if args.noenergy else []
    env = dict(os.environ, PYTHONPATH=str(repo / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
               GAMUT_SERVER="off")  # each process its own start-up, even beside a `gamut serve`
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]  # the profile's child as well
    report: dict = {"repo": str(repo), "python": sys.version.split()[0], "cpus": os.cpu_count(), "walls": {}}
    for device in [d for d in args.devices.split(",") if d]:
        argv = argv_for(q, r, device, args.out / f"one_{device}.txt", extra)
        got = report["walls"][device] = timed([sys.executable, "-m", "gamut", *argv], env, args.runs, args.warm, repo)
        print(f"{device}: one-pair process median {got['median_s']:.3f} s ({', '.join(f'{w:.3f}' for w in got['all_s'])})",
              flush=True)
    if args.floors:
        report["floors"] = floors(env, args.runs, args.warm)
    text = [json.dumps(report, indent=1)]
    if args.floors:
        text += ["\n## Floors: fresh interpreters (median of the runs)\n", "| what the process does | median s | all s |",
                 "| --- | ---: | --- |"]
        text += [f"| {name} | {f['median_s']:.3f} | {', '.join(f'{w:.3f}' for w in f['all_s'])} |"
                 for name, f in report["floors"].items()]
    for device in [d for d in args.devices.split(",") if d]:
        argv = argv_for(q, r, device, args.out / f"one_{device}.txt", extra)
        text += [f"\n## python -X importtime, --device {device}\n", importtime(repo, argv, env)]
    if args.profile_device:
        argv = argv_for(q, r, args.profile_device, args.out / "one_profiled.txt", extra)
        text += [f"\n## cProfile, --device {args.profile_device} (cumulative)\n", profile(repo, argv)]
    (args.out / "startup.md").write_text("\n".join(text) + "\n")
    (args.out / "startup.json").write_text(json.dumps(report, indent=1))
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
