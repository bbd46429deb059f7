"""Several GPUs (``--gpus 0,1``; #24): this process and a spawned worker sharing "GPU 0", each
scanning with the host build of the CUDA kernels, give byte for byte the output of one process,
and a worker that dies is a one-line error that leaves the old output alone."""
from __future__ import annotations

import gc
import os
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


@pytest.mark.parametrize("run_dir", [False, True])
def test_results_in_shared_memory_give_the_same_outputs(host_lib, tmp_path, monkeypatch, run_dir):
    """Every worker result of a byte or more comes back as a memfd (the threshold lowered from
    1 MiB): the outputs (two formats: a tuple of results) and a run directory's parts are those of
    one process."""
    from gamut.scanning.pipeline import gpu_workers

    monkeypatch.setattr(gpu_workers, "SHARED_MIN_BYTES", 1)
    outs = [(str(tmp_path / "w.txt"), "miranda"), (str(tmp_path / "w.tsv"), "tsv")]
    job = _job(outs, run_dir=str(tmp_path / "run") if run_dir else None, **PARTS)
    run_partitioned(job, make_sinks(job), host_engine_factory(host_lib, meet=str(tmp_path / "met")),
                    gpu_workers=[0, 0])
    assert (tmp_path / "met").exists()
    for path, fmt in outs:
        assert Path(path).read_bytes() == single(host_lib, fmt, tmp_path), fmt


def test_every_format_takes_partition_data_as_memory_views(host_lib, tmp_path, monkeypatch):
    """A worker's shared result arrives as a memoryview of a mapping, not bytes: every format's
    sink, and a run directory, take it so."""
    from gamut.scanning.pipeline import partitioned

    compute = partitioned.compute_partition

    def as_views(*args):
        data = compute(*args)
        return tuple(memoryview(d) for d in data) if isinstance(data, tuple) else memoryview(data)

    monkeypatch.setattr(partitioned, "compute_partition", as_views)
    outs = [(str(tmp_path / "w.txt"), "miranda"), (str(tmp_path / "w.tsv"), "tsv"),
            (str(tmp_path / "w.parquet"), "parquet"), (str(tmp_path / "w.jsonl"), "jsonl")]
    job = _job(outs, run_dir=str(tmp_path / "run"), **PARTS)
    run_partitioned(job, make_sinks(job), host_engine_factory(host_lib))
    for path, fmt in outs:
        assert Path(path).read_bytes() == single(host_lib, fmt, tmp_path), fmt


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


def test_two_workers_share_the_tasks_and_each_result_comes_back_once(tmp_path):
    """run_in_order: whoever is free takes the next task, every result comes back once, whoever ran
    it (here the caller holds every result: tasks still go out a window at a time)."""
    from gamut.scanning.pipeline.gpu_workers import GpuWorkers, OneAtATime, run_in_order

    flag = str(tmp_path / "worker-ran")
    pool = GpuWorkers([0, 0])
    got: dict = {}
    try:
        for key, value in run_in_order(pool, OneAtATime(_task_here_or_there), flag, ((k, (k,)) for k in range(12)),
                                       warm=_warm, held=lambda: len(got)):
            got[key] = value
            assert len(got) <= 12
    finally:
        pool.close()
    assert sorted(got) == list(range(12))
    assert all(v[1] == 2 * k for k, v in got.items())
    assert not pool.workers


def _pinned_stream(obj, taken):
    """A stream of a worker of its own: (pid, its shared object, value * 2) for each task; fails at
    task ``("fail", k)`` when its shared object says so."""

    for key, value in taken:
        if obj == f"fail-{key}":
            raise ValueError(f"worker {obj} failed at task {key}")
        yield key, (os.getpid(), obj, value * 2)


def test_pinned_workers_run_their_own_tasks_in_order_within_their_window():
    """run_pinned (the striped runner's): worker k gets shared[k] and only tasks[k], its results in
    its order; a worker far ahead of what the caller has used waits (its window)."""
    from gamut.scanning.pipeline.gpu_pinned import run_pinned
    from gamut.scanning.pipeline.gpu_workers import GpuWorkers

    pool = GpuWorkers([0, 0])
    held = [0, 0]
    most = [0, 0]
    order: dict = {0: [], 1: []}
    try:
        streams = [[((0, k), k) for k in range(10)], [((1, k), k) for k in range(6)]]
        for (lane, k), (pid, obj, value) in run_pinned(pool, _pinned_stream, ["a", "b"], streams,
                                                       held=lambda lane: held[lane], window=2):
            assert obj == "ab"[lane] and value == 2 * k
            order[lane].append((k, pid))
            held[lane] += 1
            most[lane] = max(most[lane], held[lane])
            if held[lane] == 2:  # the caller uses its results two at a time
                held[lane] = 0
    finally:
        pool.close()
    assert [k for k, _ in order[0]] == list(range(10)) and [k for k, _ in order[1]] == list(range(6))
    assert len({pid for _, pid in order[0]}) == 1 and {pid for _, pid in order[0]} != {pid for _, pid in order[1]}
    assert max(most) <= 2


def test_a_pinned_worker_that_fails_is_raised_here_and_the_workers_stop():
    from gamut.scanning.pipeline.gpu_pinned import run_pinned
    from gamut.scanning.pipeline.gpu_workers import GpuWorkers

    pool = GpuWorkers([0, 0])
    with pytest.raises(ValueError, match="worker fail-2 failed at task 2"):
        for _ in run_pinned(pool, _pinned_stream, ["ok", "fail-2"], [[(k, k) for k in range(4)]] * 2):
            pass
    assert not pool.workers


def _big_result(shared, size: int):
    """A task: ``size`` bytes of a pattern, alone and in a tuple with a short one."""
    data = bytes(range(256)) * (size // 256)
    return data, (b"short", data[::-1])


def _open_fds() -> int:

    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir() or not hasattr(__import__("os"), "memfd_create"),
                    reason="needs Linux (memfd, /proc)")
def test_large_worker_results_come_back_in_shared_memory_without_leaking_descriptors():
    from gamut.scanning.pipeline.gpu_workers import SHARED_MIN_BYTES, GpuWorkers, OneAtATime, run_in_order

    pool = GpuWorkers([0])
    sizes = {0: SHARED_MIN_BYTES * 3, 1: 1024, 2: SHARED_MIN_BYTES}
    try:
        counts = []
        for _ in range(4):
            got = dict(run_in_order(pool, OneAtATime(_big_result), None, ((k, (n,)) for k, n in sizes.items())))
            for k, n in sizes.items():
                data, (short, backwards) = got[k]
                expected = bytes(range(256)) * (n // 256)
                assert bytes(data) == expected and short == b"short" and bytes(backwards) == expected[::-1]
                assert isinstance(data, memoryview) == (n >= SHARED_MIN_BYTES)
            del got, data, backwards
            gc.collect()  # objects of earlier tests, collected at any moment, hold descriptors of their own
            counts.append(_open_fds())
    finally:
        pool.close()
    assert len(set(counts[1:])) == 1, counts  # each mapping (and its descriptor) freed with its view


def _doubling_stream(obj, taken):
    """A stream: (pid, value * 2) for each task; fails at task ``obj`` in a worker."""

    for key, (value,) in taken:
        if isinstance(obj, int) and key == obj:
            raise ValueError(f"stream failed at task {key}")
        yield key, (os.getpid(), value * 2)


def test_streamed_tasks_come_back_once_each_from_two_workers():
    from gamut.scanning.pipeline.gpu_workers import GpuWorkers, run_in_order

    pool = GpuWorkers([0, 0])
    try:
        for _ in range(2):  # the same workers serve a second run
            got = dict(run_in_order(pool, _doubling_stream, None, ((k, (k,)) for k in range(40))))
            assert sorted(got) == list(range(40)) and all(v[1] == 2 * k for k, v in got.items())
    finally:
        pool.close()


def test_a_streamed_task_that_fails_in_a_worker_is_raised_here():
    from gamut.scanning.pipeline.gpu_workers import GpuWorkers, run_in_order

    pool = GpuWorkers([0])
    with pytest.raises(ValueError, match="stream failed at task 2"):
        for _ in run_in_order(pool, _doubling_stream, 2, ((k, (k,)) for k in range(6))):
            pass
    assert not pool.workers


def test_an_error_in_a_worker_task_is_raised_here_and_the_workers_stop():
    from gamut.scanning.pipeline.gpu_workers import GpuWorkers, OneAtATime, run_in_order

    pool = GpuWorkers([0])
    with pytest.raises(ValueError, match="failed"):
        for _ in run_in_order(pool, OneAtATime(_fail), None, ((k, (k,)) for k in range(3))):
            pass
    assert not pool.workers


def test_worker_gpus_are_read_from_the_command_line(monkeypatch, tmp_path):
    from gamut.cli import scan_worker_gpus
    from gamut.cuda.device import visible_gpu_count

    monkeypatch.delenv("GAMUT_WORKERS_PER_GPU", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")  # two worker processes on every GPU (a stripe each)
    assert scan_worker_gpus(["scan", "q", "r", "--device", "cuda", "--gpus", "all"]) == [0, 0, 1, 1, 2, 2]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")

    assert scan_worker_gpus(["miranda", "q", "r", "--device", "cuda", "--gpus", "0,1,3"]) == [0, 0, 1, 1, 3, 3]
    assert scan_worker_gpus(["scan", "q", "r", "--device=cuda", "--gpus=2,2"]) == [2, 2]  # the user's own placement
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


def test_worker_lanes_put_two_workers_on_each_of_several_gpus(monkeypatch):
    from gamut.errors import UsageError
    from gamut.scanning.pipeline.lanes import WORKERS_PER_GPU, worker_lanes

    monkeypatch.delenv("GAMUT_WORKERS_PER_GPU", raising=False)
    assert WORKERS_PER_GPU == 2
    assert worker_lanes([0, 1]) == [0, 0, 1, 1]
    assert worker_lanes([3, 1, 2]) == [3, 3, 1, 1, 2, 2]
    assert worker_lanes([0]) == [0] and worker_lanes([]) == []
    assert worker_lanes([0, 0]) == [0, 0] and worker_lanes([0, 1, 1]) == [0, 1, 1]  # named twice: as given
    monkeypatch.setenv("GAMUT_WORKERS_PER_GPU", "1")
    assert worker_lanes([0, 1]) == [0, 1]
    monkeypatch.setenv("GAMUT_WORKERS_PER_GPU", "3")
    assert worker_lanes([0, 1]) == [0, 0, 0, 1, 1, 1]
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("GAMUT_WORKERS_PER_GPU", bad)
        with pytest.raises(UsageError, match="GAMUT_WORKERS_PER_GPU"):
            worker_lanes([0, 1])


def test_a_job_on_several_gpus_has_two_workers_on_each(monkeypatch):
    from gamut.cuda import device

    monkeypatch.delenv("GAMUT_WORKERS_PER_GPU", raising=False)
    monkeypatch.setattr(device, "available_gpus", lambda: (0, 1))
    monkeypatch.setattr(device, "gpu_available", lambda: True)
    def on(gpus: str) -> ScanJob:
        return ScanJob.from_files(str(CASE / "query.fa"), str(CASE / "reference.fa"), ScanParams(),
                                  outputs=[(None, "miranda")], device="cuda", gpus=gpus, progress=False)

    assert on("0,1").gpu_workers == [0, 0, 1, 1] and on("0,1").partitioned
    assert on("all").gpu_workers == [0, 0, 1, 1]
    assert on("1,1").gpu_workers == [1, 1]
    assert on("1").gpu_workers == [] and not on("1").partitioned


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
    from gamut.scanning.pipeline.gpu_workers import OneAtATime, kept_workers, prestarted, run_in_order

    flag = str(tmp_path / "worker-ran")
    with kept_workers():
        pids = []
        for _ in range(2):
            with prestarted([0]) as pool:
                got = dict(run_in_order(pool, OneAtATime(_task_here_or_there), flag, ((k, (k,)) for k in range(4)), warm=_warm))
                assert sorted(got) == list(range(4))
                pids.append({v[0] for v in got.values()})
        assert pids[0] == pids[1] and pool.alive()
        pool.workers[0].process.kill()
        pool.workers[0].process.join()
        with prestarted([0]) as again:
            assert again is not pool and again.alive()
            assert dict(run_in_order(again, OneAtATime(_task_here_or_there), flag, ((k, (k,)) for k in range(2)), warm=_warm))
        assert not pool.workers
    assert not again.workers


def test_a_run_that_ends_before_its_kept_worker_is_ready_leaves_it_starting(tmp_path):
    """gamut serve: a command that ends before the worker started (it had nothing to scan) keeps the
    worker (it is not killed mid start-up), and the next command on those GPUs uses it."""
    from gamut.scanning.pipeline.gpu_workers import OneAtATime, kept_workers, prestarted, run_in_order

    flag = str(tmp_path / "worker-ran")
    with kept_workers():
        with prestarted([0]) as pool:
            pid = pool.workers[0].process.pid
            got = dict(run_in_order(pool, OneAtATime(_task_here_or_there), flag, [], warm=_warm))
            assert got == {} and not pool.workers[0].ready
        assert pool.alive()
        with prestarted([0]) as again:
            assert again is pool and pool.workers[0].process.pid == pid
            got = dict(run_in_order(pool, OneAtATime(_task_here_or_there), flag, ((k, (k,)) for k in range(4)), warm=_warm))
            assert {v[0] for v in got.values()} == {pid}
    assert not pool.workers


def test_closing_kills_every_worker_before_waiting_for_any():
    """Each worker's end (the system freeing its CUDA context) is waited for after every worker
    was sent its kill, so the ends overlap."""
    from gamut.scanning.pipeline.gpu_workers import GpuWorkers

    events = []

    class Fake:
        def __init__(self, k):
            self.k = k

        def kill(self):
            events.append(("kill", self.k))

        def stop(self):
            events.append(("stop", self.k))

    pool = GpuWorkers([0, 0, 1])
    pool.workers = [Fake(k) for k in range(3)]
    pool.close()
    assert events == [("kill", 0), ("kill", 1), ("kill", 2), ("stop", 0), ("stop", 1), ("stop", 2)]
    assert pool.workers == []


def test_a_command_that_ends_leaves_its_killed_workers_to_the_system():
    """close(wait=False): every worker is killed, none is waited for, and the interpreter's exit
    will not wait for them either (they are no longer multiprocessing's children)."""
    import multiprocessing

    from gamut.scanning.pipeline.gpu_workers import GpuWorkers

    pool = GpuWorkers([0, 0]).start()
    processes = [w.process for w in pool.workers]
    pool.close(wait=False)
    assert pool.workers == [] and not set(processes) & set(multiprocessing.active_children())
    for process in processes:  # (this test's own process reaps them, unless close() found one ended already)
        try:
            _, status = os.waitpid(process.pid, 0)
        except ChildProcessError:  # reaped by the check close() makes before it kills (is_alive)
            assert process.exitcode == -9
            continue
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9


def test_a_worker_process_starts_its_gpu_before_it_imports_numpy_or_numba():
    """A spawned worker imports the module of its entry point before it runs: that module must not
    bring NumPy or Numba (0.3-0.7 s), which a worker imports only after it has started CUDA's driver on
    a thread (a memfd helper imported at the top of the hand-over module delayed every worker's CUDA
    start by 0.7 s on 2x H200)."""
    code = ("import sys, gamut.scanning.pipeline.gpu_workers; "
            "print(sorted(m for m in ('numpy', 'numba', 'cupy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
