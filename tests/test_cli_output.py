"""Where output cannot go, and what a terminated run leaves behind (issue #11, item 4)."""
from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gamut.cli import main
from gamut.errors import UsageError
from gamut.io.atomic import atomic_output

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize("argv", [
    ["scan", str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa"), "-o", "{out}"],
    ["miranda", str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa"), "-out", "{out}"],
    ["fold", str(EXAMPLES / "fold_hairpins.fa"), "-o", "{out}"],
])
@pytest.mark.parametrize("where", ["missing", "directory", "readonly"])
def test_unwritable_output_is_one_line_and_exit_1(tmp_path, capsys, argv, where):
    if where == "missing":
        out = tmp_path / "no" / "such" / "out.txt"
    elif where == "directory":
        out = tmp_path / "adir"
        out.mkdir()
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only directories")
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        out = locked / "out.txt"
    code = main([a.replace("{out}", str(out)) for a in argv])
    err = capsys.readouterr().err
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gamut: error: cannot write") and str(out) in lines[0], err
    assert "Traceback" not in err


def test_atomic_output_errors_before_any_work(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        with atomic_output(tmp_path / "missing" / "x.txt"):
            raise AssertionError("the block must not run")


def test_sigterm_on_a_running_scan_leaves_no_file(tmp_path):
    """A real `gamut scan` process, terminated while it writes: exit 143, no output, no .tmp."""
    rng = np.random.default_rng(3)
    q = tmp_path / "q.fa"
    q.write_text("".join(f">m{k}\n{''.join(rng.choice(list('ACGU'), 22))}\n" for k in range(300)))
    r = tmp_path / "r.fa"
    r.write_text("".join(f">u{k}\n{''.join(rng.choice(list('ACGU'), 200_000))}\n" for k in range(6)))
    out = tmp_path / "out.txt"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "gamut", "scan", str(q), str(r), "-o", str(out),
                             "--device", "cpu", "--no-progress"],
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".out.txt.*.tmp")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is not None:
        pytest.fail(f"the scan ended before it could be terminated: {proc.stderr.read()}")
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=120)
    err = proc.stderr.read()
    assert code == 128 + signal.SIGTERM, err
    assert "gamut: terminated" in err and "Traceback" not in err
    assert not out.exists() and not list(tmp_path.glob(".out.txt.*.tmp"))


def test_cli_skips_numba_blas_probe_without_hiding_scipy(tmp_path):
    """The CLI loads Numba's array-math registry with SciPy hidden (its BLAS probe would import
    scipy.linalg); afterwards SciPy imports as usual. A stand-in 'scipy' package records imports."""
    fake = tmp_path / "scipy"
    fake.mkdir()
    (fake / "__init__.py").write_text("import builtins\nbuiltins.SCIPY_IMPORTS = getattr(builtins, 'SCIPY_IMPORTS', 0) + 1\n")
    code = (
        "import builtins, sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from gamut.probes import numba_without_probes\n"
        "numba_without_probes()\n"
        "import numba.np.arraymath as am\n"
        "assert getattr(builtins, 'SCIPY_IMPORTS', 0) == 0, 'scipy was imported by the probe'\n"
        "assert not am._HAVE_BLAS\n"
        "import scipy\n"
        "assert builtins.SCIPY_IMPORTS == 1\n"
    )
    _runs_and_says_ok(code)


def test_probe_hiding_windows_of_two_threads_never_overlap(tmp_path):
    """gamut.probes: imports from two threads at once (the main thread's Numba registry, the
    prewarm thread's cupyx) each see SciPy hidden for the whole of their import, and SciPy is
    importable again after both."""
    for k in range(2):
        (tmp_path / f"probe_{k}.py").write_text(
            "import builtins, sys, time\n"
            "seen = [sys.modules.get('scipy', 'absent')]\n"
            "time.sleep(0.2)\n"
            "seen.append(sys.modules.get('scipy', 'absent'))\n"
            f"builtins.SEEN_{k} = seen\n")
    code = (
        "import builtins, sys, threading\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from gamut.probes import import_without_probes\n"
        "ts = [threading.Thread(target=import_without_probes, args=([f'probe_{k}'],)) for k in range(2)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "assert builtins.SEEN_0 == builtins.SEEN_1 == [None, None], (builtins.SEEN_0, builtins.SEEN_1)\n"
        "assert 'scipy' not in sys.modules or sys.modules['scipy'] is not None\n"
    )
    _runs_and_says_ok(code)


def _runs_and_says_ok(code: str) -> None:
    """``code`` runs in a fresh interpreter without an error (its assertions hold)."""
    out = subprocess.run([sys.executable, "-c", code + "print('ok')\n"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_command_output_is_whole_after_the_quick_exit(tmp_path):
    """`python -m gamut` ends with os._exit once main returns: what went to a pipe or a file is all there."""
    q, r = EXAMPLES / "mirnas.fa", EXAMPLES / "targets.fa"
    out = tmp_path / "out.txt"
    assert main(["miranda", str(q), str(r), "-out", str(out)]) == 0
    piped = subprocess.run([sys.executable, "-m", "gamut", "miranda", str(q), str(r)], capture_output=True,
                           timeout=300)
    assert piped.returncode == 0 and piped.stderr == b""
    assert piped.stdout == out.read_bytes()
    failed = subprocess.run([sys.executable, "-m", "gamut", "miranda", str(q), str(tmp_path / "missing.fa")],
                            capture_output=True, text=True, timeout=300)
    assert failed.returncode != 0 and failed.stderr.startswith("gamut: error:")


@pytest.mark.parametrize("traced", [False, True])
def test_run_flushes_runs_exit_handlers_then_exits(monkeypatch, traced):
    import atexit

    import gamut.cli as cli

    import gamut.io.heap as heap

    events = []
    monkeypatch.setattr(heap, "reuse_large_buffers", lambda: events.append("heap") or True)
    monkeypatch.setattr(cli, "main", lambda ending=False: events.append(("main", ending)) or 3)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: events.append("atexit"))
    monkeypatch.setattr(os, "_exit", lambda code: events.append(("_exit", code)) or (_ for _ in ()).throw(SystemExit(code)))
    monkeypatch.setattr(sys, "gettrace", (lambda: print) if traced else (lambda: None))
    monkeypatch.setattr(sys, "getprofile", lambda: None)
    with pytest.raises(SystemExit) as stop:
        cli.run()
    assert stop.value.code == 3
    # under a tracer (coverage, a debugger) the ordinary exit, so that it can report
    assert events == (["heap", ("main", True)] if traced else ["heap", ("main", True), "atexit", ("_exit", 3)])


def test_reuse_large_buffers_raises_both_thresholds(monkeypatch):
    import ctypes

    import gamut.io.heap as heap

    calls = []

    def mallopt(param, value):
        calls.append((param, value))
        return 1

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: type("Libc", (), {"mallopt": staticmethod(mallopt)})())
    assert heap.reuse_large_buffers(64 << 20) is True
    assert calls == [(heap.M_MMAP_THRESHOLD, 64 << 20), (heap.M_TRIM_THRESHOLD, 128 << 20)]
    calls.clear()
    monkeypatch.setattr(ctypes, "CDLL", lambda name: type("Libc", (), {"mallopt": staticmethod(lambda p, v: 0)})())
    assert heap.reuse_large_buffers() is False  # refused by the C library


def test_reuse_large_buffers_without_glibc(monkeypatch):
    import ctypes

    import gamut.io.heap as heap

    def no_libc(name):
        raise OSError("no C library here")

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert heap.reuse_large_buffers() is False
    monkeypatch.setattr(sys, "platform", "darwin")
    assert heap.reuse_large_buffers() is False


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="glibc's mallopt")
def test_reuse_large_buffers_takes_effect_with_glibc():
    code = "from gamut.io.heap import reuse_large_buffers; print(reuse_large_buffers())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr
