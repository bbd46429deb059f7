"""Whole-process scan benchmark: ``gamut miranda`` as a user runs it, next to the engine alone.

Workloads (inputs written to a temporary folder; real data from ``--data``, i.e. ``../shared/data``):

- ``clip``: human miRNAs x real 50-nt AGO-CLIP fragments (``clip/ago_clip_fragments.fa.gz``),
  ``-quiet`` (many short references, as in a CLIP-site scan);
- ``sars``: human miRNAs x the ten SARS-CoV-2 genomes (``rna/sars-cov-2_batch.fasta``), long references;
- ``t2``: 256 miRNAs x 256 UTR-like references of 20 kb (GAMUT's Table 2 shape);
- ``transcriptome``: the 1,921 human miRNAs x ten copies of the ``utr`` references, each copy's names
  distinct (61,500 references, 124 Mb; ``--transcriptome-copies`` changes the count);
- ``utr``: the 1,921 human miRNAs x 6,150 references whose lengths follow human 3'UTRs (median
  1,384, mean 2,015, max 32,870 nt, 12.4 Mb in all): lengths drawn (seed 24) from a log-normal
  with that median and mean, clipped at 32,870 (the longest set to it), the lengths above the
  median scaled so that the total is 12.4 Mb; letters are windows of the 1 Mb of C. elegans chromosome I
  (``splice/celegans/chrI_2000001-3000000.fa.gz``, upper-cased) at seeded offsets, each on a
  seeded strand (reverse complement on the minus strand). ``--utr-refs N`` takes the first N
  (for quick checks); the achieved length statistics are in the report.

Each is run as a separate process, ``python -m gamut miranda q.fa r.fa [-quiet] [-noenergy]
--device D --threads T -out FILE``, in default mode (with energies) and with ``-noenergy``. The
report gives wall time, pairs/s, cells/s and peak RSS of that process, and the ratio of its wall
time to the engine-only time measured in this run; ``--compare-cpu`` also times each case as a
``--device cpu`` process with every core (no ``--threads``) in the same run (``engine.align`` over the same chunks the
runner makes, in this process, after a warm-up). ``--big`` adds the 1,921 x 100,000 CLIP run
(192 M pairs, ``-noenergy -quiet``) for peak memory.

Writes ``scan_e2e_<kind>.json`` (raw) and ``.md`` (table, machine, date, command) to ``--out``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
UTR_COMPOSITION = np.array([0.28, 0.21, 0.22, 0.29])


def read_fasta(path: Path) -> list[tuple[str, str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    records, name, seq = [], None, []
    with opener(path, "rt") as handle:
        for line in handle:
            line = line.rstrip()
            if line.startswith(">"):
                if name is not None:
                    records.append((name, "".join(seq)))
                name, seq = line[1:].split()[0], []
            elif line:
                seq.append(line)
    if name is not None:
        records.append((name, "".join(seq)))
    return records


def write_fasta(path: Path, records: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f">{n}\n{s}\n" for n, s in records))
    return path


def workloads(args, tmp: Path) -> dict[str, tuple[Path, Path, list[str]]]:
    mirs = [r for r in read_fasta(args.data / "mirbase" / "mature.fa.gz") if r[0].startswith("hsa-")]
    q_all = write_fasta(tmp / "hsa.fa", mirs[: args.mirnas])
    out: dict[str, tuple[Path, Path, list[str]]] = {}
    if "clip" in args.cases or args.big:
        clip = read_fasta(args.data / "clip" / "ago_clip_fragments.fa.gz")
        out["clip"] = (q_all, write_fasta(tmp / "clip.fa", clip[: args.clip]), ["-quiet"])
        if args.big:
            out["big"] = (write_fasta(tmp / "hsa_all.fa", mirs), write_fasta(tmp / "clip_all.fa", clip),
                          ["-quiet", "-noenergy"])
    if "sars" in args.cases:
        out["sars"] = (q_all, args.data / "rna" / "sars-cov-2_batch.fasta", [])
    if "t2" in args.cases:
        rng = np.random.default_rng(2)
        refs = [(f"utr{k}", "".join(np.array(list("ACGU"))[rng.choice(4, args.t2_length, p=UTR_COMPOSITION)]))
                for k in range(256)]
        out["t2"] = (write_fasta(tmp / "mir256.fa", mirs[:256]), write_fasta(tmp / "utr20k.fa", refs), [])
    if "transcriptome" in args.cases:
        refs = transcriptome_references(args.data, args.transcriptome_copies)
        out["transcriptome"] = (q_all, write_fasta(tmp / "transcriptome.fa", refs), ["-quiet"])
    if "utr" in args.cases:
        refs = utr_references(args.data, args.utr_refs)
        args.utr_stats = length_stats(refs)
        print(f"utr references: {args.utr_stats}", flush=True)
        out["utr"] = (q_all, write_fasta(tmp / "utr.fa", refs), ["-quiet"])
    return {k: v for k, v in out.items() if k in args.cases or k == "big"}


UTR_MEDIAN, UTR_MEAN, UTR_MAX, UTR_TOTAL, UTR_COUNT = 1384, 2015, 32_870, 12_400_000, 6150
CELEGANS = Path("splice") / "celegans" / "chrI_2000001-3000000.fa.gz"


def utr_lengths(n: int = UTR_COUNT, seed: int = 24) -> np.ndarray:
    """``UTR_COUNT`` lengths like human 3'UTRs (log-normal fitted to the median and mean, clipped
    at the maximum, scaled to the total); the first ``n`` of them."""
    rng = np.random.default_rng(seed)
    mu, sigma = np.log(UTR_MEDIAN), np.sqrt(2 * np.log(UTR_MEAN / UTR_MEDIAN))
    raw = rng.lognormal(mu, sigma, UTR_COUNT)
    lengths = np.clip(raw * UTR_MEDIAN / np.median(raw), 20, UTR_MAX)
    middle = np.sort(lengths)[UTR_COUNT // 2]
    upper = lengths > middle
    for _ in range(50):  # scale the lengths above the median (so it stays) to make the total UTR_TOTAL
        rest = UTR_TOTAL - lengths[~upper].sum()
        lengths[upper] = np.clip(lengths[upper] * rest / lengths[upper].sum(), middle, UTR_MAX)
    lengths = np.rint(lengths).astype(np.int64)
    lengths[np.argmax(raw)] = UTR_MAX
    return lengths[:n]


def utr_references(data: Path, n: int, seed: int = 24) -> list[tuple[str, str]]:
    """Windows of the C. elegans region with :func:`utr_lengths`, at seeded offsets and strands."""
    genome = read_fasta(data / CELEGANS)[0][1].upper()
    flip = str.maketrans("ACGTN", "TGCAN")
    rng = np.random.default_rng(seed + 1)
    out = []
    for k, length in enumerate(utr_lengths(n, seed)):
        start = int(rng.integers(0, len(genome) - length + 1))
        window = genome[start:start + length]
        minus = bool(rng.integers(0, 2))
        if minus:
            window = window.translate(flip)[::-1]
        out.append((f"utr{k}_{start}{'-' if minus else '+'}", window))
    return out


#: Copies of the utr references in the ``transcriptome`` case (issue 45: 61,500 references, 124 Mb).
TRANSCRIPTOME_COPIES = 10


def transcriptome_references(data: Path, copies: int = TRANSCRIPTOME_COPIES) -> list[tuple[str, str]]:
    """The ``transcriptome`` case: ``copies`` copies of the utr references, one after the other, each
    reference named after its utr original and its copy (``utr17_..._c3``), so that every name is distinct."""
    utr = utr_references(data, UTR_COUNT)
    return [(f"{name}_c{c}", seq) for c in range(copies) for name, seq in utr]


def length_stats(records: list[tuple[str, str]]) -> dict:
    lengths = np.array([len(s) for _, s in records])
    return {"n": int(lengths.size), "median": float(np.median(lengths)), "mean": float(lengths.mean()),
            "max": int(lengths.max()), "total": int(lengths.sum())}


def complementary_site(query: str) -> str:
    """A 60-ish nt reference holding the reverse complement of ``query`` between fixed flanks."""
    pair = str.maketrans("ACGUTacgut", "UGCAAugcaa")
    return "ACGUACGUAAGCU" + query.translate(pair)[::-1] + "ACGAUCGAUCGAUUAGC"


def results_digest(path: Path) -> str:
    """SHA-256 of the results after miRanda's settings block (which names the input files)."""
    data = path.read_bytes()
    mark = data.find(b"Scaling Parameter:")
    start = data.find(b"\n", data.find(b"\n", mark) + 1) + 1 if mark >= 0 else 0
    return hashlib.sha256(data[start:]).hexdigest()


def run_cli(query: Path, ref: Path, extra: list[str], args, out_file: Path,
            device: str | None = None, served: Path | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one ``gamut miranda`` process (``device="cpu"``: the
    CPU comparison, every core; ``served``: the command run by the ``gamut serve`` process on that
    socket, the peak RSS then being the client's)."""
    cpu_compare = device == "cpu" and args.device != "cpu"
    cmd = [sys.executable, "-m", "gamut", "miranda", str(query), str(ref), *extra, "--device",
           device or args.device, "-out", str(out_file)]
    if args.threads and not cpu_compare:
        cmd += ["--threads", str(args.threads)]
    if args.gpus and not cpu_compare:
        cmd += ["--gpus", args.gpus]
    if args.cluster and not cpu_compare:
        cmd += ["--cluster", args.cluster]
    out_file.unlink(missing_ok=True)  # a first write (renaming over an old file makes ext4 flush it)
    env = dict(os.environ, GAMUT_SERVER=str(served) if served else "off")
    got = measure(cmd, env)
    return got["wall_s"], got["peak_rss"]


#: Runs argv[1:] and prints, as one JSON line: its wall seconds, its own peak RSS (VmHWM, sampled
#: while it runs: its worker processes not counted), the peak RSS of the process tree (ru_maxrss:
#: the largest of it and its waited-for children), page faults (minor, major), CPU seconds (user,
#: system); exits with its status. A launcher process, because a child's ru_maxrss counts the
#: memory of the process it was forked from (Linux keeps the high-water mark across exec), and
#: the benchmark holds every workload; the launcher's is a few MB. (Its sampler once reaped the
#: process with ``Popen.poll`` before ``os.wait4``, which failed with "No child processes": a
#: finished scan reported as failed, 2026-11-29.)
LAUNCHER = """import json, os, subprocess, sys, threading, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:])
own = [0]
ended = threading.Event()
def sample():  # (never proc.poll(): it may reap the process before os.wait4 below, which then fails)
    while not ended.is_set():
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        own[0] = max(own[0], int(line.split()[1]))
        except OSError:
            return
        time.sleep(0.02)
threading.Thread(target=sample, daemon=True).start()
_, status, u = os.wait4(proc.pid, 0)
ended.set()
print(json.dumps([time.perf_counter() - start, own[0], u.ru_maxrss, u.ru_minflt, u.ru_majflt, u.ru_utime,
                  u.ru_stime]))
sys.exit(os.waitstatus_to_exitcode(status))
"""
MEASURES = ("wall_s", "main_peak_rss", "peak_rss", "minor_faults", "major_faults", "user_s", "system_s")


def measure(cmd: list[str], env: dict | None = None) -> dict:
    """One process of ``cmd`` through :data:`LAUNCHER`: :data:`MEASURES` (RSS in bytes; ``peak_rss``
    the tree's). A failing process ends the benchmark."""
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *cmd], stdout=subprocess.PIPE, text=True,
                          env=env if env is not None else dict(os.environ, GAMUT_SERVER="off"))
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with status {done.returncode}")
    got = dict(zip(MEASURES, json.loads(done.stdout.strip().splitlines()[-1])))
    got["main_peak_rss"] *= 1024
    got["peak_rss"] *= 1024
    return got


def timed(runs: list[tuple[float, int]]) -> tuple[float, list[float], int]:
    """Of ``run_cli`` results: the median wall time, every wall time (sorted) and the peak RSS."""
    walls = sorted(w for w, _ in runs)
    return walls[len(walls) // 2], walls, max(r for _, r in runs)


class Server:
    """A ``gamut serve`` process on a socket of its own (``tmp / name``) for served runs
    (``--served``); ``env``: variables it and its clients set (such as ``CUDA_VISIBLE_DEVICES``)."""

    def __init__(self, tmp: Path, device: str, name: str = "serve.sock", **env: str) -> None:
        self.socket = tmp / name
        self.env = dict(os.environ, GAMUT_SERVER=str(self.socket), **env)
        begin = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gamut", "serve", "--detach", "--device", device, "--idle-timeout", "0"],
                       check=True, env=self.env)
        self.ready_s = time.perf_counter() - begin
        self.pid = int(self.socket.with_suffix(".log").read_text().split("(pid ")[1].split(",")[0])

    def peak_rss(self) -> int:
        """The server's peak RSS (bytes) so far."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0]) * 1024

    def commands(self) -> int:
        """Commands the server has run so far (one line of its log each)."""
        return sum(": status " in line for line in self.socket.with_suffix(".log").read_text().splitlines())

    def stop(self) -> None:
        subprocess.run([sys.executable, "-m", "gamut", "serve", "--stop"], env=self.env, check=False)


def engine_only(query: Path, ref: Path, args) -> dict:
    """The engine alone, measured in a child process (so that this process stays small and the
    CLI children's peak RSS is their own)."""
    cmd = [sys.executable, __file__, "--engine-only", str(query), str(ref), "--device", args.device,
           "--threads", str(args.threads), *(["--gpus", args.gpus] if args.gpus else [])]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def warm_engine(engine, scan_input, chunks: list) -> None:
    """Run ``engine`` once over what a timed pass meets: every query length (every row bucket's
    kernels compiled or loaded, on listed pairs) and the first chunk (the path of chunks of
    consecutive pairs). The engine's stats are cleared after."""
    qs, rs = scan_input.query_set, scan_input.reference_set
    one_per_length = np.unique(qs.lengths(), return_index=True)[1]
    warm = np.array([(q, r) for q in one_per_length for r in range(min(20, len(rs)))], np.int64)
    engine.align(qs, rs, warm, scan_input.params)
    engine.align(qs, rs, chunks[0], scan_input.params)
    getattr(engine, "stats", {}).clear()


def _engine_only(query: Path, ref: Path, args) -> dict:
    """The engine alone over the runner's chunks (after a warm-up), in this process."""
    from gamut.scanning.engines import make_engine
    from gamut.scanning.fasta import read_miranda_fasta
    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.scan_loop import ScanInput

    scan_input = ScanInput(read_miranda_fasta(query), read_miranda_fasta(ref), ScanParams(noenergy=True))
    engine = make_engine(args.device, args.threads or None, args.gpus or None)
    cells, pairs_per = engine.preferred_chunk_cells, engine.preferred_chunk_pairs
    qs, rs = scan_input.query_set, scan_input.reference_set
    chunks = list(scan_input.chunks(cells, pairs_per))
    warm_engine(engine, scan_input, chunks)
    start = time.perf_counter()
    for pairs in chunks:
        engine.align(qs, rs, pairs, scan_input.params)
    seconds = time.perf_counter() - start
    return {"engine_s": seconds, "pairs": scan_input.n_pairs, "cells": scan_input.total_cells(),
            "chunks": len(chunks)}


def machine(args) -> dict:
    info = {"kind": args.kind, "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "processor": platform.processor() or platform.machine()}
    if args.device != "cpu":
        try:
            import cupy

            props = cupy.cuda.runtime.getDeviceProperties(0)
            info["gpu"] = props["name"].decode()
        except Exception as exc:  # noqa: BLE001 (reported, not fatal)
            info["gpu"] = f"unavailable ({exc})"
    return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"))
    ap.add_argument("--threads", type=int, default=0, help="--threads for the CLI (0: all cores)")
    ap.add_argument("--gpus", default="", help="--gpus for the CLI, e.g. 0,1 (default: the first GPU)")
    ap.add_argument("--cluster", default="", help="--cluster for the CLI, e.g. local:2 (one worker process per GPU)")
    ap.add_argument("--cases", default="clip,sars,t2,utr", help="comma-separated: clip, sars, t2, utr, transcriptome")
    ap.add_argument("--utr-refs", type=int, default=UTR_COUNT, help="references of the utr case (default 6,150)")
    ap.add_argument("--transcriptome-copies", type=int, default=TRANSCRIPTOME_COPIES,
                    help="copies of the utr references in the transcriptome case (default 10: 61,500 references, 124 Mb)")
    ap.add_argument("--compare-cpu", action="store_true",
                    help="also time each case as a --device cpu process with every core, in the same run")
    ap.add_argument("--served", action="store_true",
                    help="also time each case run by a `gamut serve` process (started once, warmed up) from a client process")
    ap.add_argument("--modes", default="default,noenergy", help="default (energies) and/or noenergy")
    ap.add_argument("--mirnas", type=int, default=1921, help="human miRNAs to use (clip, sars)")
    ap.add_argument("--clip", type=int, default=2000, help="CLIP fragments to use")
    ap.add_argument("--t2-length", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=1,
                    help="processes per case and mode; the median wall time is reported (default 1)")
    ap.add_argument("--big", action="store_true", help="also 1,921 x 100,000 CLIP fragments, -noenergy (peak RSS)")
    ap.add_argument("--data", type=Path, default=SHARED)
    ap.add_argument("--kind", default=platform.node())
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--engine-only", nargs=2, type=Path, metavar=("QUERIES", "REFERENCES"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.engine_only:
        print(json.dumps(_engine_only(*args.engine_only, args)))
        return 0
    args.cases = [c for c in args.cases.split(",") if c]
    modes = [m for m in args.modes.split(",") if m]
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        cases = workloads(args, tmp)
        # Untimed processes first, as any run after the first finds them: compiled Numba
        # functions and CUDA kernels in their on-disk caches. A small slice of every case, since
        # the kernels built depend on the sequence lengths (a fresh GPU machine compiles those for
        # 30 kb genomes, or for a query length, in the first run that meets one).
        for query, ref, extra in cases.values():
            one_per_length = {len(seq): (rec, seq) for rec, seq in reversed(read_fasta(query))}  # every row bucket
            small_q = write_fasta(tmp / "warm_q.fa", list(one_per_length.values()))
            small_r = write_fasta(tmp / "warm_r.fa", read_fasta(ref)[:20])
            for flags in ([*extra], ["-noenergy", "-keyval"]):
                run_cli(small_q, small_r, flags, args, tmp / "warm.txt")
                if args.compare_cpu:
                    run_cli(small_q, small_r, flags, args, tmp / "warm.txt", device="cpu")
        first_q, first_r, _ = next(iter(cases.values()))
        # Start-up: the fixed cost of a process, median of three one-pair processes; the same for
        # every case of this run. The pair is the first query against a site complementary to it,
        # so that the process finds a hit and so loads every stage's compiled code (hits, energies,
        # writer) as any scan with hits does. A one-pair process without a hit (the first query
        # against the first reference) is reported beside it.
        one_q = write_fasta(tmp / "one_q.fa", read_fasta(first_q)[:1])
        one_r = write_fasta(tmp / "one_r.fa", read_fasta(first_r)[:1])
        hit_r = write_fasta(tmp / "hit_r.fa", [("site", complementary_site(read_fasta(first_q)[0][1]))])
        startup_nohit = timed([run_cli(one_q, one_r, [], args, tmp / "one.txt") for _ in range(3)])[0]
        startup = timed([run_cli(one_q, hit_r, [], args, tmp / "one.txt") for _ in range(3)])[0]
        cpu_startup = (timed([run_cli(one_q, hit_r, [], args, tmp / "one.txt", device="cpu") for _ in range(3)])[0]
                       if args.compare_cpu else None)
        server = Server(tmp, args.device) if args.served else None
        served_startup = (timed([run_cli(one_q, hit_r, [], args, tmp / "one.txt", served=server.socket)
                                 for _ in range(3)])[0] if server else None)
        for case, (query, ref, extra) in cases.items():
            engine = engine_only(query, ref, args) if case != "big" else None
            for mode in (["noenergy"] if case == "big" else modes):
                flags = [*extra, *(["-noenergy"] if mode == "noenergy" and "-noenergy" not in extra else [])]
                wall, walls, rss = timed([run_cli(query, ref, flags, args, tmp / f"{case}_{mode}.txt")
                                          for _ in range(1 if case == "big" else max(1, args.repeat))])
                size = (tmp / f"{case}_{mode}.txt").stat().st_size
                digest = results_digest(tmp / f"{case}_{mode}.txt")
                if engine is None:
                    from gamut.scanning.fasta import read_miranda_fasta

                    nq, nr = len(read_miranda_fasta(query)), len(read_miranda_fasta(ref))
                    info = {"pairs": nq * nr, "cells": None, "engine_s": None}
                else:
                    info = engine
                row = {"case": case, "mode": mode, "flags": " ".join(flags), "wall_s": wall, "walls_s": walls,
                       "peak_rss_bytes": rss,
                       "output_bytes": size, "output_sha256": digest, **info, "pairs_per_s": info["pairs"] / wall,
                       "cells_per_s": info["cells"] / wall if info["cells"] else None,
                       "wall_over_engine": wall / info["engine_s"] if info["engine_s"] else None,
                       "startup_s": startup, "startup_nohit_s": startup_nohit,
                       "after_startup_over_engine": (wall - startup) / info["engine_s"] if info["engine_s"] else None}
                if args.compare_cpu and case != "big":
                    cpu_out = tmp / f"{case}_{mode}_cpu.txt"
                    cpu_wall, cpu_walls, cpu_rss = timed([run_cli(query, ref, flags, args, cpu_out, device="cpu")
                                                          for _ in range(max(1, args.repeat))])
                    row.update(cpu_wall_s=cpu_wall, cpu_walls_s=cpu_walls, cpu_peak_rss_bytes=cpu_rss,
                               cpu_startup_s=cpu_startup, cpu_output_same=results_digest(cpu_out) == digest)
                if server and case != "big":
                    served_out = tmp / f"{case}_{mode}_served.txt"
                    served_wall, served_walls, _ = timed([run_cli(query, ref, flags, args, served_out, served=server.socket)
                                                          for _ in range(max(1, args.repeat))])
                    row.update(served_wall_s=served_wall, served_walls_s=served_walls,
                               served_startup_s=served_startup, server_ready_s=server.ready_s,
                               server_peak_rss_bytes=server.peak_rss(),
                               served_output_same=results_digest(served_out) == digest)
                if case == "utr":
                    row["utr_lengths"] = args.utr_stats
                rows.append(row)
                print(json.dumps(row), flush=True)
        if server:
            server.stop()
    write(rows, args)
    return 0


def write(rows: list[dict], args) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = ("_gpus" + args.gpus.replace(",", "-") if args.gpus else "") + \
        ("_cluster-" + args.cluster.replace(":", "") if args.cluster else "")
    stem = args.out / f"scan_e2e_{args.kind}{suffix}"
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = "python " + " ".join(sys.argv)
    info = machine(args)
    stem.with_suffix(".json").write_text(json.dumps({"machine": info, "date": date, "command": command,
                                                     "device": args.device, "rows": rows}, indent=1))
    lines = [f"# Whole-process scan ({args.kind}, --device {args.device}{', --gpus ' + args.gpus if args.gpus else ''}"
             f"{', --cluster ' + args.cluster if args.cluster else ''})", "",
             f"- machine: {info}", f"- date: {date}", f"- command: `{command}`",
             "- wall: the whole `gamut miranda` process (start-up, reading, alignment, hits, energies, writing), "
             f"median of {max(1, args.repeat)} (the JSON has them all), after untimed warm-up processes on a slice "
             "of each case (Numba's and CuPy's on-disk caches filled, as for any run after the first); engine: `engine.align` alone over the same chunks in a child process, after a warm-up; "
             "start-up: a one-pair `gamut miranda` process with one hit (the first query against a site "
             "complementary to it: every stage's compiled code loaded) in the same run (median of 3), "
             f"{rows[0]['startup_s'] if rows else float('nan'):.2f} s (the same pair without a hit: "
             f"{rows[0].get('startup_nohit_s', float('nan')) if rows else float('nan'):.2f} s); "
             "each timed process writes a new output file (none of that name before it)", "",
             "| case | mode | pairs | wall s | engine s | wall/engine | (wall - start-up)/engine | pairs/s | cells/s "
             "| peak RSS | CPU process s (all cores) | CPU peak RSS |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    if rows and rows[0].get("cpu_startup_s") is not None:
        lines[5] += (f"; CPU comparison (`--device cpu`, every core, same inputs): start-up "
                     f"{rows[0]['cpu_startup_s']:.2f} s, outputs identical to the {args.device} ones: "
                     f"{all(r.get('cpu_output_same', True) for r in rows)}")
    if rows and rows[0].get("served_startup_s") is not None:
        lines[5] += (f"; served: the same command from a client process, run by a `gamut serve --device {args.device}` "
                     f"process started once in this run (ready after {rows[0]['server_ready_s']:.2f} s, its warm-up "
                     f"included), one-pair start-up {rows[0]['served_startup_s']:.2f} s, outputs identical: "
                     f"{all(r.get('served_output_same', True) for r in rows)}, server peak RSS "
                     f"{max(r['server_peak_rss_bytes'] for r in rows if 'server_peak_rss_bytes' in r) / 2**30:.2f} GiB")
        lines[7] += " served wall s |"
        lines[8] += " ---: |"
    utr = next((r["utr_lengths"] for r in rows if r.get("utr_lengths")), None)
    if utr:
        lines[5] += (f"; utr references: {utr['n']:,}, median {utr['median']:,.0f}, mean {utr['mean']:,.0f}, "
                     f"max {utr['max']:,}, total {utr['total'] / 1e6:.2f} Mb")
    for r in rows:
        eng = f"{r['engine_s']:.2f}" if r["engine_s"] else "-"
        ratio = f"{r['wall_over_engine']:.2f}" if r["wall_over_engine"] else "-"
        net = f"{r['after_startup_over_engine']:.2f}" if r.get("after_startup_over_engine") else "-"
        cps = f"{r['cells_per_s'] / 1e9:.2f} G" if r["cells_per_s"] else "-"
        lines.append(f"| {r['case']} | {r['mode']} | {r['pairs']:,} | {r['wall_s']:.2f} | {eng} | {ratio} | {net} | "
                     f"{r['pairs_per_s'] / 1e6:.2f} M | {cps} | {r['peak_rss_bytes'] / 2**30:.2f} GiB | "
                     + (f"{r['cpu_wall_s']:.2f} | {r['cpu_peak_rss_bytes'] / 2**30:.2f} GiB |" if "cpu_wall_s" in r
                        else "- | - |")
                     + (f" {r['served_wall_s']:.2f} |" if "served_wall_s" in r else ""))
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
