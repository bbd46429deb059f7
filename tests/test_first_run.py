"""The first command in a fresh environment says that it compiles and how long that took; later
ones say nothing. Runs gamut in a subprocess with empty Numba and gamut caches (stderr a file,
not a terminal), so it compiles the scan path once (tens of seconds)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _scan(tmp_path: Path, out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), GAMUT_CACHE_DIR=str(tmp_path / "gamut"))
    command = [sys.executable, "-m", "gamut", "scan", str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa"),
               "--device", "cpu", "-o", str(out)]
    return subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)


def test_first_run_says_it_compiles_and_how_long_then_nothing(tmp_path):
    first = _scan(tmp_path, tmp_path / "first.txt")
    assert first.returncode == 0, first.stderr
    assert "compiling gamut's engines" in first.stderr
    assert re.search(r"compiled and ran in \d+\.\d s", first.stderr), first.stderr
    assert not first.stdout  # the notice never goes to stdout, which may be the output
    assert list((tmp_path / "numba").glob("gamut-compiled-*")), "the marker lives in the Numba cache"
    assert not list((tmp_path / "gamut").glob("*compiled*")), "not in the per-user gamut cache"
    hits = (tmp_path / "first.txt").read_text()
    assert "Complete" in hits and ">>" in hits  # miRanda-style text with at least one hit

    second = _scan(tmp_path, tmp_path / "second.txt")
    assert second.returncode == 0, second.stderr
    assert "compil" not in second.stderr and "first run" not in second.stderr
    assert (tmp_path / "second.txt").read_text() == hits


def test_a_shared_numba_cache_folder_still_tells_environments_apart(tmp_path, monkeypatch):
    """The marker's name carries the environment, so two environments sharing $NUMBA_CACHE_DIR
    each get their own first-run notice."""
    from gamut import cache

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    here = cache.compiled_marker()
    assert here.parent == tmp_path
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "other-env"))
    assert cache.compiled_marker() != here


def test_read_only_package_falls_back_to_the_user_cache(tmp_path, monkeypatch):
    from gamut import cache

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("GAMUT_CACHE_DIR", str(tmp_path / "user"))
    monkeypatch.setattr(cache, "_writable_dir", lambda folder: False)
    assert cache.compiled_marker_dir() == tmp_path / "user"
    monkeypatch.setattr(cache, "_writable_dir", lambda folder: True)
    assert cache.compiled_marker_dir().name == "__pycache__"


def test_a_command_that_fails_at_once_prints_only_its_error(tmp_path, monkeypatch, capsys):
    """No notice before a quick failure (it compiled nothing), and no marker: the next command
    is still the first run."""
    from gamut.cli import main

    monkeypatch.setattr("gamut.cache.compiled_marker_dir", lambda: tmp_path / "cache")
    assert main(["scan", str(EXAMPLES / "mirnas.fa"), str(tmp_path / "missing.fa")]) != 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gamut: error: "), lines
    assert not list((tmp_path / "cache").glob("gamut-compiled-*"))


def test_the_notice_shows_while_a_first_command_runs(tmp_path, monkeypatch, capsys):
    """A first command still running after the delay gets the notice, then its time."""
    import time

    from gamut.cache import FirstRunNotice

    monkeypatch.setattr("gamut.cache.compiled_marker_dir", lambda: tmp_path)
    monkeypatch.setattr("gamut.cache.NOTICE_DELAY", 0.05)
    notice = FirstRunNotice.start()
    assert notice is not None
    time.sleep(0.3)
    notice.finish(True)
    err = capsys.readouterr().err
    assert err.startswith("gamut: first run in this environment: compiling")
    assert re.search(r"gamut: compiled and ran in 0\.\d s; later runs start in under a second\n$", err), err
    after = FirstRunNotice.start()  # recorded: the next command only watches for a compile
    assert after is not None and after.marker is None
    after.finish(True)
