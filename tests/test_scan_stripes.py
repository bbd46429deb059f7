"""A scan on several GPUs split by references (issue 45, :mod:`gamut.scanning.pipeline.stripes`):
each worker process scans one stripe of the references with the host build of the CUDA kernels,
and every output format is byte for byte that of one process, whatever the number of stripes,
the size of the tiles or the shape of the input."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scan_host import build_scan_host, host_engine_factory

from gamut.io import fd_mailbox
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline import ahead
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.pipeline.partitioned import run_partitioned
from gamut.scanning.pipeline.runners import make_sinks, run_in_process
from gamut.scanning.pipeline.stripes import plan_groups, plan_stripes, rect_layout, stripe_tasks

DATA = Path(__file__).parent / "data" / "miranda"


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory) -> str:
    return build_scan_host(tmp_path_factory.mktemp("scan_host"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5000), min_size=1, max_size=60), st.integers(1, 8))
def test_stripes_cover_the_references_in_order_with_about_equal_letters(lengths, count):
    stripes = plan_stripes(np.array(lengths), count)
    assert [s.index for s in stripes] == list(range(len(stripes)))
    assert stripes[0].r0 == 0 and stripes[-1].r1 == len(lengths)
    assert all(a.r1 == b.r0 for a, b in zip(stripes, stripes[1:])) and all(s.r1 > s.r0 for s in stripes)
    assert len(stripes) == min(count, len(lengths))
    letters = [sum(lengths[s.r0:s.r1]) for s in stripes]
    if len(stripes) > 1:  # no stripe holds more than its share plus the longest reference
        assert max(letters) <= sum(lengths) / len(stripes) + max(lengths)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 64), min_size=1, max_size=80), st.integers(1, 10**6), st.integers(1, 10**7))
def test_groups_cover_the_queries_in_order(lengths, letters, tile_cells):
    groups = plan_groups(np.array(lengths), letters, tile_cells)
    assert groups[0][0] == 0 and groups[-1][1] == len(lengths)
    assert all(a[1] == b[0] and a[1] > a[0] for a, b in zip(groups, groups[1:]))
    for q0, q1 in groups:  # within the budget, but for a group of one query
        assert q1 - q0 == 1 or sum(lengths[q0:q1]) * letters <= tile_cells


def test_a_rectangle_knows_its_place_in_the_output_order():
    from gamut.scanning.pair_run import PairRun

    pairs = PairRun.of_rect(3, 5, 0, 2)  # queries 3..4 x the stripe's references 0..1 (5..6 of 9)
    assert pairs.tolist() == [[3, 0], [3, 1], [4, 0], [4, 1]]
    assert PairRun.of_rect(7, 9, 4, 7).tolist() == [[7, 4], [7, 5], [7, 6], [8, 4], [8, 5], [8, 6]]
    assert PairRun.of_rect(7, 7, 4, 7).shape == PairRun.of_rect(7, 9, 4, 4).shape == (0, 2)
    layout = rect_layout(pairs, 5, 9)
    assert layout.ordinals(np.arange(4)).tolist() == [32, 33, 41, 42]
    assert layout.row_starts.tolist() == [0, 2] and layout.query_starts().size == 0
    assert rect_layout(pairs, 0, 9).query_starts().tolist() == [0, 2]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 50), st.integers(1, 6), st.integers(0, 30), st.integers(1, 12), st.integers(0, 30))
def test_rectangle_ordinals_are_the_output_order(q0, rows, r0, width, extra):
    from gamut.scanning.pair_run import PairRun

    n_refs = r0 + width + extra
    pairs = PairRun.of_rect(q0, q0 + rows, 0, width)
    layout = rect_layout(pairs, r0, n_refs)
    want = [q * n_refs + r0 + r for q, r in np.asarray(pairs).tolist()]
    assert layout.ordinals(np.arange(len(pairs))).tolist() == want


def _job(case: str, outputs, params: ScanParams | None = None, **extra) -> ScanJob:
    return ScanJob.from_files(str(DATA / case / "query.fa"), str(DATA / case / "reference.fa"), params or ScanParams(),
                              outputs=outputs, device="cpu", threads=1, progress=False, **extra)


FORMATS = {"miranda": "txt", "tsv": "tsv", "jsonl": "jsonl", "parquet": "parquet", "bed6": "bed6"}


@pytest.mark.parametrize("lanes", ["1", "3", "4"])
def test_any_number_of_gpu_lanes_gives_the_same_bytes(host_lib, tmp_path, monkeypatch, lanes):
    """``GAMUT_GPU_LANES``: chunks aligned at once by the GPU engine (host build), in one process and
    on stripe workers, every format the same bytes as two lanes."""
    outs = lambda tag: [(str(tmp_path / f"{tag}.{suffix}"), fmt) for fmt, suffix in FORMATS.items()]
    two = _job("real_trim", outs("two"), partition_cells=200_000)
    run_in_process(two, make_sinks(two), host_engine_factory(host_lib))
    monkeypatch.setenv("GAMUT_GPU_LANES", lanes)
    assert host_engine_factory(host_lib)().concurrent_chunks == int(lanes)
    here = _job("real_trim", outs("here"), partition_cells=200_000)
    run_in_process(here, make_sinks(here), host_engine_factory(host_lib))
    striped = _job("real_trim", outs("striped"), partition_cells=200_000)
    run_partitioned(striped, make_sinks(striped), host_engine_factory(host_lib), gpu_workers=[0, 0])
    for suffix in FORMATS.values():
        expected = (tmp_path / f"two.{suffix}").read_bytes()
        assert (tmp_path / f"here.{suffix}").read_bytes() == expected, suffix
        assert (tmp_path / f"striped.{suffix}").read_bytes() == expected, suffix


def test_gpu_lanes_must_be_a_count(host_lib, monkeypatch):
    from gamut.errors import UsageError

    for bad in ("0", "two", "17"):
        monkeypatch.setenv("GAMUT_GPU_LANES", bad)
        with pytest.raises(UsageError, match="GAMUT_GPU_LANES"):
            host_engine_factory(host_lib)()


@pytest.mark.parametrize("case, workers, tile_cells", [
    ("real_trim", 2, 200_000),  # many groups
    ("real_trim", 3, 10**12),  # one group
    ("odd_inputs", 3, 50_000),  # odd letters and lengths
])
def test_every_format_on_stripes_matches_one_process(host_lib, tmp_path, case, workers, tile_cells):
    outs = [(str(tmp_path / f"s.{suffix}"), fmt) for fmt, suffix in FORMATS.items()]
    job = _job(case, outs, partition_cells=tile_cells)
    run_partitioned(job, make_sinks(job), host_engine_factory(host_lib), gpu_workers=[0] * workers)
    single = [(str(tmp_path / f"one.{suffix}"), fmt) for fmt, suffix in FORMATS.items()]
    one = _job(case, single)
    run_in_process(one, make_sinks(one), host_engine_factory(host_lib))
    for (striped, fmt), (alone, _) in zip(outs, single):
        assert Path(striped).read_bytes() == Path(alone).read_bytes(), fmt


@pytest.mark.parametrize("quiet, keyval", [(True, False), (False, True)])
def test_quiet_and_keyval_text_on_stripes(host_lib, tmp_path, quiet, keyval):
    job = _job("real_trim", [(str(tmp_path / "s.txt"), "miranda")], partition_cells=150_000, quiet=quiet, keyval=keyval)
    run_partitioned(job, make_sinks(job), host_engine_factory(host_lib), gpu_workers=[0, 0])
    one = _job("real_trim", [(str(tmp_path / "one.txt"), "miranda")], quiet=quiet, keyval=keyval)
    run_in_process(one, make_sinks(one), host_engine_factory(host_lib))
    assert (tmp_path / "s.txt").read_bytes() == (tmp_path / "one.txt").read_bytes()


def test_more_workers_than_references(host_lib, tmp_path):
    """Two references, three workers: two stripes, the third worker idle; same output."""
    query = tmp_path / "q.fa"
    query.write_text(">q1\nUGAGGUAGUAGGUUGUAUAGUU\n>q2\nUAGCAGCACGUAAAUAUUGGCG\n")
    ref = tmp_path / "r.fa"
    ref.write_text(">r1\nACUAUACAACCUACUACCUCAAAAACUAUACAACCUACUACCUCA\n>r2\nCGCCAAUAUUUACGUGCUGCUAAAA\n")
    outs = []
    for name, workers in (("three", [0, 0, 0]), ("one", None)):
        out = tmp_path / f"{name}.txt"
        job = ScanJob.from_files(str(query), str(ref), ScanParams(score_threshold=60), outputs=[(str(out), "miranda")],
                                 device="cpu", threads=1, progress=False)
        if workers:
            run_partitioned(job, make_sinks(job), host_engine_factory(host_lib), gpu_workers=workers)
        else:
            run_in_process(job, make_sinks(job), host_engine_factory(host_lib))
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and b"Scores for this hit" in outs[0]


def test_stripes_on_a_dask_cluster_match_one_process(host_lib, tmp_path, monkeypatch):
    """A Dask cluster of two workers, a stripe each, in runs of tiles
    (``compute_tile_run``), gives every format byte for byte (the workers scan with the host build of
    the kernels)."""
    pytest.importorskip("distributed")
    import logging
    import os

    from distributed import Client, LocalCluster

    from gamut.cluster import Connection
    from gamut.scanning.pipeline import striped

    here = str(Path(__file__).parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setattr(ahead, "RUNS_PER_STRIPE", 3)
    outs = [(str(tmp_path / f"s.{suffix}"), fmt) for fmt, suffix in FORMATS.items()]
    job = _job("real_trim", outs, partition_cells=150_000)
    taken = []
    if fd_mailbox.usable():  # workers on this machine hand their tiles' pages over as they are
        take = fd_mailbox.Mailbox.take
        monkeypatch.setattr(fd_mailbox.Mailbox, "take", lambda box, ticket: taken.append(ticket) or take(box, ticket))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        client.wait_for_workers(2, timeout=120)
        conn = Connection(client, "test cluster")
        striped.run_striped(job, make_sinks(job), host_engine_factory(host_lib), conn=conn)
        folder = conn._mailbox.folder if conn._mailbox is not None else None
        conn.close()
    assert taken or not fd_mailbox.usable()  # (the pages came by the mailbox)
    assert folder is None or not Path(folder).exists()
    single = [(str(tmp_path / f"one.{suffix}"), fmt) for fmt, suffix in FORMATS.items()]
    one = _job("real_trim", single)
    run_in_process(one, make_sinks(one), host_engine_factory(host_lib))
    for (striped_out, fmt), (alone, _) in zip(outs, single):
        assert Path(striped_out).read_bytes() == Path(alone).read_bytes(), fmt


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 80), max_size=60), st.integers(1, 500), st.integers(1, 20_000))
def test_a_tiles_rectangles_cover_it_evenly_in_no_more_chunks_than_greedy_ones(lengths, letters, cells):
    from gamut.scanning.pipeline.pairs import even_row_runs, row_runs

    runs = even_row_runs(np.array(lengths, np.int64), letters, cells)
    if not lengths:
        assert runs == []
        return
    assert runs[0][0] == 0 and runs[-1][1] == len(lengths)
    assert all(a < b for a, b in runs) and all(x[1] == y[0] for x, y in zip(runs, runs[1:]))
    assert len(runs) <= len(row_runs(np.array(lengths, np.int64), letters, cells))


def test_a_cluster_workers_stripe_pipeline_is_kept_between_its_runs(host_lib, tmp_path):
    """``compute_tile_run`` keeps a stripe's pipeline between consecutive runs of a worker: runs give the
    tiles of one run of every group; a run that is not the next (a retry) starts its own pipeline,
    and the last run lets the pipeline go."""
    from gamut.scanning.pipeline import stripes
    from gamut.scanning.sinks import sink_class

    job = _job("real_trim", [(str(tmp_path / "s.tsv"), "tsv")])
    tasks = stripes.stripe_tasks(job.where(progress=False), (sink_class("tsv"),), host_engine_factory(host_lib), 2,
                                 tile_cells=150_000)
    task = tasks[1]
    count = len(task.groups)
    assert count >= 5

    def text(run):
        plan, tiles = run
        assert plan == stripes.stripe_plan(task)
        return [(g, bytes(memoryview(data[0]))) for g, data in tiles]

    whole = text(stripes.compute_tile_run(task, range(count)))
    assert [g for g, _ in whole] == list(range(count)) and not stripes._STREAMS._kept
    runs = text(stripes.compute_tile_run(task, [0, 1])) + text(stripes.compute_tile_run(task, [2]))
    assert (task.token, 1) in stripes._STREAMS._kept  # kept for the next run
    again = text(stripes.compute_tile_run(task, [1, 2]))  # not the next: a pipeline of its own
    rest = text(stripes.compute_tile_run(task, range(3, count)))
    assert runs + rest == whole and again == whole[1:3]
    assert not stripes._STREAMS._kept  # the last run let it go


def _stop_at_the_plan(monkeypatch) -> list:
    """``run_striped`` stops (KeyboardInterrupt) once it has planned its stripe tasks; the list gets
    each plan's tasks."""
    import gamut.scanning.pipeline.striped as striped

    plans = []

    def planned(*args, **kwargs):
        plans.append(stripe_tasks(*args, **kwargs))
        raise KeyboardInterrupt  # enough: the plan is what is looked at

    monkeypatch.setattr(striped, "stripe_tasks", planned)
    return plans


def _cluster_here(workers: int = 2) -> SimpleNamespace:
    """A stand-in connection to a cluster of ``workers`` workers on this machine (its scheduler's view)."""
    info = {f"tcp://127.0.0.1:{9000 + k}": {"name": f"gpu{k}"} for k in range(workers)}
    return SimpleNamespace(client=SimpleNamespace(scheduler_info=lambda: {"workers": info}), ahead=None)


def test_worker_threads_by_placement(tmp_path, monkeypatch):
    """Without --threads, gamut's own GPU workers share this machine's cores, while a cluster's GPU worker
    (one per GPU) keeps every core of its machine; --threads is every worker's count."""
    import gamut.scanning.pipeline.striped as striped

    plans = _stop_at_the_plan(monkeypatch)
    monkeypatch.setattr(striped.os, "cpu_count", lambda: 32)
    for threads in (None, 3):
        job = _job("real_trim", [(str(tmp_path / "o.tsv"), "tsv")]).where(threads=threads)
        for place in ({"gpus": [0, 0, 1, 1]}, {"conn": _cluster_here()}):
            with pytest.raises(KeyboardInterrupt):
                striped.run_striped(job, make_sinks(job), host_engine_factory(None), **place)
    seen = [tasks[0].job.threads for tasks in plans]
    assert seen == [8, None, 3, 3]


def test_warm_up_makes_the_engine_and_reads_the_file_as_a_cluster_scan_does(tmp_path, monkeypatch):
    """A worker's warm-up (``warm_worker``, run by the Dask preload) builds the GPU engine a cluster
    worker's scan asks for (engines are kept per process by device, threads and GPUs) and reads its
    reference back from a file, as such a worker reads its stripe; so a cluster's first scan pays for
    neither (2x H200: its workers began 0.45 s after the stripes were sent, the next scan's 0.12 s)."""
    import gamut.scanning.pipeline.stripes as stripes
    from gamut.scanning.fasta import RecordRange

    warmed = []

    def tiles(task, taken):
        warmed.append(task)
        task.job.scan_input  # noqa: B018 (the stripe read, as the pipeline does first)
        return iter(())

    monkeypatch.setattr(stripes, "compute_tiles", tiles)
    stripes._warm_scan("cuda")

    import gamut.scanning.pipeline.striped as striped
    from gamut.scanning.engines import make_engine
    from gamut.scanning.pipeline.partitions import engine_key

    plans = _stop_at_the_plan(monkeypatch)
    job = ScanJob.from_files(str(DATA / "real_trim" / "query.fa"), str(DATA / "real_trim" / "reference.fa"),
                             ScanParams(), outputs=[(str(tmp_path / "o.tsv"), "tsv")], device="cuda", progress=False)
    with pytest.raises(KeyboardInterrupt):
        striped.run_striped(job, make_sinks(job), make_engine, conn=_cluster_here())
    assert engine_key(warmed[0]) == engine_key(plans[0][0])
    assert isinstance(warmed[0].job.references, RecordRange) and warmed[0].job.references.records()


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_the_warm_up_scan_runs(device):
    """The warm-up scan itself, whose failures ``warm_worker`` hides (best effort): here they show."""
    from gamut.scanning.pipeline.stripes import _warm_scan

    _warm_scan(device)


def test_the_warm_up_skips_its_cpu_pass_once_the_cuda_context_is_made(monkeypatch):
    """The CPU pass of the warm-up overlaps the making of the CUDA context: with the context's
    thread ended it is skipped, while it runs (or with none given) it is not."""
    import threading

    import gamut.scanning.pipeline.stripes as stripes

    passes = []
    monkeypatch.setattr(stripes, "_warm_scan", passes.append)
    ended = threading.Thread(target=lambda: None)
    ended.start()
    ended.join()
    release = threading.Event()
    running = threading.Thread(target=release.wait)
    running.start()
    try:
        for context, expected in ((ended, ["cuda"]), (running, ["cpu", "cuda"]), (None, ["cpu", "cuda"])):
            passes.clear()
            stripes.warm_worker(context)
            assert passes == expected
    finally:
        release.set()
        running.join()


def test_the_warm_up_leaves_no_file_behind_when_its_process_ends_in_it(tmp_path):
    """A worker stopped while it warms up (the warm-up is a daemon thread: the process ends in it)
    leaves nothing in the temporary folder: a ``gamut-warm-*`` folder was left in ``/tmp`` at each
    such stop."""
    import os
    import subprocess
    import sys

    script = ("import os, threading, gamut.scanning.pipeline.stripes as s\n"
              "def stop(records, *args, **kw):\n"
              "    print(records.records()[0].sequence.decode(), flush=True)\n"
              "    os._exit(0)\n"
              "s.compute_tiles = lambda task, taken: stop(task.job.references)\n"
              "s._warm_scan('cuda')\n")
    env = dict(os.environ, TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("AAGCUACGAU")  # (the warm-up read its reference back from the file)
    assert list(tmp_path.iterdir()) == []


def test_a_gpu_cluster_job_leaves_plain_input_files_unread(tmp_path):
    """In stripes on a cluster of GPUs, plain query and reference files are read when the runner needs
    them (after its head start); otherwise, or for a compressed file, as the job is made."""
    import gzip

    from gamut.scanning.fasta import FileRecords, read_miranda_fasta

    reference = DATA / "real_trim" / "reference.fa"
    packed = tmp_path / "reference.fa.gz"
    packed.write_bytes(gzip.compress(reference.read_bytes()))

    def job(path, **extra):
        return ScanJob.from_files(str(DATA / "real_trim" / "query.fa"), str(path), ScanParams(**extra.pop("params", {})),
                                  output=str(tmp_path / "o.tsv"), format="tsv", progress=False, **extra)

    def refs(path, **extra):
        return job(path, **extra).references

    later = job(reference, cluster="tcp://127.0.0.1:1", device="cuda")
    unread, queries = later.references, later.queries
    assert all(isinstance(r, FileRecords) and not r.is_read for r in (unread, queries))
    assert list(unread) == read_miranda_fasta(reference) and unread.is_read
    assert later.scan_input.query_lengths().tolist() == [len(q) for q in read_miranda_fasta(DATA / "real_trim" / "query.fa")]
    for read in (refs(reference, cluster="tcp://127.0.0.1:1", device="cpu"), refs(reference, device="cuda"),
                 refs(packed, cluster="tcp://127.0.0.1:1", device="cuda"),
                 refs(reference, cluster="tcp://127.0.0.1:1", device="cuda", run_dir=str(tmp_path / "run"))):
        assert not isinstance(read, FileRecords)


def test_file_records_travel_unread_and_refuse_a_changed_file(tmp_path):
    import pickle

    from gamut.errors import InputError
    from gamut.scanning.fasta import FileRecords, read_miranda_fasta

    path = tmp_path / "r.fa"
    path.write_bytes((DATA / "real_trim" / "reference.fa").read_bytes())
    records = FileRecords.of(path)
    assert len(records) == len(read_miranda_fasta(path)) and records[3] == read_miranda_fasta(path)[3]
    sent = pickle.loads(pickle.dumps(records))
    assert records.is_read and not sent.is_read and sent.source == records.source
    with open(path, "ab") as handle:  # written to after the order was made: every reader refuses it
        handle.write(b">extra\nACGU\n")
    with pytest.raises(InputError, match="changed while the scan began"):
        sent.records()
    assert FileRecords.of(tmp_path) is None and FileRecords.of("-") is None


def test_a_stripe_order_plans_the_stripe_as_the_client_does(host_lib, tmp_path):
    """A worker given an order (the references unread) plans the client's stripes from the file, and its
    first run takes the stripe's first groups; an order past the stripes the references fill gives none."""
    import pickle

    from gamut.scanning.fasta import FileRecords
    from gamut.scanning.pipeline import stripes
    from gamut.scanning.sinks import sink_class

    job = _job("real_trim", [(str(tmp_path / "s.tsv"), "tsv")]).where(progress=False)
    sinks, factory = (sink_class("tsv"),), host_engine_factory(host_lib)
    tasks = stripes.stripe_tasks(job, sinks, factory, 3, tile_cells=150_000)
    unread = ScanJob.from_files(str(DATA / "real_trim" / "query.fa"), str(DATA / "real_trim" / "reference.fa"),
                                ScanParams(), output=str(tmp_path / "s.tsv"), format="tsv", device="cuda",
                                cluster="tcp://127.0.0.1:1", progress=False).where(cluster=None, threads=1, progress=False)
    assert isinstance(unread.references, FileRecords) and not unread.references.is_read
    for k, task in enumerate(tasks):
        order = pickle.loads(pickle.dumps(ahead.StripeOrder(unread, sinks, factory, k, 3, 150_000, 4, "tok")))
        assert stripes.stripe_plan(order.task) == stripes.stripe_plan(task) and order.task.token == "tok"
        plan, first = ahead.tile_run(order, None)
        size = ahead.run_size(len(task.groups), 4)
        assert plan == stripes.stripe_plan(task) and [g for g, _ in first] == list(range(size))
        _, expected = ahead.tile_run(task, range(size))
        assert [bytes(memoryview(d[0])) for _, d in first] == [bytes(memoryview(d[0])) for _, d in expected]
    beyond = ahead.StripeOrder(unread, sinks, factory, 5, 6, 150_000, 4, "tok")
    if len(stripes.stripe_tasks(unread, sinks, factory, 6, 150_000)) < 6:
        assert beyond.task is None and ahead.tile_run(beyond, None) == (None, [])
    # An order sent before the scan code was imported names its sinks by format and leaves the engines
    # and the tile size to the registry and the default: the worker plans with those.
    from gamut.scanning.engines import make_engine

    named = ahead.StripeOrder(unread, ("tsv",), None, 1, 3, None, 4, "tok").task
    assert named.sinks == sinks and named.make_engine is make_engine
    assert stripes.stripe_plan(named) == stripes.stripe_plan(stripes.stripe_tasks(unread, sinks, factory, 3)[1])


def test_a_cluster_on_this_machine_gets_its_stripes_before_the_references_are_read(host_lib, tmp_path, monkeypatch):
    """The head start: a job whose input files are unread sends each worker its stripe's order and
    first run, then reads the files here; every format is byte for byte one process's. A file written
    to meanwhile fails the scan, with no output."""
    pytest.importorskip("distributed")
    import dataclasses
    import logging

    from distributed import Client, LocalCluster

    from gamut.cluster import Connection
    from gamut.errors import InputError
    from gamut.scanning.fasta import FileRecords
    from gamut.scanning.pipeline import striped

    events = _head_starts_noted(monkeypatch, lambda start: "head start")
    read = FileRecords.records

    def records(self):
        if not self.is_read:
            events.append("read")
        return read(self)

    monkeypatch.setattr(FileRecords, "records", records)
    reference = tmp_path / "reference.fa"
    reference.write_bytes((DATA / "real_trim" / "reference.fa").read_bytes())

    def unread_job(outs):
        job = _job("real_trim", outs, partition_cells=150_000)
        return dataclasses.replace(job, queries=FileRecords.of(DATA / "real_trim" / "query.fa"),
                                   references=FileRecords.of(reference))

    outs = [(str(tmp_path / f"s.{suffix}"), fmt) for fmt, suffix in FORMATS.items() if fmt not in ("jsonl", "parquet")]
    job = unread_job(outs)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        client.wait_for_workers(2, timeout=120)
        conn = Connection(client, "test cluster")
        striped.run_striped(job, make_sinks(job), host_engine_factory(host_lib), conn=conn)
        assert events[:2] == ["head start", "read"]
        changed = unread_job([(str(tmp_path / "changed.tsv"), "tsv")])
        with open(reference, "ab") as handle:
            handle.write(b">extra\nACGUACGUACGU\n")
        with pytest.raises(InputError, match="changed while the scan began"):
            striped.run_striped(changed, make_sinks(changed), host_engine_factory(host_lib), conn=conn)
        assert not (tmp_path / "changed.tsv").exists()
        reference.write_bytes(b"ACGUACGU\n>r1\nACGU\n")  # not FASTA: this process' own one-line error
        bad = unread_job([(str(tmp_path / "bad.tsv"), "tsv")])
        with pytest.raises(InputError) as failed:
            striped.run_striped(bad, make_sinks(bad), host_engine_factory(host_lib), conn=conn)
        assert str(failed.value).startswith(str(reference)) and "\n" not in str(failed.value)
        assert not (tmp_path / "bad.tsv").exists()
        conn.close()  # (its mailbox, where the workers' tiles came)
    single = [(str(tmp_path / f"one.{suffix}"), fmt) for fmt, suffix in FORMATS.items() if fmt not in ("jsonl", "parquet")]
    one = _job("real_trim", single)
    run_in_process(one, make_sinks(one), host_engine_factory(host_lib))
    for (striped_out, fmt), (alone, _) in zip(outs, single):
        assert Path(striped_out).read_bytes() == Path(alone).read_bytes(), fmt


def _head_starts_noted(monkeypatch, note) -> list:
    """For a test of a LocalCluster's head start: its workers import the tests' modules, a stripe runs
    in three tasks, and each head start sent (:class:`~gamut.cluster.PinnedStart`) appends ``note(start)``
    to the list returned."""
    import os

    import gamut.cluster as cluster_module

    here = str(Path(__file__).parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setattr(ahead, "RUNS_PER_STRIPE", 3)
    noted: list = []
    started = cluster_module.PinnedStart.__init__
    monkeypatch.setattr(cluster_module.PinnedStart, "__init__",
                        lambda self, *a, **k: started(self, *a, **k) or noted.append(note(self)))
    return noted


def _local_cluster(workers: int = 2):
    """A LocalCluster of worker processes (which import the tests' modules) and a client on it."""
    import logging

    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None, silence_logs=logging.CRITICAL)
    client = Client(cluster)
    client.wait_for_workers(workers, timeout=120)
    return cluster, client


def test_orders_sent_ahead_are_taken_by_the_scan_they_match_and_let_go_otherwise(host_lib, tmp_path, monkeypatch):
    """Orders sent before the scan code was imported (``send_orders``: the sinks by their formats'
    names) are the scan's head start where they match it (its sinks, engines and workers): then no
    other orders are sent; orders made for other engines are let go and new ones sent. Either way the
    output is one process's, byte for byte."""
    pytest.importorskip("distributed")
    import dataclasses

    from gamut.cluster import Connection
    from gamut.scanning.fasta import FileRecords
    from gamut.scanning.pipeline import striped

    starts = _head_starts_noted(monkeypatch, lambda start: start)
    factory = host_engine_factory(host_lib)

    def unread_job(name):
        job = _job("real_trim", [(str(tmp_path / f"{name}.tsv"), "tsv")], partition_cells=150_000)
        return dataclasses.replace(job, queries=FileRecords.of(DATA / "real_trim" / "query.fa"),
                                   references=FileRecords.of(DATA / "real_trim" / "reference.fa"))

    cluster, client = _local_cluster()
    try:
        conn = Connection(client, "test cluster")
        for name, sent_with, sends in (("taken", factory, 1), ("other", host_engine_factory(None), 2)):
            starts.clear()
            job = unread_job(name)
            conn.ahead = ahead.send_orders(conn, job, tuple(job.formats), sent_with)
            assert conn.ahead is not None and conn.ahead.sinks == ("tsv",)
            striped.run_striped(job, make_sinks(job), factory, conn=conn)
            assert len(starts) == sends and conn.ahead is None, name
        conn.close()
    finally:
        client.close()
        cluster.close()
    one = _job("real_trim", [(str(tmp_path / "one.tsv"), "tsv")])
    run_in_process(one, make_sinks(one), factory)
    for name in ("taken", "other"):
        assert (tmp_path / f"{name}.tsv").read_bytes() == (tmp_path / "one.tsv").read_bytes(), name


def test_the_command_line_sends_a_cluster_its_orders_before_it_imports_numba(tmp_path):
    """``gamut scan --cluster tcp://... --device cuda`` joins the cluster and sends its workers their
    orders before it imports Numba (the scan code: 0.3-0.4 s of the client's start on the H200 hosts);
    here the command is stopped as the orders go out, leaving no output."""
    pytest.importorskip("distributed")
    import subprocess
    import sys

    cluster, client = _local_cluster(1)
    try:
        out = tmp_path / "o.tsv"
        script = f"""
import sys
import gamut.cluster as c
sent = c.PinnedStart.__init__
def init(self, *a, **k):
    sent(self, *a, **k)
    print("numba imported:", "numba" in sys.modules, flush=True)
    raise SystemExit(3)
c.PinnedStart.__init__ = init
from gamut.cli import main
main(["scan", {str(DATA / "real_trim" / "query.fa")!r}, {str(DATA / "real_trim" / "reference.fa")!r},
      "--device", "cuda", "--cluster", {cluster.scheduler_address!r}, "-o", {str(out)!r}])
"""
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    finally:
        client.close()
        cluster.close()
    assert done.returncode == 3, done.stderr
    assert "numba imported: False" in done.stdout, done.stdout + done.stderr
    assert not out.exists()
