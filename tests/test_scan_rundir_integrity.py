"""Run directories never reuse a damaged part, refuse unusable directories in one line, and a
failed Dask cluster or an unguarded script is one line too (#15 follow-up)."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gamut.cli import main
from gamut.io import tempfiles
from gamut.io.tempfiles import user_name
from gamut.scanning.pipeline.rundir import computed_by_run

CASE = Path(__file__).parent / "data" / "miranda" / "clip_quiet"
ROOT = Path(__file__).resolve().parent.parent
# clip_quiet: 32,000 pairs, 8 partitions of 4,000.
PARTS = ["--partition-pairs", "4000"]


def _scan(out: Path, *extra: str) -> int:
    """``gamut miranda`` on clip_quiet (absolute paths, so every output names the same inputs)."""
    return main(["miranda", str(CASE / "query.fa"), str(CASE / "reference.fa"), "-quiet", "--device", "cpu",
                 "-out", str(out), *extra])


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> bytes:
    """The output of a run without a run directory."""
    out = tmp_path_factory.mktemp("clean") / "clean.txt"
    assert _scan(out) == 0
    return out.read_bytes()


@pytest.fixture
def stored(tmp_path, clean) -> Path:
    """A run directory holding all 8 parts of a finished run."""
    run_dir = tmp_path / "run"
    assert _scan(tmp_path / "first.txt", "--run-dir", str(run_dir), *PARTS) == 0
    assert (tmp_path / "first.txt").read_bytes() == clean
    assert len(list((run_dir / "parts").glob("*.part"))) == 8
    return run_dir


def _one_line(err: str) -> str:
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("damage", ["truncated", "flipped byte"])
def test_a_damaged_part_is_recomputed(stored, damage, tmp_path, clean, capsys):
    part = stored / "parts" / "00000003.part"
    data = part.read_bytes()
    if damage == "truncated":
        part.write_bytes(data[: len(data) // 2])
    else:  # same length: only the checksum tells
        part.write_bytes(data[:100] + bytes([data[100] ^ 0x20]) + data[101:])
    capsys.readouterr()
    out = tmp_path / "resumed.txt"
    assert _scan(out, "--run-dir", str(stored)) == 0
    err = _one_line(capsys.readouterr().err)
    assert f"run dir {stored}: part 3 did not verify (truncated or changed); recomputing it" in err
    assert out.read_bytes() == clean
    assert computed_by_run(stored)[2] == [3]
    assert part.read_bytes() == data


def test_parts_without_checksums_are_recomputed(stored, tmp_path, clean, capsys):
    """A manifest of an older gamut records no checksums: none of its parts is trusted."""
    manifest = stored / "manifest.json"
    old = json.loads(manifest.read_text())
    del old["parts"]
    manifest.write_text(json.dumps(old))
    capsys.readouterr()
    assert _scan(tmp_path / "resumed.txt", "--run-dir", str(stored)) == 0
    err = _one_line(capsys.readouterr().err)
    assert "parts 0-7 did not verify (no recorded checksum" in err and "recomputing them" in err
    assert (tmp_path / "resumed.txt").read_bytes() == clean
    assert computed_by_run(stored)[2] == list(range(8))
    records = json.loads(manifest.read_text())["parts"]
    assert sorted(records, key=int) == [str(k) for k in range(8)]
    assert all(records[str(k)]["bytes"] == (stored / "parts" / f"{k:08d}.part").stat().st_size for k in range(8))


def test_stale_temporary_files_are_removed_and_new_ones_registered(stored, tmp_path, clean, monkeypatch):
    import gamut.scanning.pipeline.rundir as rundir

    owner = f"gamut-{user_name()}"  # files of a run of this user killed outright: unlocked
    stale = [stored / "parts" / f".00000005.part.{owner}-4242.abcd1234.tmp",
             stored / f".manifest.json.{owner}-4242.abcd1234.tmp"]
    for path in stale:
        path.write_bytes(b"x" * 1000)
    (stored / "parts" / "00000005.part").unlink()  # so that this run stores a part
    registered: list[Path] = []
    real = rundir.temporary_file

    def spy(path):
        registered.append(Path(path))
        assert Path(path).name.endswith(".tmp") and not any(p.exists() for p in stale)
        return real(path)

    monkeypatch.setattr(rundir, "temporary_file", spy)
    assert _scan(tmp_path / "resumed.txt", "--run-dir", str(stored)) == 0
    assert not any(path.exists() for path in stale)
    assert (tmp_path / "resumed.txt").read_bytes() == clean
    assert any(p.parent == stored / "parts" and p.name.startswith(f".00000005.part.{owner}-{os.getpid()}.")
               for p in registered)
    assert not list(stored.rglob("*.tmp"))


@pytest.mark.parametrize("where", ["file", "uncreatable", "unwritable", "read-only"])
def test_unusable_run_dir_is_one_line(where, tmp_path, capsys, monkeypatch):
    if where == "file":
        run_dir = tmp_path / "run"
        run_dir.write_text("not a directory\n")
        expected = f"--run-dir {run_dir} is not a directory"
    elif where == "uncreatable":
        run_dir = Path("/proc/self/gamut-run")
        expected = f"--run-dir {run_dir}: cannot create the directory"
    elif where == "unwritable":  # exists; root may not create files in it either
        run_dir = Path("/proc/self")
        expected = f"--run-dir {run_dir} is not writable"
    else:  # as root, permission bits do not stop writes: make the probe fail as on a read-only mount
        run_dir = tmp_path / "run"
        run_dir.mkdir()
        real = tempfiles.create

        def read_only(target):
            if Path(target).parent == run_dir:
                raise OSError(30, "Read-only file system")
            return real(target)

        monkeypatch.setattr(tempfiles, "create", read_only)
        expected = f"--run-dir {run_dir} is not writable: creating a file in it failed (Read-only file system)"
    out = tmp_path / "out.txt"
    capsys.readouterr()
    assert _scan(out, "--run-dir", str(run_dir)) == 1
    err = _one_line(capsys.readouterr().err)
    assert err.startswith("gamut: error: ") and expected in err
    assert not out.exists() and not list(tmp_path.glob(".out.txt*"))


@pytest.fixture(scope="module")
def threads_cluster():
    """A Dask cluster of one in-process worker thread (starts in about a second)."""
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster:
        yield cluster.scheduler_address


@pytest.mark.parametrize("failure", ["cancelled", "killed worker"])
def test_cluster_failure_is_one_line_and_the_run_resumes(threads_cluster, failure, tmp_path, clean, capsys,
                                                         monkeypatch):
    """The third partition result the client asks for fails as when the cluster is gone: one
    line, no output, the two partitions delivered kept; the same command without the cluster
    finishes the run."""
    from distributed import Future
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    real = Future.result
    calls = []

    def failing(self, *args, **kwargs):
        calls.append(self.key)
        if len(calls) == 3:
            if failure == "cancelled":
                raise FutureCancelledError(self.key, "scheduler-connection-lost")
            raise KilledWorker(self.key, SimpleNamespace(address="tcp://127.0.0.1:1"), 3)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Future, "result", failing)
    run_dir, out = tmp_path / "run", tmp_path / "out.txt"
    capsys.readouterr()
    assert _scan(out, "--cluster", threads_cluster, "--run-dir", str(run_dir), *PARTS) == 1
    err = _one_line(capsys.readouterr().err)
    assert err.startswith("gamut: error: the Dask cluster failed: partition ")
    why = "was cancelled (reason: scheduler-connection-lost)" if failure == "cancelled" else \
        "killed every worker that ran it (4 workers died"
    assert why in err
    assert f"2 of 8 partitions are kept in {run_dir}; check the workers' logs and run the same command again" in err
    assert not out.exists()
    monkeypatch.undo()
    assert _scan(out, "--run-dir", str(run_dir)) == 0
    assert out.read_bytes() == clean
    computed = computed_by_run(run_dir)
    assert len(computed[1]) == 2 and sorted(computed[1] + computed[2]) == list(range(8))


def _python(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(code)
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env={**os.environ, "PYTHONPATH": path},
                          capture_output=True, text=True, timeout=120)


def test_local_cluster_in_a_script_without_main_guard(tmp_path):
    """Refused in one line before any worker starts, naming the script's line and the fix."""
    pytest.importorskip("distributed")
    done = _python(
        "import gamut\n"
        "from gamut.errors import UsageError\n"
        "try:\n"
        f"    gamut.scan({str(CASE / 'query.fa')!r}, {str(CASE / 'reference.fa')!r}, device='cpu', cluster='local:2')\n"
        "except UsageError as exc:\n"
        "    print(exc)\n", tmp_path)
    assert done.returncode == 0, done.stderr
    message = done.stdout
    assert message.count("\n") == 1
    assert f"{tmp_path / 'script.py'}, line 4, starts a local Dask cluster (local:2) outside an " \
           "'if __name__ == \"__main__\":' block" in message
    assert "Nanny" not in done.stderr + message


def test_main_guard_detection(tmp_path):
    """Only calls from the script's top level outside the guard are flagged."""
    done = _python(
        "from gamut.cluster import unguarded_main_call\n"
        "def call():\n"
        "    return unguarded_main_call()\n"
        "print(call())\n"
        "if '__main__' == __name__:\n"
        "    print(call())\n"
        "    def later():\n"
        "        return call()\n", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str((str(tmp_path / "script.py"), 4)), "None"]
