"""Running ``gamut scan`` processes to signal while they compute (tests/test_signals.py,
tests/test_serve.py)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def write_fasta(path: Path, records: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as handle:
        for name, letters in records.items():
            handle.write(b">" + name.encode() + b"\n" + letters.tobytes() + b"\n")


def random_letters(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.frombuffer(b"ACGU", np.uint8)[rng.integers(0, 4, n)]


def signal_running_scan(tmp_path: Path, queries: Path, references: Path, sig: int, *extra: str,
                        old: str | None = "old results\n", environ: dict[str, str] | None = None):
    """Start a scan writing over an existing output (``old``; None: no output there before),
    signal it while it computes; returns (exit code, seconds from the signal to the exit, stderr,
    output path). ``environ``: variables added to the scan's environment."""
    out = tmp_path / "out.tsv"
    if old is not None:
        out.write_text(old)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]), **(environ or {}))
    proc = subprocess.Popen([sys.executable, "-m", "gamut", "scan", str(queries), str(references), "-o", str(out),
                             "--device", "cpu", "--no-progress", *extra],
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 300
    while not list(tmp_path.glob(".out.tsv.*.tmp")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(1.0)  # well inside the alignment
    if proc.poll() is not None:
        pytest.fail(f"the scan ended before it could be signalled: {proc.stderr.read()}")
    sent = time.monotonic()
    proc.send_signal(sig)
    code = proc.wait(timeout=120)
    return code, time.monotonic() - sent, proc.stderr.read(), out
