"""Partitioned scans: on a Dask cluster of CPUs or GPUs, and resumable (``--run-dir``).

A partition is a run of consecutive pairs of miRanda's output order (``start..stop-1``, about
``partition_cells`` cells). Its output depends only on its pairs, its running counter
(``counter0 = start``) and the last query of the partition before it, so any process can
render it: each worker runs the same engine and writers as a single process, returns the
partition's bytes, and the client writes them in partition order. The result is byte for byte
the output of a single-process run, in every format.

With a run directory every finished partition is stored there atomically (``parts/N.part``),
its length and SHA-256 recorded in ``manifest.json``, and a later run with the same directory
computes only the missing ones and those that no longer verify. ``manifest.json`` also records
the inputs' fingerprints, the options and the partitioning; a run whose inputs or options
differ is refused. ``runs.log`` and ``computed.log`` record which run computed which
partition.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import signal
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from gamut.errors import GamutError, UsageError
from gamut.io.interrupt import remove_stale, temporary_file
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.runner import DEFAULT_CHUNK_CELLS, DEFAULT_CHUNK_PAIRS, ScanInput, run_scan

#: Default partition sizes (cells) per device; a run directory keeps the partitioning it began with.
PARTITION_CELLS = {"cpu": 2_000_000_000, "cuda": 32_000_000_000}
PARTITION_PAIRS = 200_000
RUN_DIR_VERSION = 1
#: Files up to this size are fingerprinted by their whole content; larger ones by size, mtime and
#: the hash of their first and last MiB.
FULL_HASH_LIMIT = 64 << 20


@dataclass(frozen=True)
class Partition:
    """Pairs ``start..stop-1`` of the output order; ``prev_query`` is the query of pair ``start-1``."""

    index: int
    start: int
    stop: int
    cells: int
    prev_query: int


def plan_partitions(scan_input: ScanInput, cells: int, pairs: int) -> list[Partition]:
    """Cut the scan into partitions of about ``cells`` cells and at most ``pairs`` pairs."""
    out: list[Partition] = []
    start, prev = 0, -1
    for k, chunk in enumerate(scan_input.chunks(int(cells), int(pairs))):
        n = int(chunk.shape[0])
        out.append(Partition(k, start, start + n, int(scan_input.pair_cells(chunk).sum()), prev))
        start, prev = start + n, int(chunk[-1, 0])
    return out


@dataclass
class PartitionJob:
    """What every worker needs to render partitions: the sequences, settings and output format
    (``miranda``, ``tsv``, ``jsonl``, ``parquet``, or ``frame`` for the API's DataFrame)."""

    scan_input: ScanInput
    fmt: str
    quiet: bool = False
    keyval: bool = False
    device: str = "auto"
    threads: int | None = None
    gpus: str | Sequence[int] | None = None
    token: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)


#: Per process: engines by (device, threads, gpus), and the writer of the current job.
_ENGINES: dict[tuple, Any] = {}
_WRITERS: dict[str, Any] = {}


def _engine(job: PartitionJob):
    key = (job.device, job.threads, str(job.gpus))
    engine = _ENGINES.get(key)
    if engine is None:
        from gamut.scanning.engines import make_engine

        engine = _ENGINES[key] = make_engine(job.device, job.threads, job.gpus)
    return engine


def _writer(job: PartitionJob):
    """The job's text writer (its id columns are built once per process and job)."""
    writer = _WRITERS.get(job.token)
    if writer is None:
        from gamut.scanning.sinks.report import MirandaTextWriter, TableWriter

        _WRITERS.clear()
        if job.fmt == "miranda":
            writer = MirandaTextWriter(None, job.scan_input, quiet=job.quiet, keyval=job.keyval)
        else:
            writer = TableWriter(None, job.scan_input, job.fmt)
        _WRITERS[job.token] = writer
    return writer


def engine_chunking(job: PartitionJob) -> tuple[int, int]:
    """The chunk sizes (cells, pairs) a single process with this job's engine uses."""
    engine = _engine(job)
    return (int(getattr(engine, "preferred_chunk_cells", DEFAULT_CHUNK_CELLS)),
            int(getattr(engine, "preferred_chunk_pairs", DEFAULT_CHUNK_PAIRS)))


def compute_partition(job: PartitionJob, index: int, start: int, stop: int, prev_query: int) -> Any:
    """Scan one partition and render it: bytes (text formats; Arrow IPC for parquet) or a DataFrame."""
    _test_kill_worker(index)
    si = job.scan_input
    results = run_scan(si, _engine(job), threads=job.threads, pairs=si.pair_range(start, stop), counter0=start)
    if job.fmt == "frame":
        from gamut.scanning.sinks.report import hit_frame

        return hit_frame(list(results), si)
    if job.fmt == "parquet":
        return _arrow_stream(results, si)
    writer = _writer(job)
    if job.fmt == "miranda":
        writer.last_query = prev_query
    return b"".join(writer.render(result) for result in results)


def _arrow_stream(results, scan_input: ScanInput) -> bytes:
    """The partition's hits as an Arrow IPC stream, with each row's pair number in ``_pair``."""
    import pyarrow as pa

    from gamut.scanning.sinks.report import ArrowBatches

    batches = ArrowBatches(scan_input)
    schema = batches.schema.append(pa.field("_pair", pa.int64()))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as stream:
        for result in results:
            batch = batches.batch(result)
            if batch.num_rows:
                ordinal = result.counter0 + result.hits.pair[np.flatnonzero(result.hits.reported)]
                stream.write_batch(pa.RecordBatch.from_arrays([*batch.columns, pa.array(ordinal, pa.int64())],
                                                              schema=schema))
    return sink.getvalue().to_pybytes()


class _ParquetSink:
    """Writes partitions' hits as a single process would: one row group per chunk of the
    single-process chunking (``grid_stops``: the pair number after each chunk)."""

    def __init__(self, out, grid_stops: np.ndarray) -> None:
        import pyarrow.parquet as pq

        from gamut.scanning.sinks.report import arrow_schema

        self.writer = pq.ParquetWriter(out, arrow_schema())
        self.grid = grid_stops
        self.next_grid = 0
        self.pending: list = []

    def write(self, part: Partition, data: bytes) -> None:
        import pyarrow as pa

        table = pa.ipc.open_stream(data).read_all()
        if table.num_rows:
            self.pending.append(table)
        end = int(np.searchsorted(self.grid, part.stop, side="right"))
        stops, self.next_grid = self.grid[self.next_grid:end], end
        if not self.pending or stops.size == 0:
            return
        rows = pa.concat_tables(self.pending)
        ordinal = rows.column("_pair").to_numpy()
        lo = 0
        for cut in np.searchsorted(ordinal, stops, side="left"):
            if cut > lo:
                group = rows.slice(lo, int(cut) - lo).drop_columns(["_pair"]).combine_chunks()
                self.writer.write_batch(group.to_batches()[0])
            lo = int(cut)
        self.pending = [rows.slice(lo)] if lo < rows.num_rows else []

    def close(self) -> None:
        self.writer.close()


# ---------------------------------------------------------------------------------------------
# Run directories


def file_fingerprint(path: str | os.PathLike) -> dict:
    """Size and SHA-256 of a file's content; for files over :data:`FULL_HASH_LIMIT`, size, mtime
    and the SHA-256 of the first and last MiB."""
    st = os.stat(path)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        if st.st_size <= FULL_HASH_LIMIT:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
            return {"size": st.st_size, "sha256": digest.hexdigest()}
        digest.update(handle.read(1 << 20))
        handle.seek(-(1 << 20), os.SEEK_END)
        digest.update(handle.read(1 << 20))
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "head_tail_sha256": digest.hexdigest()}


def scan_options(params: ScanParams, fmt: str, quiet: bool, keyval: bool) -> dict:
    """The settings that shape a partition's bytes (the restrict list by its hash)."""
    fields = {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}
    restrict = fields.pop("restrict")
    fields["restrict_sha256"] = None if restrict is None else hashlib.sha256(
        "\n".join(f"{q}\t{r}" for q, r in sorted(restrict)).encode("utf-8", "surrogateescape")).hexdigest()
    return {"params": fields, "format": fmt, "quiet": bool(quiet), "keyval": bool(keyval)}


class RunDir:
    """A run directory: ``manifest.json``, ``parts/NNNNNNNN.part`` and the run logs.

    The manifest records each stored part's length and SHA-256 (``parts``); a part is reused
    only when it matches them, so a part truncated or changed since (a full disk, a copy cut
    short, an edit) is computed again rather than copied into the output.
    """

    def __init__(self, path: str | os.PathLike, inputs: dict, options: dict, asked: dict | None,
                 default: dict) -> None:
        """Open or start ``path``; refuse when its inputs or options differ, or when the
        partitioning ``asked`` for (``{"cells": ..., "pairs": ...}``, None if not given)
        differs from the directory's. A new directory takes ``asked`` or ``default``."""
        self.path = Path(path)
        self.parts = self.path / "parts"
        _usable_directory(self.path)
        manifest_path = self.path / "manifest.json"
        if manifest_path.exists():
            try:
                manifest = json.loads(manifest_path.read_text())
            except (OSError, ValueError) as exc:
                raise UsageError(f"--run-dir {self.path}: unreadable manifest.json ({exc})") from None
            self._check(manifest, inputs, options, asked)
        else:
            if any(not _is_temporary(entry.name) for entry in self.path.iterdir()):
                raise UsageError(f"--run-dir {self.path} exists and is not a gamut run directory (no manifest.json)")
            manifest = {"gamut_run_dir": RUN_DIR_VERSION, "inputs": inputs, "options": options,
                        "partitioning": asked or default, "runs": 0}
        # A run killed outright (SIGKILL, power loss) leaves its temporary files; one run at a
        # time uses a directory, so every one found now is such a leftover.
        remove_stale(self.path, TEMPORARY_PATTERN)
        if self.parts.is_dir():
            remove_stale(self.parts, TEMPORARY_PATTERN)
        manifest["runs"] = int(manifest.get("runs", 0)) + 1
        manifest["parts"] = dict(manifest.get("parts") or {})
        self.manifest = manifest
        self.run = manifest["runs"]
        with self._writing("start the run"):
            self.parts.mkdir(parents=True, exist_ok=True)
            self._save_manifest()
            with open(self.path / "runs.log", "a") as log:
                log.write(f"{self.run}\tpid {os.getpid()}\n")

    def _check(self, manifest: dict, inputs: dict, options: dict, partitioning: dict | None) -> None:
        where = f"--run-dir {self.path} was started with"
        if manifest.get("gamut_run_dir") != RUN_DIR_VERSION:
            raise UsageError(f"--run-dir {self.path}: not a gamut run directory of version {RUN_DIR_VERSION}")
        if manifest.get("inputs") != inputs:
            names = sorted(k for k in set(inputs) | set(manifest.get("inputs", {}))
                           if inputs.get(k) != manifest.get("inputs", {}).get(k))
            raise UsageError(f"{where} different input files ({', '.join(names)} changed); "
                             "use a new directory or the original inputs")
        if manifest.get("options") != options:
            old, new = _flat(manifest.get("options", {})), _flat(options)
            names = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise UsageError(f"{where} different options ({', '.join(names)}); use a new directory or the same options")
        kept = manifest.get("partitioning")
        if partitioning is not None and kept != partitioning:
            raise UsageError(f"{where} partitions of {kept.get('cells')} cells and {kept.get('pairs')} pairs; "
                             "leave --partition-cells out or give the same value")

    @property
    def partitioning(self) -> dict:
        return self.manifest["partitioning"]

    def _part(self, index: int) -> Path:
        return self.parts / f"{index:08d}.part"

    @contextlib.contextmanager
    def _writing(self, what: str) -> Iterator[None]:
        """A failed write to the directory (full disk, removed directory) as one line."""
        try:
            yield
        except OSError as exc:
            raise GamutError(f"--run-dir {self.path}: cannot {what}: {exc.strerror or exc}") from None

    def _save_manifest(self) -> None:
        _atomic_write(self.path / "manifest.json", json.dumps(self.manifest, indent=1, sort_keys=True).encode())

    def finished(self, count: int, report: Callable[[str], None] = lambda line: None) -> set[int]:
        """The partitions below ``count`` stored whole: their part has the recorded length and
        SHA-256. Parts that do not verify are removed (and ``report`` told, in one line)."""
        records = self.manifest["parts"]
        good: set[int] = set()
        bad: dict[str, list[int]] = {}
        for k in range(count):
            path = self._part(k)
            if not path.exists():
                continue
            problem = _verify(path, records.get(str(k)))
            if problem is None:
                good.add(k)
                continue
            bad.setdefault(problem, []).append(k)
            records.pop(str(k), None)
            with contextlib.suppress(OSError):
                path.unlink()
        if bad:
            with self._writing("update manifest.json"):
                self._save_manifest()
        for problem, indices in bad.items():
            one = len(indices) == 1
            report(f"gamut: run dir {self.path}: {'part' if one else 'parts'} {_ranges(indices)} "
                   f"{problem}; recomputing {'it' if one else 'them'}")
        return good

    def store(self, index: int, data: bytes) -> None:
        """Store partition ``index`` atomically, then record its length and SHA-256."""
        with self._writing(f"store partition {index}"):
            _atomic_write(self._part(index), data)
            self.manifest["parts"][str(index)] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            self._save_manifest()
            with open(self.path / "computed.log", "a") as log:
                log.write(f"{self.run}\t{index}\n")

    def load(self, index: int) -> bytes:
        """A stored partition's bytes. Its checksum was verified at the start (or made when it was
        stored); reading it back checks the length only, which a part cut short since shows."""
        try:
            data = self._part(index).read_bytes()
        except OSError as exc:
            data, reason = None, exc.strerror or str(exc)
        record = self.manifest["parts"].get(str(index)) or {}
        if data is not None and len(data) == record.get("bytes"):
            return data
        if data is not None:
            reason = "it changed during this run"
        raise GamutError(f"--run-dir {self.path}: partition {index} cannot be read back ({reason}); "
                         "run the same command again to recompute it")


#: Temporary files in a run directory: ``_atomic_write``'s and the writability probe's.
TEMPORARY_PATTERN = ".*.tmp"


def _is_temporary(name: str) -> bool:
    return name.startswith(".") and name.endswith(".tmp")


def _usable_directory(path: Path) -> None:
    """Create ``path`` if needed and check that files can be created in it (permission bits do
    not tell when running as root, or on read-only mounts), before any work."""
    try:
        if path.exists() and not path.is_dir():
            raise UsageError(f"--run-dir {path} is not a directory")
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--run-dir {path}: cannot create the directory ({exc.strerror or exc})") from None
    probe = path / f".gamut-probe.{os.getpid()}.tmp"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"--run-dir {path} is not writable: creating a file in it failed "
                         f"({exc.strerror or exc})") from None


def _verify(path: Path, record: dict | None) -> str | None:
    """Why the part at ``path`` does not match ``record`` (length first, then SHA-256), or None."""
    if not record or "bytes" not in record or "sha256" not in record:
        return ("did not verify (no recorded checksum: stored by an older gamut, "
                "or by a run killed before it recorded one)")
    try:
        if path.stat().st_size != record["bytes"]:
            return "did not verify (truncated or changed)"
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        return f"could not be read ({exc.strerror or exc})"
    return None if digest.hexdigest() == record["sha256"] else "did not verify (truncated or changed)"


def _ranges(indices: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    out: list[str] = []
    for k in sorted(indices):
        if out and out[-1].split("-")[-1] == str(k - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{k}"
        else:
            out.append(str(k))
    return ", ".join(out)


def _flat(options: dict, prefix: str = "") -> dict:
    out: dict = {}
    for key, value in options.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all, flushed to disk before it replaces the old file (a
    resumed run must never find half a part); a signal that ends the run removes the temporary
    file. (:func:`gamut.io.atomic.atomic_output` does not sync: outputs need not survive a crash.)"""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary_file(tmp):
        try:
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def computed_by_run(run_dir: str | os.PathLike) -> dict[int, list[int]]:
    """``{run number: [partitions it computed]}`` from a run directory's ``computed.log``."""
    out: dict[int, list[int]] = {}
    log = Path(run_dir) / "computed.log"
    if log.exists():
        for line in log.read_text().splitlines():
            run, index = line.split("\t")
            out.setdefault(int(run), []).append(int(index))
    return out


# ---------------------------------------------------------------------------------------------
# Driving a partitioned run


def execute(
    job: PartitionJob,
    parts: list[Partition],
    write: Callable[[Partition, Any], None],
    *,
    conn=None,
    run_dir: RunDir | None = None,
    retries: int = 2,
    progress: Callable[[int], None] = lambda n: None,
) -> None:
    """Compute every partition not already in ``run_dir`` (on ``conn``'s cluster, else here, in
    order) and call ``write(partition, data)`` for all of them in partition order."""
    finished = run_dir.finished(len(parts), _say) if run_dir is not None else set()
    held: dict[int, Any] = {}
    state = {"next": 0, "computed": 0}
    progress(sum(parts[k].cells for k in finished))

    def flush() -> None:
        k = state["next"]
        while k < len(parts) and (k in held or k in finished):
            write(parts[k], held.pop(k) if k in held else run_dir.load(k))
            k += 1
        state["next"] = k

    def deliver(index: int, data: Any) -> None:
        if run_dir is not None:
            run_dir.store(index, data)
            finished.add(index)
            state["computed"] += 1
            _test_die_after(state["computed"])
        held[index] = data
        progress(parts[index].cells)
        flush()

    flush()
    todo = [p for p in parts if p.index not in finished]
    if conn is None:
        for p in todo:
            deliver(p.index, compute_partition(job, p.index, p.start, p.stop, p.prev_query))
    else:
        from gamut.cluster import ClusterError, run_in_order

        tasks = ((p.index, (p.index, p.start, p.stop, p.prev_query)) for p in todo)
        try:
            for index, data in run_in_order(conn, compute_partition, job, tasks, retries=retries,
                                            held=lambda: len(held), key_prefix=f"gamut-scan-{job.token}",
                                            label="partition"):
                deliver(index, data)
        except ClusterError as exc:
            raise ClusterError(exc.reason, _resume_advice(run_dir, len(finished), len(parts))) from None
    if state["next"] != len(parts):
        raise RuntimeError(f"partitions {state['next']}.. were not delivered")


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _resume_advice(run_dir: RunDir | None, finished: int, total: int) -> str:
    """What to do after the cluster failed: the finished partitions are kept in a run directory."""
    if run_dir is None:
        return "check the workers' logs and run again"
    return (f"{finished} of {total} partitions are kept in {run_dir.path}; check the workers' logs and run "
            "the same command again to resume")


def _grid_stops(job: PartitionJob, conn) -> np.ndarray:
    """Pair numbers ending each chunk of a single-process run with this job's engine."""
    if conn is None:
        cells, pairs = engine_chunking(job)
    else:
        from gamut.cluster import run_one

        cells, pairs = run_one(conn, engine_chunking, job, label="the chunk-size task")
    lengths = [c.shape[0] for c in job.scan_input.chunks(cells, pairs)]
    return np.cumsum(np.asarray(lengths, np.int64))


def scan_partitioned(
    query_path: str,
    reference_path: str,
    scan_input: ScanInput,
    *,
    output: str | None,
    fmt: str,
    quiet: bool,
    keyval: bool,
    banner: str,
    device: str,
    threads: int | None,
    gpus,
    progress: bool,
    cluster: Any = None,
    run_dir: str | os.PathLike | None = None,
    partition_cells: int | None = None,
    partition_pairs: int | None = None,
    retries: int = 2,
) -> int:
    """``scan_files`` over partitions: on ``cluster`` and/or resumable in ``run_dir``."""
    from gamut.cuda import resolve_device
    from gamut.io.atomic import atomic_output
    from gamut.progress import progress_bar

    if partition_cells is not None and partition_cells < 1 or partition_pairs is not None and partition_pairs < 1:
        raise UsageError("--partition-cells and --partition-pairs must be at least 1")
    kind = _device_kind(device)
    default = {"cells": PARTITION_CELLS[kind], "pairs": PARTITION_PAIRS}
    asked = None
    if partition_cells is not None or partition_pairs is not None:
        asked = {"cells": int(partition_cells or default["cells"]), "pairs": int(partition_pairs or default["pairs"])}
    sizes = asked or default
    rd = None
    if run_dir is not None:
        inputs = {"query": file_fingerprint(query_path), "reference": file_fingerprint(reference_path)}
        rd = RunDir(run_dir, inputs, scan_options(scan_input.params, fmt, quiet, keyval), asked, default)
        sizes = rd.partitioning
    parts = plan_partitions(scan_input, sizes["cells"], sizes["pairs"])
    conn = None
    if cluster is not None:
        from gamut.cluster import connect, default_threads

        conn = connect(cluster, device=device, gpus=gpus, analysis="scan")
        threads = default_threads(conn, cluster, threads)
        if isinstance(cluster, str) and cluster.startswith("local") and resolve_device(device, "scan") == "cuda":
            gpus = None  # each local worker sees its one GPU as device 0
    job = PartitionJob(scan_input, fmt, quiet, keyval, device, threads, gpus)
    label = f"scan [{conn.description if conn else 'partitions'}]"
    with contextlib.ExitStack() as stack:
        if conn is not None:
            stack.callback(conn.close)
        bar = stack.enter_context(progress_bar(label, scan_input.total_cells(), bool(progress), unit="cells"))
        if fmt == "parquet":
            grid = _grid_stops(job, conn)
            out = stack.enter_context(atomic_output(output, "wb"))
            sink = _ParquetSink(out, grid)
            execute(job, parts, sink.write, conn=conn, run_dir=rd, retries=retries, progress=bar)
            sink.close()
            return 0
        from gamut.io.textout import write_bytes
        from gamut.scanning.api import _writer

        out = stack.enter_context(atomic_output(output))
        writer = _writer(out, scan_input, fmt, quiet, keyval)
        writer.start(banner, query_path, reference_path)
        execute(job, parts, lambda part, data: write_bytes(out, data), conn=conn, run_dir=rd,
                retries=retries, progress=bar)
        writer.finish()
    return 0


def scan_frame(scan_input: ScanInput, *, cluster: Any, device: str, threads: int | None, gpus,
               partition_cells: int | None = None, partition_pairs: int | None = None, retries: int = 2):
    """The API's hit table, computed by partitions on ``cluster``."""
    from gamut.cluster import connect, default_threads
    from gamut.scanning.sinks.report import hit_frame

    cells = partition_cells or PARTITION_CELLS[_device_kind(device)]
    parts = plan_partitions(scan_input, cells, partition_pairs or PARTITION_PAIRS)
    frames: list = []
    with connect(cluster, device=device, gpus=gpus, analysis="scan") as conn:
        job = PartitionJob(scan_input, "frame", device=device, threads=default_threads(conn, cluster, threads), gpus=gpus)
        execute(job, parts, lambda part, frame: frames.append(frame), conn=conn, retries=retries)
    frames = [f for f in frames if len(f)]
    if not frames:
        return hit_frame([], scan_input)
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


def _device_kind(device: str) -> str:
    """``cuda`` when the workers will scan on GPUs (as far as the client can tell), else ``cpu``."""
    if device in ("cpu", "cuda"):
        return device
    from gamut.cuda import resolve_device

    return resolve_device(device, "scan")


# ---------------------------------------------------------------------------------------------
# Test hooks: deterministic deaths (environment variables, read only by tests)


def _test_die_after(computed: int) -> None:
    """``GAMUT_TEST_DIE_AFTER_PARTITIONS=K``: the client SIGKILLs itself after storing K partitions."""
    limit = os.environ.get("GAMUT_TEST_DIE_AFTER_PARTITIONS")
    if limit and computed >= int(limit):
        os.kill(os.getpid(), signal.SIGKILL)


def _test_kill_worker(index: int) -> None:
    """``GAMUT_TEST_KILL_WORKER=FILE``: the Dask worker process computing the partition whose
    number is in FILE SIGKILLs itself, once (FILE is renamed to FILE.fired first)."""
    path = os.environ.get("GAMUT_TEST_KILL_WORKER")
    distributed = sys.modules.get("distributed")
    if not path or distributed is None:
        return
    try:
        distributed.get_worker()
    except ValueError:  # not in a worker
        return
    with contextlib.suppress(OSError, ValueError):
        if int(Path(path).read_text()) == index:
            os.rename(path, path + ".fired")
            os.kill(os.getpid(), signal.SIGKILL)
