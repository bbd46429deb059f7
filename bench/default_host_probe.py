"""Where a default-mode scan's host time goes, by Numba thread count (issue 45: default mode, energies and
TSV rows, is bound by host work on the H200 hosts: about 21 ms of hits and 27 ms of rows per chunk in the
one-GPU process, 43 and 48 ms in each of four ``--gpus`` workers).

The first ``--records`` references of ``--references`` (default: the first copy of the transcriptome set)
against every query are aligned once on the GPU in the engine's chunks (kept in memory); then, for each
thread count, each stage alone over every chunk, best of ``--repeat``:

- ``hits``: the chunk's hits from its alignments (:func:`chunk_hits`);
- ``distinct``: the fold strings made distinct (the host part of the energies);
- ``energies``: the hits' energies (:func:`hit_energies`, on the GPU), and the reported flags;
- ``rows``: the TSV sink's build and render of each chunk (no file);
- ``write``: the rendered bytes written to a file in ``--dir`` (page cache), as one thread does.

    python bench/default_host_probe.py --queries /tmp/w/hsa.fa --references /tmp/w/tx.fa --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fasta_read import timed  # noqa: E402


def best(fn, repeat: int) -> float:
    """The shortest of ``repeat`` runs of ``fn``, seconds."""
    return min(timed(fn, repeat)[0])


def first_records(path: Path, count: int, out: Path) -> Path:
    """The first ``count`` records of FASTA ``path`` written to ``out``."""
    seen = 0
    with open(path, "rb") as src, open(out, "wb") as dst:
        for line in src:
            if line.startswith(b">"):
                seen += 1
                if seen > count:
                    break
            dst.write(line)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=Path, required=True)
    ap.add_argument("--references", type=Path, required=True)
    ap.add_argument("--records", type=int, default=6150)
    ap.add_argument("--threads", default="1,4,8,16")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=Path("/tmp"))
    ap.add_argument("--device", default="cuda", help="the engine's device (cpu: to try the probe without a GPU)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    import numba

    from gamut.io.textcols import distinct_strings
    from gamut.scanning.engines import make_engine
    from gamut.scanning.hits import chunk_hits
    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.job import ScanJob
    from gamut.scanning.pipeline.scan_loop import hit_energies
    from gamut.scanning.results import ChunkResult
    from gamut.scanning.sinks.spec import Output, OutputSpec
    from gamut.scanning.sinks.table import TsvSink

    refs = first_records(args.references, args.records, args.dir / "probe_refs.fa")
    params = ScanParams()
    job = ScanJob.from_files(str(args.queries), str(refs), params, output=str(args.dir / "unused.tsv"),
                               device=args.device)
    si = job.scan_input
    q, r = si.query_set, si.reference_set
    engine = make_engine(args.device, None, None, cells=si.total_cells())
    began = time.perf_counter()
    aligned = [(chunk, engine.align(q, r, chunk, params))
               for chunk in si.chunks(int(engine.preferred_chunk_cells), int(engine.preferred_chunk_pairs))]
    report: dict = {"references": args.records, "chunks": len(aligned), "align_s": time.perf_counter() - began,
                    "cores": os.cpu_count(), "numba_layer": None, "rows": []}

    def hits_of():
        return [chunk_hits(q, r, chunk, a, parallel=True) for chunk, a in aligned]

    tables = hits_of()
    report["hits"] = int(sum(len(t) for t in tables))
    report["numba_layer"] = numba.threading_layer()

    def energies():
        for t in tables:
            t.set_energies(hit_energies(t, params, None, engine.energy_device), params.energy_cutoff, params.strict)

    energies()
    results, counter = [], 0
    for (chunk, _), t in zip(aligned, tables):
        results.append(ChunkResult(chunk, t, counter))
        counter += len(results[-1])
    sink = TsvSink(OutputSpec(si, Output(str(args.dir / "probe.tsv"), "tsv")))
    texts = [sink.build(res, True).render_array() for res in results]
    size = int(sum(t.shape[0] for t in texts))
    report["tsv_bytes"] = size

    def write():
        with open(args.dir / "probe.tsv", "wb") as out:
            for text in texts:
                out.write(text)

    for threads in (int(t) for t in args.threads.split(",")):
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        row = {"threads": threads,
               "hits_s": best(hits_of, args.repeat),
               "distinct_s": best(lambda: [distinct_strings(t.fold, t.fold_off) for t in tables], args.repeat),
               "energies_s": best(energies, args.repeat),
               "rows_s": best(lambda: [sink.build(res, True).render_array() for res in results], args.repeat),
               "write_s": best(write, args.repeat)}
        report["rows"].append(row)
        n = len(aligned)
        print(f"threads {threads:3d}: per chunk hits {row['hits_s'] / n * 1e3:.1f} ms, distinct "
              f"{row['distinct_s'] / n * 1e3:.1f} ms, energies {row['energies_s'] / n * 1e3:.1f} ms, rows "
              f"{row['rows_s'] / n * 1e3:.1f} ms ({size / row['rows_s'] / 1e9:.2f} GB/s), write "
              f"{row['write_s'] / n * 1e3:.1f} ms ({size / row['write_s'] / 1e9:.2f} GB/s)", flush=True)
    print(f"{len(aligned)} chunks, {report['hits']} hits, {size / 1e9:.2f} GB of TSV, layer {report['numba_layer']}")
    (args.dir / "probe.tsv").unlink(missing_ok=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
