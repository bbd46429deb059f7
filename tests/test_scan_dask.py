"""Cluster and resumable scans (#15): a Dask LocalCluster, a scheduler and workers started as
processes on 127.0.0.1, killed clients and workers; every output byte for byte a single process'."""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("distributed")

from gamut.cli import main  # noqa: E402
from gamut.scanning.api import scan_files  # noqa: E402
from gamut.scanning.miranda_cli import banner  # noqa: E402
from gamut.scanning.params import ScanParams  # noqa: E402
from gamut.scanning.pipeline.rundir import computed_by_run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CASES = Path(__file__).parent / "data" / "miranda"
#: The SIGKILL hooks (a launcher and a Dask worker preload; the package has none).
HOOKS = Path(__file__).parent / "scan_kill_hooks.py"
SPLICE = Path(__file__).parent / "data" / "splice"
PY = sys.executable


def _env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def _args(case: str) -> list[str]:
    return ["query.fa", "reference.fa", *(CASES / case / "args.txt").read_text().split()]


def _miranda(case: str, out: Path, *extra: str, monkeypatch) -> bytes:
    """``gamut miranda`` on a golden case, in this process; the output's bytes."""
    monkeypatch.chdir(CASES / case)
    assert main(["miranda", *_args(case), "--device", "cpu", "-out", str(out), *extra]) == 0
    return out.read_bytes()


_SINGLE: dict[tuple, bytes] = {}


def single(case: str, tmp_path: Path, monkeypatch, *extra: str) -> bytes:
    """The single-process output (cached per case and options)."""
    key = (case, extra)
    if key not in _SINGLE:
        _SINGLE[key] = _miranda(case, tmp_path / "single.txt", *extra, monkeypatch=monkeypatch)
    return _SINGLE[key]


# Small partitions, so that every run has several (clip_quiet: 32,000 pairs in 8; real_trim: 160
# pairs of about 2 M cells; real_sc120_en-15: 320 pairs, rows of 40 cut across).
PARTS = {"clip_quiet": ["--partition-pairs", "4000"], "real_trim": ["--partition-cells", "300000"],
         "real_keyval": ["--partition-pairs", "23"], "real_sc120_en-15": ["--partition-pairs", "50"]}


@pytest.fixture(scope="module")
def kill_files(tmp_path_factory) -> Path:
    """A folder for the worker-kill trigger files (the workers read the path from their env)."""
    return tmp_path_factory.mktemp("kill")


@pytest.fixture(scope="module")
def local_cluster(kill_files):
    """A LocalCluster of 2 worker processes of 1 thread each."""
    from distributed import Client, LocalCluster

    old = os.environ.get("GAMUT_TEST_KILL_WORKER")
    os.environ["GAMUT_TEST_KILL_WORKER"] = str(kill_files / "local")
    try:
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None, silence_logs=logging.ERROR,
                          preload=[str(HOOKS)]) as cluster, Client(cluster) as client:
            client.wait_for_workers(2, timeout=120)
            yield SimpleNamespace(client=client, address=cluster.scheduler_address, trigger=kill_files / "local")
    finally:
        if old is None:
            os.environ.pop("GAMUT_TEST_KILL_WORKER", None)
        else:
            os.environ["GAMUT_TEST_KILL_WORKER"] = old


@pytest.fixture(scope="module")
def tcp_cluster(tmp_path_factory, kill_files):
    """``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1, killed at the end."""
    from distributed import Client

    folder = tmp_path_factory.mktemp("scheduler")
    scheduler_file = folder / "scheduler.json"
    env = _env(GAMUT_TEST_KILL_WORKER=str(kill_files / "tcp"))
    procs: list[subprocess.Popen] = []

    def start(*args: str) -> None:
        log = open(folder / f"proc{len(procs)}.log", "wb")
        procs.append(subprocess.Popen([PY, "-m", *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True, cwd=folder))
        log.close()

    try:
        start("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
              "--scheduler-file", str(scheduler_file))
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert time.monotonic() < deadline, "the scheduler did not start"
            assert procs[0].poll() is None, (folder / "proc0.log").read_text()
            time.sleep(0.2)
        time.sleep(0.2)  # the file is written whole, but let it settle
        for _ in range(2):
            start("distributed.cli.dask_worker", "--scheduler-file", str(scheduler_file), "--nworkers", "1",
                  "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1", "--preload", str(HOOKS))
        address = json.loads(scheduler_file.read_text())["address"]
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
            yield SimpleNamespace(client=client, address=address, trigger=kill_files / "tcp")
    finally:
        for proc in reversed(procs):  # each leads its own process group (nanny and worker)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)


@pytest.fixture(params=["local", "tcp"])
def cluster(request):
    return request.getfixturevalue(f"{request.param}_cluster")


@pytest.mark.parametrize("case", ["real_trim", "real_sc120_en-15", "real_keyval", "clip_quiet"])
def test_cluster_output_is_the_single_process_output(cluster, case, tmp_path, monkeypatch):
    expected = single(case, tmp_path, monkeypatch)
    got = _miranda(case, tmp_path / "cluster.txt", "--cluster", cluster.address, *PARTS[case],
                   monkeypatch=monkeypatch)
    assert got == expected


@pytest.mark.parametrize("fmt", ["tsv", "jsonl", "parquet", "miranda"])
def test_every_format_with_restrict(local_cluster, fmt, tmp_path):
    """``gamut scan`` in every format, a restricted scan included, on the cluster and alone."""
    case = CASES / "odd_inputs"
    restrict = tmp_path / "pairs.txt"
    qids = [line[1:].split()[0] for line in (case / "query.fa").read_text().splitlines() if line.startswith(">")]
    rids = [line[1:].split()[0] for line in (case / "reference.fa").read_text().splitlines() if line.startswith(">")]
    restrict.write_text("".join(f"{q} {r}\n" for q in qids[::2] for r in rids[1::3]))
    outputs = []
    restricts = ([], ["--restrict", str(restrict)]) if fmt in ("miranda", "parquet") else ([],)
    for extra in ([], ["--cluster", local_cluster.address, "--partition-pairs", "20"]):
        for restricted in restricts:
            out = tmp_path / f"out{len(outputs)}.{fmt}"
            argv = ["scan", str(case / "query.fa"), str(case / "reference.fa"), "--format", fmt, "-o", str(out),
                    "--device", "cpu", "--score-threshold", "120", *restricted, *extra]
            assert main(argv) == 0
            outputs.append(out.read_bytes())
    half = len(outputs) // 2
    assert outputs[:half] == outputs[half:]
    assert len(set(outputs)) == half


def test_api_table_on_a_cluster(local_cluster):
    import pandas as pd

    import gamut

    case = CASES / "real_sc120_en-15"
    kwargs = dict(device="cpu", score_threshold=120, energy_threshold=-15)
    alone = gamut.scan(str(case / "query.fa"), str(case / "reference.fa"), **kwargs)
    spread = gamut.scan(str(case / "query.fa"), str(case / "reference.fa"), cluster=local_cluster.client,
                        partition_cells=1_000_000, **kwargs)
    assert len(alone) > 0
    pd.testing.assert_frame_equal(alone, spread)


def test_cluster_local_n_from_the_command_line(tmp_path, monkeypatch):
    """``--cluster local:2`` starts (and stops) its own worker processes."""
    expected = single("real_trim", tmp_path, monkeypatch)
    got = _miranda("real_trim", tmp_path / "local2.txt", "--cluster", "local:2", *PARTS["real_trim"],
                   monkeypatch=monkeypatch)
    assert got == expected


def _run_killed_then_resumed(tmp_path: Path, extra: list[str]) -> tuple[bytes, dict[int, list[int]], int]:
    """A ``gamut miranda`` process that SIGKILLs itself after storing 3 partitions, then the same
    command again; the second output, which run computed which partitions, and their number."""
    case = "clip_quiet"
    out, run_dir = tmp_path / "resumed.txt", tmp_path / "run"
    argv = [PY, "-m", "gamut", "miranda", *_args(case), "--device", "cpu", "-out", str(out), "--run-dir",
            str(run_dir), *PARTS[case], *extra]
    dying = [PY, str(HOOKS), "--die-after-partitions", "3", *argv[3:]]  # argv without '-m gamut'
    first = subprocess.run(dying, cwd=CASES / case, env=_env(), capture_output=True, timeout=240)
    assert first.returncode == -signal.SIGKILL, first.stderr.decode()
    assert not out.exists()  # the output appears only whole
    second = subprocess.run(argv, cwd=CASES / case, env=_env(), capture_output=True, timeout=240)
    assert second.returncode == 0, second.stderr.decode()
    count = len(list((run_dir / "parts").glob("*.part")))
    return out.read_bytes(), computed_by_run(run_dir), count


@pytest.mark.parametrize("where", ["single", "tcp"])
def test_killed_run_resumes_from_its_run_dir(where, tmp_path, monkeypatch, request):
    extra = ["--cluster", request.getfixturevalue("tcp_cluster").address] if where == "tcp" else []
    got, computed, count = _run_killed_then_resumed(tmp_path, extra)
    assert got == single("clip_quiet", tmp_path, monkeypatch)
    assert count == 8 and sorted(computed) == [1, 2]
    assert len(computed[1]) == 3  # the first run died after storing its third partition
    if where == "single":
        assert computed[1] == [0, 1, 2]  # alone, partitions run in order
    # The second run computed exactly the partitions the first had not finished.
    assert sorted(computed[2]) == sorted(set(range(count)) - set(computed[1]))


def test_worker_killed_midway(cluster, tmp_path, monkeypatch):
    """A worker SIGKILLs itself when it starts partition 3: the run completes, each partition
    computed and written once, the output unchanged."""
    case = "clip_quiet"
    expected = single(case, tmp_path, monkeypatch)
    fired = Path(str(cluster.trigger) + ".fired")
    fired.unlink(missing_ok=True)
    cluster.trigger.write_text("3")
    run_dir = tmp_path / "run"
    # The in-process LocalCluster is given as its client (a second client of the same process on
    # another event loop trips over Dask's future states when a worker dies), the others by address.
    target = cluster.client if cluster.trigger.name == "local" else cluster.address
    out = tmp_path / "cluster.txt"
    monkeypatch.chdir(CASES / case)
    try:
        assert scan_files("query.fa", "reference.fa", ScanParams(), output=str(out), quiet=True, banner=banner(),
                          device="cpu", cluster=target, run_dir=run_dir, partition_pairs=4000) == 0
        got = out.read_bytes()
    finally:
        cluster.trigger.unlink(missing_ok=True)
    assert fired.exists() and not cluster.trigger.exists()  # a worker did die
    assert got == expected
    computed = computed_by_run(run_dir)
    assert sorted(computed[1]) == list(range(8))
    cluster.client.wait_for_workers(2, timeout=120)  # the nanny restarts it, for the tests after


def test_run_dir_refuses_other_inputs_or_options(tmp_path, monkeypatch, capsys):
    case = "real_trim"
    run_dir = str(tmp_path / "run")
    base = ["--run-dir", run_dir, *PARTS[case]]
    first = _miranda(case, tmp_path / "a.txt", *base, monkeypatch=monkeypatch)
    assert first == single(case, tmp_path, monkeypatch)
    # Same command: nothing left to compute, same output.
    assert _miranda(case, tmp_path / "b.txt", *base, monkeypatch=monkeypatch) == first
    assert sorted(computed_by_run(run_dir)) == [1]
    capsys.readouterr()
    assert main(["miranda", *_args(case), "-sc", "150", "-out", str(tmp_path / "c.txt"), *base]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "different options (params.score_threshold)" in err
    assert main(["miranda", *_args(case), "-out", str(tmp_path / "c.txt"), "--run-dir", run_dir,
                 "--partition-pairs", "3"]) == 1
    assert "leave --partition-cells out" in capsys.readouterr().err
    changed = tmp_path / "reference.fa"
    changed.write_bytes((CASES / case / "reference.fa").read_bytes().replace(b"A", b"C", 1))
    argv = ["miranda", "query.fa", str(changed), *_args(case)[2:], "-out", str(tmp_path / "c.txt"), *base]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "different input files (reference changed)" in err
    assert not (tmp_path / "c.txt").exists()


def test_without_dask_cluster_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    case = "real_trim"
    monkeypatch.chdir(CASES / case)
    assert main(["miranda", *_args(case), "-out", str(tmp_path / "x.txt"), "--cluster", "local:2"]) == 1
    err = capsys.readouterr().err
    assert "pip install 'gamut-rna[dask]'" in err and err.count("\n") == 1
    # --run-dir alone needs no Dask.
    got = _miranda(case, tmp_path / "y.txt", "--run-dir", str(tmp_path / "run"), monkeypatch=monkeypatch)
    assert got == single(case, tmp_path, monkeypatch)


def test_single_process_runs_do_not_import_dask(tmp_path):
    code = (
        "import sys, gamut, gamut.cluster, gamut.scanning.pipeline.partitioned\n"
        "from gamut.cli import main\n"
        f"assert main(['miranda', 'query.fa', 'reference.fa', '-out', {str(tmp_path / 'o.txt')!r}, '--run-dir',"
        f" {str(tmp_path / 'run')!r}]) == 0\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')]\n"
        "assert not bad, bad\n"
    )
    done = subprocess.run([PY, "-c", code], cwd=CASES / "sarscov2_default", env=_env(), capture_output=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr.decode()


def test_splice_on_a_cluster(local_cluster, tmp_path):
    from gamut.splicing.api import splice_many
    from gamut.splicing.files import load_cases
    from gamut.splicing.model import DEFAULT_GAP, DEFAULT_MATCH, DEFAULT_MISMATCH, ScoreParams

    params = ScoreParams(DEFAULT_MATCH, DEFAULT_MISMATCH, DEFAULT_GAP)
    cases = [fc.case for fc in load_cases(str(SPLICE / "gene.fa"), str(SPLICE / "candidates.gff3"),
                                          str(SPLICE / "cdna.fa"), params)]
    alone = splice_many(cases, device="cpu")
    spread = splice_many(cases, device="cpu", batch_size=1, cluster=local_cluster.client)
    assert [(r.score, list(r.chain)) for r in alone] == [(r.score, list(r.chain)) for r in spread]
    reports = []
    for extra in ([], ["--cluster", local_cluster.address]):
        out = tmp_path / f"splice{len(reports)}.txt"
        argv = ["splice", str(SPLICE / "gene.fa"), str(SPLICE / "candidates.gff3"), str(SPLICE / "cdna.fa"),
                "--device", "cpu", "-o", str(out), *extra]
        assert main(argv) == 0
        reports.append(out.read_text())
    assert reports[0] == reports[1] and reports[0].count("# target") == 3


def test_partitions_cover_the_pairs_in_order():
    """Partitions are consecutive pair ranges; their pairs are those of the plain order."""
    from gamut.scanning.api import as_records
    from gamut.scanning.pipeline.partitions import plan_partitions
    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.scan_loop import ScanInput

    si = ScanInput(as_records(str(CASES / "real_trim" / "query.fa"), "query"),
                   as_records(str(CASES / "real_trim" / "reference.fa"), "reference"), ScanParams(trim=600))
    parts = plan_partitions(si, 300_000, 1000)
    assert len(parts) > 3 and parts[0].start == 0 and parts[-1].stop == si.n_pairs
    assert all(a.stop == b.start for a, b in zip(parts, parts[1:]))
    whole = np.concatenate([si.pair_range(p.start, p.stop) for p in parts])
    assert np.array_equal(whole, np.concatenate(list(si.chunks(10**12, 10**9))))
    assert all(p.prev_query == (-1 if p.start == 0 else int(whole[p.start - 1, 0])) for p in parts)
    assert sum(p.cells for p in parts) == si.total_cells()


def test_parquet_row_groups_follow_the_single_process_chunks(tmp_path, monkeypatch):
    """Partitions (20 pairs) cut across the single-process chunks (13 pairs): the Parquet file
    still has one row group per chunk with hits, byte for byte."""
    import pyarrow.parquet as pq

    from gamut.scanning.engines.simd import SimdEngine

    # Runners take the chunk size from the engine: shrink the default CPU engine's.
    monkeypatch.setattr(SimdEngine, "preferred_chunk_pairs", 13)
    case = CASES / "odd_inputs"
    outputs = []
    for extra in ([], ["--run-dir", str(tmp_path / "run"), "--partition-pairs", "20"]):
        out = tmp_path / f"hits{len(outputs)}.parquet"
        assert main(["scan", str(case / "query.fa"), str(case / "reference.fa"), "--format", "parquet", "-o",
                     str(out), "--device", "cpu", "--score-threshold", "120", *extra]) == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert pq.ParquetFile(tmp_path / "hits0.parquet").num_row_groups > 3


def test_a_scheduler_address_is_joined_on_a_thread_and_let_go_if_unused(local_cluster):
    """``gamut scan --cluster tcp://...`` joins the cluster while it reads its inputs: the connection is
    made on a thread, taken once, and closed by ``discard`` when the command never used it."""
    from gamut.cluster import PendingConnection, connect, connect_soon

    pending = connect_soon(local_cluster.address)
    assert isinstance(pending, PendingConnection) and str(pending) == local_cluster.address
    conn = connect(pending)
    try:
        assert conn.n_workers == 2
        with pytest.raises(RuntimeError, match="taken already"):
            pending.result()
    finally:
        conn.close()
    unused = connect_soon(local_cluster.address)
    unused.discard()
    assert unused._outcome[0].client.status == "closed"
    assert connect_soon("local:2") == "local:2" and connect_soon(None) is None
