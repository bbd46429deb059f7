"""Temporary files are named for their owner, locked while written, and removed by the next run
into the same place only when their writer is gone and they are this user's (#44, item 5).

The last test kills a real ``gamut scan`` with SIGKILL while it writes a compressed output, then
runs it again: the rerun removes what the killed run left and writes the right output.
"""
from __future__ import annotations

import fcntl
import gzip
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gamut.io import tempfiles
from gamut.io.atomic import atomic_output

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ROOT / "tests" / "scan_kill_hooks.py"
CASE = ROOT / "tests" / "data" / "miranda" / "clip_quiet"


def _owner() -> str:
    return f"gamut-{tempfiles.user_name()}"


def _left_by_a_dead_run(target: Path, pid: int = 4242) -> Path:
    """A temporary file of ``target`` as a run killed outright leaves it: named, unlocked."""
    path = target.with_name(f".{target.name}.{_owner()}-{pid}.k1ll3d_x.tmp")
    path.write_bytes(b"half an output")
    return path


def _locked_elsewhere(path: str) -> bool:
    """Whether another open file description cannot take the lock of ``path``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def test_a_temporary_file_says_whose_it_is_and_is_locked_while_written(tmp_path):
    target = tmp_path / "hits.tsv"
    tmp = tempfiles.create(target)
    try:
        name = Path(tmp.path).name
        assert re.fullmatch(rf"\.hits\.tsv\.{re.escape(_owner())}-{os.getpid()}\.[a-z0-9_]{{8}}\.tmp", name), name
        assert _locked_elsewhere(tmp.path)
        assert tempfiles.remove_stale(target) == [] and os.path.exists(tmp.path)  # a live writer's: kept
    finally:
        tmp.release()
    assert not _locked_elsewhere(tmp.path)  # the writer gone (here: its descriptor closed)
    assert tempfiles.remove_stale(target) == [tmp.path] and not os.path.exists(tmp.path)


def test_only_this_targets_stale_files_of_this_user_are_removed(tmp_path):
    target = tmp_path / "hits.tsv"
    stale = _left_by_a_dead_run(target)
    others = [
        _left_by_a_dead_run(tmp_path / "hits.tsv.gz"),  # another target's
        _left_by_a_dead_run(tmp_path / "hits"),
        tmp_path / ".hits.tsv.k1ll3d_x.tmp",  # not gamut's pattern (as older gamut named them)
        tmp_path / f".hits.tsv.gamut-someone-else-4242.k1ll3d_x.tmp",  # another user's name
        tmp_path / "hits.tsv",
    ]
    for path in others[2:]:
        path.write_bytes(b"keep")
    link = target.with_name(f".hits.tsv.{_owner()}-99.l1nk0000.tmp")
    link.symlink_to(tmp_path / "hits.tsv")  # a link of the pattern is never followed nor removed
    assert tempfiles.remove_stale(target) == [str(stale)]
    assert not stale.exists() and all(p.exists() for p in others) and link.is_symlink()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_another_users_file_of_the_pattern_is_not_removed(tmp_path):
    target = tmp_path / "hits.tsv"
    theirs = _left_by_a_dead_run(target)
    os.chown(theirs, 65534, 65534)
    assert tempfiles.remove_stale(target) == [] and theirs.exists()


def test_a_file_locked_by_a_live_process_is_not_removed(tmp_path):
    target = tmp_path / "hits.tsv"
    held = _left_by_a_dead_run(target)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys\n"
        f"fd = os.open({str(held)!r}, os.O_RDONLY)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('locked', flush=True)\n"
        "sys.stdin.read()\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        assert tempfiles.remove_stale(target) == [] and held.exists()
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert tempfiles.remove_stale(target) == [str(held)]  # its writer gone


def test_a_long_name_is_cut_in_its_temporary_files_and_still_cleaned(tmp_path):
    target = tmp_path / ("h" * 250)
    tmp = tempfiles.create(target)
    tmp.release()
    assert len(Path(tmp.path).name) <= tempfiles.NAME_MAX
    assert tempfiles.remove_stale(target) == [tmp.path]


def test_an_output_removes_its_targets_stale_files_and_leaves_none(tmp_path):
    target = tmp_path / "hits.tsv.gz"
    stale = _left_by_a_dead_run(target)
    with atomic_output(target) as out:
        assert not stale.exists()
        [tmp] = tmp_path.glob(f".hits.tsv.gz.{_owner()}-{os.getpid()}.*.tmp")
        assert _locked_elsewhere(str(tmp))
        out.write("a\tb\n")
    assert gzip.decompress(target.read_bytes()) == b"a\tb\n"
    assert [p.name for p in tmp_path.iterdir()] == ["hits.tsv.gz"]


def test_the_run_directory_removes_its_stale_files_only(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "parts").mkdir(parents=True)
    stale = _left_by_a_dead_run(run_dir / "parts" / "00000003.part")
    live = tempfiles.create(run_dir / "parts" / "00000004.part")
    try:
        assert tempfiles.remove_stale(run_dir / "parts", every_target=True) == [str(stale)]
        assert os.path.exists(live.path)
    finally:
        live.release()


def _scan(out: Path, *launcher: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    argv = ["scan", str(CASE / "query.fa"), str(CASE / "reference.fa"), "--quiet", "--device", "cpu", "--no-progress",
            "-o", str(out)]
    return subprocess.run([sys.executable, *launcher, *argv], env=env, capture_output=True, timeout=300, check=False)


def test_a_rerun_after_kill_9_mid_write_leaves_no_temporary_file(tmp_path):
    clean = tmp_path / "clean.tsv"
    assert _scan(clean, "-m", "gamut").returncode == 0
    out = tmp_path / "hits.tsv.gz"
    out.write_bytes(gzip.compress(b"old results\n"))
    killed = _scan(out, str(HOOKS), "--die-after-writes", "1")
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert gzip.decompress(out.read_bytes()) == b"old results\n"  # the old output is intact
    [left] = tmp_path.glob(".hits.tsv.gz.*.tmp")
    assert left.name.startswith(f".hits.tsv.gz.{_owner()}-") and left.stat().st_size > 0  # its part written
    again = _scan(out, "-m", "gamut")
    assert again.returncode == 0, again.stderr.decode()
    assert not list(tmp_path.glob(".*.tmp"))
    assert gzip.decompress(out.read_bytes()) == clean.read_bytes()
