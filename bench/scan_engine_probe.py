"""Where one GPU's time goes in the transcriptome scan (issue 45), the CUDA engine alone, in this process.

    python bench/scan_engine_probe.py --data .data --out DIR [--gpus 0,1] [--copies 10]

For the ``transcriptome`` case of ``bench/scan_e2e.py`` with ``--noenergy --score-threshold 160``:

- the engine over the runner's chunks one at a time, with its stage times (pass 1, checks, sorting,
  tracebacks: each waits for its kernels, so one chunk at a time they are the GPU's time) and the
  GPU's utilisation sampled by ``nvidia-smi`` every 100 ms;
- the same with 2 and 3 chunks at once (as the runner aligns them), and other chunk sizes;
- for each GPU of ``--gpus``, a child process doing the engine alone over its stripe of the
  references (equal letters), all at once: the engine's own scaling, without reading, sending or
  writing;
- ``--pipeline-only``: instead, what a stripe worker does (``compute_tiles``: align, hits and TSV
  rendering, or without rendering), one stripe and every stripe at once, each process pinned to its
  GPU, with its threads sampled (``bench/sample_profile.py``) and the engine's stage times.

Writes ``scan_engine_probe_<tag>.json`` and ``.md`` into ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scan_e2e  # noqa: E402


class Utilisation:
    """``nvidia-smi``'s GPU utilisation of ``gpu`` sampled every 100 ms while in the ``with`` block."""

    def __init__(self, gpu: int) -> None:
        self.gpu = gpu
        self.samples: list[int] = []

    def __enter__(self):
        if shutil.which("nvidia-smi") is None:
            self.proc = None
            return self
        self.proc = subprocess.Popen(["nvidia-smi", "-i", str(self.gpu), "--query-gpu=utilization.gpu",
                                      "--format=csv,noheader,nounits", "-lms", "100"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.strip().isdigit():
                self.samples.append(int(line.strip()))

    def __exit__(self, *exc) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        self.proc.wait()
        self.reader.join(timeout=1)

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples)) if self.samples else float("nan")


def load(query: Path, ref: Path):
    from gamut.scanning.fasta import read_miranda_fasta
    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.scan_loop import ScanInput

    return ScanInput(read_miranda_fasta(query), read_miranda_fasta(ref),
                     ScanParams(noenergy=True, score_threshold=160))


def engine_pass(engine, scan_input, chunks: list, at_once: int, gpu: int) -> dict:
    """The engine over ``chunks``, ``at_once`` at a time: wall, stage sums, hits, GPU utilisation."""
    qs, rs, params = scan_input.query_set, scan_input.reference_set, scan_input.params
    engine.stats.clear()
    hits = 0
    with Utilisation(gpu) as use:
        start = time.perf_counter()
        if at_once == 1:
            for pairs in chunks:
                hits += engine.align(qs, rs, pairs, params).survivor_count()
        else:
            with ThreadPoolExecutor(at_once) as pool:
                for got in pool.map(lambda p: engine.align(qs, rs, p, params), chunks):
                    hits += got.survivor_count()
        wall = time.perf_counter() - start
    stats = {k: round(v, 3) if isinstance(v, float) else v for k, v in engine.stats.items()}
    return {"at_once": at_once, "chunks": len(chunks), "wall_s": round(wall, 3), "hits": hits,
            "gpu_util_mean": round(use.mean, 1), "stats": stats}


def in_process(query: Path, ref: Path, gpu: int, sizes: list[float]) -> list[dict]:
    from scan_e2e import warm_engine

    from gamut.scanning.engines.gpu import GpuEngine

    began = time.perf_counter()
    scan_input = load(query, ref)
    loaded = time.perf_counter() - began
    rows = []
    for cells in sizes:
        engine = GpuEngine([gpu])
        chunks = list(scan_input.chunks(int(cells), engine.preferred_chunk_pairs))
        warm_engine(engine, scan_input, chunks)
        for at_once in (1, 2, 3):
            row = engine_pass(engine, scan_input, chunks, at_once, gpu)
            row.update(chunk_cells=cells, load_s=round(loaded, 3))
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def stripe_child(query: Path, ref: Path, gpu: int, part: int, parts: int) -> dict:
    """This process: the engine alone over stripe ``part`` of ``parts`` (equal letters) on ``gpu``."""
    from scan_e2e import warm_engine

    from gamut.scanning.engines.gpu import GpuEngine
    from gamut.scanning.pipeline.scan_loop import ScanInput

    from gamut.scanning.pipeline.stripes import plan_groups, plan_stripes

    whole = load(query, ref)
    stripe = plan_stripes(whole.reference_lengths(), parts)[part]
    scan_input = ScanInput(whole.queries, whole.references[stripe.r0:stripe.r1], whole.params)
    engine = GpuEngine([gpu])
    cells = engine.preferred_chunk_cells
    if os.environ.get("PROBE_RECT"):  # the stripe worker's rectangles: groups of queries, whole rows each
        n_refs = len(scan_input.references)
        letters = int(scan_input.reference_lengths().sum())
        chunks = [c for q0, q1 in plan_groups(scan_input.query_lengths(), letters)
                  for c in scan_input.rect_chunks(q0, q1, 0, n_refs, cells)]
    else:
        chunks = list(scan_input.chunks(cells, engine.preferred_chunk_pairs))
    warm_engine(engine, scan_input, chunks)
    return engine_pass(engine, scan_input, chunks, engine.concurrent_chunks, gpu) | {
        "gpu": gpu, "part": part, "rect": bool(os.environ.get("PROBE_RECT"))}


def pipeline_child(query: Path, ref: Path, gpu: int, part: int, parts: int, fmt: str) -> dict:
    """This process: what stripe worker ``part`` of ``parts`` does (``compute_tiles`` over every
    group: align, hits, rendering ``fmt``), with the tiles dropped, and where its threads spent time."""
    from collections import defaultdict

    import sample_profile

    from gamut.scanning.engines import make_engine
    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.job import ScanJob
    from gamut.scanning.pipeline.runners import make_sinks
    from gamut.scanning.pipeline.stripes import compute_tiles, stripe_tasks

    if os.environ.get("PROBE_AHEAD_PER_LANE"):  # how far the engine runs ahead (scan_loop.GPU_AHEAD_PER_LANE)
        import gamut.scanning.pipeline.scan_loop as scan_loop

        scan_loop.GPU_AHEAD_PER_LANE = int(os.environ["PROBE_AHEAD_PER_LANE"])
    if os.environ.get("PROBE_SWITCH"):
        sys.setswitchinterval(float(os.environ["PROBE_SWITCH"]))
    params = ScanParams(noenergy=True, score_threshold=160) if fmt.endswith("fast") else ScanParams()
    job = ScanJob.from_files(str(query), str(ref), params, output=str(query.parent / f"unused{part}.tsv"), format="tsv", quiet=True,
                             device=os.environ.get("PROBE_DEVICE", "cuda"),
                             gpus=None if os.environ.get("PROBE_DEVICE") else str(gpu))
    threads = int(os.environ.get("PROBE_THREADS") or max(1, (os.cpu_count() or 1) // parts))
    job = job.where(threads=threads, gpus=None, progress=False)
    classes = tuple(type(s) for s in make_sinks(job))
    import gamut.scanning.pipeline.stripes as stripes_module

    made = []
    real_engine = stripes_module.task_engine
    stripes_module.task_engine = lambda t: made.append(real_engine(t)) or made[-1]
    task = stripe_tasks(job, classes, make_engine, parts)[part]
    groups = len(task.groups)
    warm = sum(1 for _ in compute_tiles(task, ((g, g) for g in range(min(2, groups)))))
    variant = os.environ.get("PROBE_VARIANT", "full")
    table: dict = defaultdict(float)
    spans: dict = {}
    stop = threading.Event()
    sampler = threading.Thread(target=sample_profile.sample, args=(stop, 0.002, ("gamut/", "cupy/"), table, spans),
                               daemon=True)
    sampler.start()
    size = 0
    with Utilisation(int(os.environ.get("CUDA_VISIBLE_DEVICES") or gpu)) as use:
        start = time.perf_counter()
        if variant == "full":
            for _, data in compute_tiles(task, ((g, g) for g in range(groups))):
                size += len(data[0])
        else:  # the same rectangles through scan_chunks (alignment and hits), nothing rendered
            from gamut.scanning.pipeline.scan_loop import scan_chunks

            si = task.job.scan_input
            engine = made[-1]
            getattr(engine, "stats", {}).clear()
            rects = (c for q0, q1 in task.groups
                     for c in si.rect_chunks(q0, q1, 0, len(si.references), int(engine.preferred_chunk_cells)))
            for result, _ in scan_chunks(si, engine, threads=threads, chunks=rects):
                size += len(result)
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    top = sorted(((round(sec, 3), f"{th} {place}") for (th, place), sec in table.items()), reverse=True)[:40]
    stats = {k: round(v, 3) if isinstance(v, float) else v for k, v in getattr(made[-1], "stats", {}).items()} if made else {}
    return {"gpu": gpu, "part": part, "mode": fmt, "variant": variant, "gpu_util": round(use.mean, 1),
            "engine_stats": stats, "engines_made": len(made), "wall_s": round(wall, 3), "groups": groups, "warm_tiles": warm, "tsv_bytes": size,
            "threads": job.threads, "top": top}


def stripes(query: Path, ref: Path, gpus: list[int], rect: bool = False) -> list[dict]:
    """Every GPU's stripe in a child process of its own, all at once (``rect``: in the stripe
    worker's rectangles)."""
    env = dict(os.environ, PROBE_RECT="1") if rect else None
    procs = [subprocess.Popen([sys.executable, __file__, "--child", str(query), str(ref), str(g), str(k),
                               str(len(gpus))], stdout=subprocess.PIPE, text=True, env=env)
             for k, g in enumerate(gpus)]
    return [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--pipeline":
        q, r, g, k, n, mode = sys.argv[2:8]
        print(json.dumps(pipeline_child(Path(q), Path(r), int(g), int(k), int(n), mode)), flush=True)
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        q, r, g, k, n = sys.argv[2:7]
        print(json.dumps(stripe_child(Path(q), Path(r), int(g), int(k), int(n))), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=scan_e2e.SHARED)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tag", default="probe")
    ap.add_argument("--gpus", default="0")
    ap.add_argument("--copies", type=int, default=scan_e2e.TRANSCRIPTOME_COPIES)
    ap.add_argument("--sizes", default="16e9,64e9", help="chunk cells per align call to try")
    ap.add_argument("--pipeline-only", action="store_true",
                    help="only the stripe worker's pipeline (compute_tiles), 1 stripe and 2 stripes at once; "
                    "PROBE_AHEAD=1,3,6 runs every stripe at once with those chunks ahead per lane instead")
    args = ap.parse_args()
    gpus = [int(g) for g in args.gpus.split(",")]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        mirs = [r for r in scan_e2e.read_fasta(args.data / "mirbase" / "mature.fa.gz") if r[0].startswith("hsa-")]
        query = scan_e2e.write_fasta(tmp / "hsa.fa", mirs)
        ref = scan_e2e.write_fasta(tmp / "t.fa", scan_e2e.transcriptome_references(args.data, args.copies))
        if args.pipeline_only:
            report = {"tag": args.tag, "pipeline": []}
            plan = [(len(gpus), "full", "", a) for a in os.environ.get("PROBE_AHEAD", "").split(",") if a]
            for n, variant, threads, ahead in plan or ((len(gpus), "full", "", ""), (1, "full", "", ""),
                                                       (len(gpus), "full", "", ""), (1, "hits", "", ""),
                                                       (len(gpus), "hits", "", "")):
                env = dict(os.environ, PROBE_VARIANT=variant, PROBE_THREADS=threads, PROBE_AHEAD_PER_LANE=ahead)
                procs = [subprocess.Popen([sys.executable, __file__, "--pipeline", str(query), str(ref), "0", str(k),
                                           str(n), "fast"], stdout=subprocess.PIPE, text=True,
                                          env=dict(env, CUDA_VISIBLE_DEVICES=str(g)))
                         for k, g in enumerate(gpus[:n])]
                for p in procs:
                    row = json.loads(p.communicate()[0].strip().splitlines()[-1])
                    row["stripes"] = n
                    row["ahead"] = ahead
                    report["pipeline"].append(row)
                    print(json.dumps(row, indent=0), flush=True)
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"scan_engine_probe_{args.tag}.json").write_text(json.dumps(report, indent=1))
            return 0
        report = {"tag": args.tag, "copies": args.copies,
                  "one_gpu": in_process(query, ref, gpus[0], [float(s) for s in args.sizes.split(",")])}
        if len(gpus) > 1:
            report["alone"] = stripes(query, ref, gpus[:1]) + stripes(query, ref, gpus[:1], rect=True)
            report["stripes"] = stripes(query, ref, gpus) + stripes(query, ref, gpus, rect=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"scan_engine_probe_{args.tag}.json").write_text(json.dumps(report, indent=1))
    lines = [f"# CUDA engine alone, transcriptome x{args.copies}, --noenergy -sc 160 ({args.tag})", "",
             "| run | chunk cells | at once | chunks | wall s | GPU util % | pass1 s | verify s | suppress s | trace s | tasks s | setup s | hits |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in ("one_gpu", "alone", "stripes"):
        for row in report.get(name, []):
            s = row["stats"]
            lines.append(f"| {name}{' gpu ' + str(row['gpu']) if 'gpu' in row else ''}{' rect' if row.get('rect') else ''} | {row.get('chunk_cells', '')} | "
                         f"{row['at_once']} | {row['chunks']} | {row['wall_s']} | {row['gpu_util_mean']} | "
                         f"{s.get('pass1_s')} | {s.get('verify_repair_s')} | {s.get('suppress_s')} | {s.get('trace_s')} | "
                         f"{s.get('tasks_s')} | {s.get('setup_s')} | {row['hits']} |")
    (args.out / f"scan_engine_probe_{args.tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
