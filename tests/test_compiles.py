"""Numba's compiles seen as they happen (gamut.compiles): refused on one thread by ``cached_only``
(a stripe worker's warm-up never compiles the CPU engine), and watched for the compiling notice."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numba
import numpy as np
import pytest
from numba.core import event

from gamut.compiles import COMPILE_EVENT, CompileWatch, WouldCompile, cached_only

SRC = Path(__file__).resolve().parents[1] / "src"


def _fresh():
    """A Numba function compiled by nobody yet (no cache)."""
    @numba.njit(cache=False)
    def add_one(x):
        return x + 1

    return add_one


def test_a_compile_is_refused_on_this_thread_and_loaded_functions_run():
    add_one = _fresh()
    with cached_only(), pytest.raises(WouldCompile, match="add_one is not compiled yet"):
        add_one(1)
    assert add_one.signatures == []  # refused before any compiling
    assert add_one(1) == 2  # compiled outside
    with cached_only():
        assert add_one(2) == 3  # loaded: runs


def test_other_threads_compile_under_this_threads_refusal():
    add_one = _fresh()
    results: list[int] = []
    with cached_only():
        worker = threading.Thread(target=lambda: results.append(add_one(41)))
        worker.start()
        worker.join()
    assert results == [42]


def test_the_watch_sees_a_compile_while_it_runs():
    started: list[bool] = []
    watch = CompileWatch(started=lambda: started.append(True))
    add_one = _fresh()
    with watch.installed():
        assert not watch.compiling
        with event.trigger_event(COMPILE_EVENT, data={}):
            assert watch.compiling
        assert not watch.compiling
        add_one(1)
        with cached_only(), pytest.raises(WouldCompile):  # a compile refused at its start still ends
            _fresh()(1)
        assert not watch.compiling
    assert len(started) >= 2
    with event.trigger_event(COMPILE_EVENT, data={}):
        assert not watch.compiling  # removed


def test_a_later_command_that_compiles_says_so_and_how_long(tmp_path, monkeypatch, capsys):
    """With the marker present, a compile running past the delay shows the notice (its own words,
    no promise about later runs); a command that compiles nothing says nothing."""
    from gamut.cache import NEW_ENGINE, FirstRunNotice, compiled_marker

    monkeypatch.setattr("gamut.cache.compiled_marker_dir", lambda: tmp_path)
    monkeypatch.setattr("gamut.cache.NOTICE_DELAY", 0.02)
    compiled_marker().touch()
    quiet = FirstRunNotice.start()
    assert quiet is not None and quiet.marker is None
    time.sleep(0.1)
    quiet.finish(True)
    assert capsys.readouterr().err == ""

    notice = FirstRunNotice.start()
    with event.trigger_event(COMPILE_EVENT, data={}):
        time.sleep(0.4)
    notice.finish(True)
    err = capsys.readouterr().err
    assert err.startswith(NEW_ENGINE + "\n"), err
    assert re.fullmatch(r"gamut: compiled and ran in 0\.\d s\n", err.splitlines(keepends=True)[1]), err


def test_the_warm_up_compiles_no_cpu_aligner_where_numba_has_none(tmp_path):
    """In an environment whose Numba cache is empty, the warm-up's check of the CPU engine refuses
    to compile it (nothing written to the cache); where it is loaded, the check passes."""
    code = """if True:
        import sys
        from gamut.scanning.fasta import SeqRecord
        from gamut.scanning.pipeline.stripes import WARM_QUERIES, _cpu_aligner_cached
        queries = [SeqRecord("q", "", WARM_QUERIES[0].encode())]
        references = [SeqRecord("r", "", b"ACGUACGUACGUAAACUACCUCAAAGGAGG")]
        print(_cpu_aligner_cached(queries, references))
    """
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), PYTHONPATH=path)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]
    assert not list((tmp_path / "numba").rglob("*simd*.nbi")), "nothing of the aligner compiled"

    from gamut.scanning.engines import make_engine
    from gamut.scanning.fasta import SeqRecord, sequence_set_of
    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.stripes import WARM_QUERIES, _cpu_aligner_cached

    queries = [SeqRecord("q", "", WARM_QUERIES[0].encode())]
    references = [SeqRecord("r", "", b"ACGUACGUACGUAAACUACCUCAAAGGAGG")]
    make_engine("cpu", 1).align(sequence_set_of(queries), sequence_set_of(references), np.zeros((1, 2), np.int64),
                                ScanParams())
    assert _cpu_aligner_cached(queries, references)
