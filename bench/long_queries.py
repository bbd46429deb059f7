"""Long queries and prompt signals: whole ``gamut scan`` processes as a user runs them.

Rows:

- ``query N``: one random query of N = 200, 1,000 and 10,000 nt against ``examples/targets.fa``
  (9 references, 25.6 kb), with energies (default) and with ``--noenergy``: wall time, peak RSS of
  the process, exit code (a run whose duplex folds would not fit in memory ends with a one-line
  error, reported as such).
- ``SIGTERM``: a scan of a 10 kb query against 20 x 20 kb, and of ``examples/mirnas.fa`` against one
  50 Mb reference, signalled 1 s into its alignment (its temporary output exists): the time from
  the signal to the process's exit, measured with ``os.wait4``.

Writes ``long_queries_<kind>.json`` (raw) and ``.md`` (table, machine, date, command) to ``--out``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def write_fasta(path: Path, records: dict[str, np.ndarray]) -> Path:
    with open(path, "wb") as handle:
        for name, letters in records.items():
            handle.write(b">" + name.encode() + b"\n" + letters.tobytes() + b"\n")
    return path


def letters(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.frombuffer(b"ACGU", np.uint8)[rng.integers(0, 4, n)]


def command(queries: Path, references: Path, out: Path, device: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "gamut", "scan", str(queries), str(references), "-o", str(out),
            "--device", device, "--no-progress", *extra]


def run_process(argv: list[str], timeout: float) -> dict:
    """Run to the end (or ``timeout``): wall seconds, peak RSS of that process (MiB, from
    ``os.wait4``), exit code and the last stderr line."""
    with tempfile.TemporaryFile("w+") as err:
        began = time.perf_counter()
        proc = subprocess.Popen(argv, stderr=err, stdout=subprocess.DEVNULL, text=True)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - began > timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                return {"wall_s": None, "rss_mib": None, "code": "timeout", "stderr": f"over {timeout:.0f} s"}
            time.sleep(0.01)
        wall = time.perf_counter() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().strip()
    return {"wall_s": round(wall, 3), "rss_mib": round(usage.ru_maxrss / 1024, 1), "code": proc.returncode,
            "stderr": text.splitlines()[-1] if text else ""}


def signal_latency(argv: list[str], temp_glob: tuple[Path, str], sig: int) -> dict:
    """Start ``argv``, wait until its temporary output exists plus 1 s, send ``sig``; seconds to exit."""
    folder, pattern = temp_glob
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    while not list(folder.glob(pattern)) and proc.poll() is None:
        time.sleep(0.005)
    time.sleep(1.0)
    if proc.poll() is not None:
        return {"latency_s": None, "code": proc.returncode, "note": "ended before the signal"}
    sent = time.perf_counter()
    os.kill(proc.pid, sig)
    _, status, usage = os.wait4(proc.pid, 0)
    latency = time.perf_counter() - sent
    left = sorted(p.name for p in folder.glob(pattern))
    return {"latency_s": round(latency, 4), "code": os.waitstatus_to_exitcode(status),
            "rss_mib": round(usage.ru_maxrss / 1024, 1), "temporary_left": left,
            "stderr": proc.stderr.read().strip()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--lengths", default="200,1000,10000")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per process")
    ap.add_argument("--kind", default="python-2core", help="label of this machine in the file names")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args()

    rng = np.random.default_rng(2026)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        warm = write_fasta(tmp / "warm.fa", {"w": letters(rng, 22)})
        subprocess.run(command(warm, EXAMPLES / "targets.fa", tmp / "warm.tsv", args.device), check=True)
        for n in sorted(int(x) for x in args.lengths.split(",")):
            q = write_fasta(tmp / f"q{n}.fa", {f"q{n}": letters(rng, n)})
            for mode, extra in (("noenergy", ("--noenergy",)), ("default", ())):
                out = tmp / f"out_{n}_{mode}.tsv"
                result = run_process(command(q, EXAMPLES / "targets.fa", out, args.device, *extra), args.timeout)
                result.update(query_nt=n, mode=mode, hits=sum(1 for _ in open(out)) - 1 if out.exists() else None)
                rows.append(result)
                print(json.dumps(result), flush=True)

        signals = []
        long_q = write_fasta(tmp / "long.fa", {"long": letters(rng, 10_000)})
        refs = write_fasta(tmp / "refs.fa", {f"u{k}": letters(rng, 20_000) for k in range(20)})
        big = write_fasta(tmp / "big.fa", {"chr": letters(rng, 50_000_000)})
        for name, q, r, extra in (("10 kb query x 20 x 20 kb, --noenergy", long_q, refs, ("--noenergy",)),
                                  ("9 miRNAs x one 50 Mb reference", EXAMPLES / "mirnas.fa", big, ())):
            for sig in (signal.SIGTERM, signal.SIGINT):
                out = tmp / "sig.tsv"
                result = signal_latency(command(q, r, out, args.device, *extra), (tmp, ".sig.tsv.*.tmp"), sig)
                result.update(workload=name, signal=signal.Signals(sig).name)
                signals.append(result)
                print(json.dumps(result), flush=True)

    now = dt.datetime.now(dt.timezone.utc)
    meta = {"date": now.isoformat(timespec="seconds"), "machine": platform.node(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "command": " ".join(["python", *sys.argv])}
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"long_queries_{args.kind}"
    stem.with_suffix(".json").write_text(json.dumps({"meta": meta, "queries": rows, "signals": signals}, indent=1))
    lines = [f"# Long queries and signals ({args.kind})", "",
             f"{meta['date']}, {meta['cpus']} CPUs, Python {meta['python']}; `{meta['command']}`", "",
             "| query | mode | wall | peak RSS | hits | exit |", "| ---: | --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        wall = f"{r['wall_s']:.2f} s" if r["wall_s"] is not None else r["stderr"]
        rss = f"{r['rss_mib']:.0f} MiB" if r["rss_mib"] is not None else ""
        code = r["code"] if r["code"] == 0 else f"{r['code']}: {r['stderr']}"
        lines.append(f"| {r['query_nt']:,} nt | {r['mode']} | {wall} | {rss} | {r['hits']} | {code} |")
    lines += ["", "| workload | signal | signal to exit | exit | temporary files left |", "| --- | --- | ---: | ---: | --- |"]
    for s in signals:
        latency = f"{s['latency_s'] * 1000:.0f} ms" if s["latency_s"] is not None else s["note"]
        lines.append(f"| {s['workload']} | {s['signal']} | {latency} | {s['code']} | {len(s.get('temporary_left', []))} |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(stem.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
