"""SIGTERM and SIGINT end a running command promptly at any input size (gamut.io.interrupt).

Each test starts a real ``gamut scan`` on an input that keeps it busy in compiled code (a 10 kb
query; a 50 Mb reference), waits until it is computing (its temporary output exists), sends the
signal and times the exit. The bound here is generous (a loaded CI machine); bench/long_queries.py
measures the latency precisely.
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest

from gamut.io.interrupt import Ending, temporary_file
from signal_helpers import random_letters, signal_running_scan, write_fasta

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BOUND_S = 5.0  # generous: the benchmark measures tens of milliseconds


def assert_ended_cleanly(tmp_path: Path, code: int, latency: float, err: str, out: Path, sig: int) -> None:
    assert code == 128 + sig, err
    assert latency < BOUND_S, f"{latency:.2f} s from the signal to the exit"
    assert err.strip() in ("gamut: terminated", "gamut: interrupted") and "Traceback" not in err, err
    assert out.read_text() == "old results\n"  # the old output is intact
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_a_10kb_query_scan_promptly(tmp_path, sig):
    rng = np.random.default_rng(5)
    q, r = tmp_path / "q.fa", tmp_path / "r.fa"
    write_fasta(q, {"long": random_letters(rng, 10_000)})
    write_fasta(r, {f"u{k}": random_letters(rng, 20_000) for k in range(20)})
    code, latency, err, out = signal_running_scan(tmp_path, q, r, sig, "--noenergy")
    assert_ended_cleanly(tmp_path, code, latency, err, out, sig)


def test_sigterm_ends_a_50mb_reference_scan_promptly(tmp_path):
    rng = np.random.default_rng(6)
    q, r = tmp_path / "q.fa", tmp_path / "r.fa"
    q.write_bytes((EXAMPLES / "mirnas.fa").read_bytes())
    write_fasta(r, {"chr": random_letters(rng, 50_000_000)})
    code, latency, err, out = signal_running_scan(tmp_path, q, r, signal.SIGTERM)
    assert_ended_cleanly(tmp_path, code, latency, err, out, signal.SIGTERM)


def test_temporary_files_are_tracked_only_inside_a_command(tmp_path):
    ending = Ending()
    path = tmp_path / ".x.tmp"
    with ending.track(path):
        assert os.fspath(path) in ending._temporary
    assert not ending._temporary
    with temporary_file(path):  # no command running: nothing to register, nothing raised
        pass


def test_duplex_folds_limited_by_available_memory(monkeypatch):
    """Long queries make duplexes whose exact fold needs memory quadratic in their length: fewer
    folds run at once, and one that cannot fit is a one-line error, not an out-of-memory kill."""
    from gamut.errors import InputError
    from gamut.scanning.energy import cpu as energy

    monkeypatch.setattr(energy, "available_memory", lambda: 8 << 30)
    assert energy.folds_that_fit(100, 16) == 16
    assert energy.folds_that_fit(4_000, 16) == 5  # 49 * 4002^2 bytes each, half of 8 GiB
    with pytest.raises(InputError, match="use --noenergy"):
        energy.folds_that_fit(20_000, 2)
