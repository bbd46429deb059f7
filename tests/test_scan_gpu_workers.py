"""Several GPUs (``--gpus 0,1``; #24): this process and a spawned worker sharing "GPU 0", each
scanning with the host build of the CUDA kernels, give byte for byte the output of one process,
and a worker that dies is a one-line error that leaves the old output alone."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scan_host import build_scan_host, host_engine_factory

from gamut.errors import GamutError
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.job import ScanJob
from gamut.scanning.pipeline.partitioned import run_partitioned
from gamut.scanning.pipeline.runners import make_sinks, run_in_process

CASE = Path(__file__).parent / "data" / "miranda" / "real_trim"
#: Small partitions: real_trim's 160 pairs (about 2 M cells) in several.
PARTS = {"partition_cells": 300_000}


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory) -> str:
    return build_scan_host(tmp_path_factory.mktemp("scan_host"))


def _job(outputs, **extra) -> ScanJob:
    return ScanJob.from_files(str(CASE / "query.fa"), str(CASE / "reference.fa"), ScanParams(),
                              outputs=outputs, device="cpu", threads=1, progress=False, **extra)


_SINGLE: dict[str, bytes] = {}


def single(host_lib: str, fmt: str, tmp_path: Path) -> bytes:
    """The in-process output with the same (host) engine."""
    if fmt not in _SINGLE:
        out = tmp_path / f"single.{fmt}"
        job = _job([(str(out), fmt)])
        run_in_process(job, make_sinks(job), host_engine_factory(host_lib))
        _SINGLE[fmt] = out.read_bytes()
    return _SINGLE[fmt]


@pytest.mark.parametrize("fmt", ["miranda", "tsv"])
def test_two_workers_on_one_gpu_match_one_process(host_lib, fmt, tmp_path):
    out = tmp_path / f"workers.{fmt}"
    job = _job([(str(out), fmt)], **PARTS)
    run_partitioned(job, make_sinks(job), host_engine_factory(host_lib, meet=str(tmp_path / "met")),
                    gpu_workers=[0, 0])
    assert (tmp_path / "met").exists()  # the worker made its engine before this process began
    assert out.read_bytes() == single(host_lib, fmt, tmp_path)


def test_two_workers_with_a_run_dir_and_two_outputs(host_lib, tmp_path):
    outs = [(str(tmp_path / "w.txt"), "miranda"), (str(tmp_path / "w.tsv"), "tsv")]
    job = _job(outs, run_dir=str(tmp_path / "run"), **PARTS)
    run_partitioned(job, make_sinks(job), host_engine_factory(host_lib), gpu_workers=[0, 0])
    assert Path(outs[0][0]).read_bytes() == single(host_lib, "miranda", tmp_path)
    assert Path(outs[1][0]).read_bytes() == single(host_lib, "tsv", tmp_path)
    assert len(list((tmp_path / "run").rglob("*"))) > 3
    for path, _ in outs:  # resumed: every partition read back from the run directory
        Path(path).unlink()
    run_partitioned(job, make_sinks(job), host_engine_factory(host_lib, crash_in_worker=True), gpu_workers=[0, 0])
    assert Path(outs[0][0]).read_bytes() == single(host_lib, "miranda", tmp_path)


def test_a_dead_worker_is_a_one_line_error_and_keeps_the_old_output(host_lib, tmp_path):
    out = tmp_path / "out.txt"
    out.write_bytes(b"old output\n")
    job = _job([(str(out), "miranda")], **PARTS)
    with pytest.raises(GamutError) as info:
        run_partitioned(job, make_sinks(job), host_engine_factory(host_lib, crash_in_worker=True), gpu_workers=[0, 0])
    message = str(info.value)
    assert "GPU worker process died" in message and "\n" not in message
    assert out.read_bytes() == b"old output\n"


def test_one_gpu_keeps_the_in_process_path():
    from gamut.scanning.pipeline.runners import pick_runner

    job = _job([(None, "miranda")])
    assert job.gpu_workers == [] and not job.partitioned and pick_runner(job) is run_in_process


@pytest.mark.gpu
def test_cli_two_workers_sharing_a_gpu_match_one_gpu(tmp_path):
    """``gamut miranda q r --device cuda --gpus 0,0`` (two worker processes on GPU 0) gives the
    bytes of ``--gpus 0`` (one process)."""
    outs = {}
    for gpus in ("0", "0,0"):
        out = tmp_path / f"gpus{gpus.replace(',', '_')}.txt"
        subprocess.run([sys.executable, "-m", "gamut", "miranda", "query.fa", "reference.fa", "-trim", "600",
                        "--device", "cuda", "--gpus", gpus, "--partition-cells", "300000", "-out", str(out)],
                       cwd=CASE, check=True)
        outs[gpus] = out.read_bytes()
    assert outs["0,0"] == outs["0"] and outs["0"]


def _task_here_or_there(shared, value: int):
    """A task: (pid of the process that ran it, value * 2). In a worker, ``shared`` is a file it
    creates; here it is (that file, timeout): the first task here waits until a worker ran one."""
    import os
    import time

    if isinstance(shared, tuple):
        flag, timeout = shared
        deadline = time.monotonic() + timeout
        while not os.path.exists(flag) and time.monotonic() < deadline:
            time.sleep(0.01)
    else:
        open(shared, "a").close()
    return os.getpid(), value * 2


def _warm(shared) -> None:
    return None


def _fail(shared, value: int):
    raise ValueError(f"task {value} failed")


def test_this_process_and_a_worker_share_the_tasks_in_order(tmp_path):
    """run_in_order with ``local``: this process takes the first task at once, the worker takes
    tasks once started, and every result comes back once, whoever ran it (here the caller holds
    every result: tasks still go out one at a time)."""
    import os

    from gamut.scanning.pipeline.gpu_workers import GpuWorkers, run_in_order

    flag = str(tmp_path / "worker-ran")
    pool = GpuWorkers([0])
    got: dict = {}
    try:
        for key, value in run_in_order(pool, _task_here_or_there, flag, ((k, (k,)) for k in range(12)),
                                       local=(flag, 120.0), warm=_warm, held=lambda: len(got)):
            got[key] = value
            assert len(got) <= 12
    finally:
        pool.close()
    assert sorted(got) == list(range(12))
    assert all(v[1] == 2 * k for k, v in got.items())
    pids = {v[0] for v in got.values()}
    assert got[0][0] == os.getpid() and len(pids) == 2
    assert not pool.workers


def test_an_error_in_a_worker_task_is_raised_here_and_the_workers_stop():
    from gamut.scanning.pipeline.gpu_workers import GpuWorkers, run_in_order

    pool = GpuWorkers([0])
    with pytest.raises(ValueError, match="failed"):
        for _ in run_in_order(pool, _fail, None, ((k, (k,)) for k in range(3))):
            pass
    assert not pool.workers


def test_worker_gpus_are_read_from_the_command_line(monkeypatch, tmp_path):
    from gamut.cli import scan_worker_gpus
    from gamut.cuda.device import visible_gpu_count

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert scan_worker_gpus(["scan", "q", "r", "--device", "cuda", "--gpus", "all"]) == [1, 2]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")

    assert scan_worker_gpus(["miranda", "q", "r", "--device", "cuda", "--gpus", "0,1,3"]) == [1, 3]
    assert scan_worker_gpus(["scan", "q", "r", "--device=cuda", "--gpus=2,2"]) == [2]
    assert scan_worker_gpus(["scan", "q", "r", "--device", "cuda", "--gpus", "0"]) == []
    assert scan_worker_gpus(["scan", "q", "r", "--device", "cpu", "--gpus", "0,1"]) == []
    assert scan_worker_gpus(["scan", "q", "r", "--device", "cuda", "--gpus", "all"]) == []
    assert scan_worker_gpus(["fold", "x", "--device", "cuda", "--gpus", "0,1"]) == []
    assert scan_worker_gpus(["scan", "q", "r", "--device", "cuda", "--gpus", "0,1", "--cluster", "local:2"]) == []
    for k in range(4):
        (tmp_path / f"0000:0{k}:00.0").mkdir()
    assert visible_gpu_count({}, str(tmp_path)) == 4
    assert visible_gpu_count({"CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b"}, str(tmp_path)) == 2
    assert visible_gpu_count({}, str(tmp_path / "none")) == 0


def test_workers_started_early_serve_the_run_and_stop_with_the_context():
    from gamut.scanning.pipeline.gpu_workers import prestarted, workers_for

    with prestarted([0]) as pool:
        assert pool is not None and len(pool.workers) == 1
        assert workers_for([0]) == (pool, False)  # the run uses them, and leaves them to the context
        other, owned = workers_for([1])
        assert other is not pool and owned and not other.workers  # not started until a run needs them
    assert not pool.workers
    with prestarted([]) as none:
        assert none is None


def test_kept_workers_outlive_a_command_and_serve_the_next(tmp_path):
    """Inside kept_workers (gamut serve), the workers of one command serve the next on the same
    GPUs (same processes); a pool whose worker ended is started again; all stop with the block."""
    from gamut.scanning.pipeline.gpu_workers import kept_workers, prestarted, run_in_order

    flag = str(tmp_path / "worker-ran")
    with kept_workers():
        pids = []
        for _ in range(2):
            with prestarted([0]) as pool:
                got = dict(run_in_order(pool, _task_here_or_there, flag, ((k, (k,)) for k in range(4)), warm=_warm))
                assert sorted(got) == list(range(4))
                pids.append({v[0] for v in got.values()})
        assert pids[0] == pids[1] and pool.alive()
        pool.workers[0].process.kill()
        pool.workers[0].process.join()
        with prestarted([0]) as again:
            assert again is not pool and again.alive()
            assert dict(run_in_order(again, _task_here_or_there, flag, ((k, (k,)) for k in range(2)), warm=_warm))
        assert not pool.workers
    assert not again.workers
