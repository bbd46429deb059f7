"""Imports whose optional probes would cost a command-line process more than they give it.

When Numba loads its first compiled function it imports ``numba.np.arraymath``, whose BLAS probe
imports ``scipy.linalg`` (0.3-0.5 s where SciPy is installed) only to enable ``np.dot`` and friends
in compiled code, and ``numba.misc.coverage_support`` imports the ``coverage`` package (about 0.5 s
where it is installed) only to report compiled lines to a running coverage measurement. CuPy's
first kernel imports ``cupyx``, whose sparse matrices import ``scipy.sparse`` (0.2-0.4 s of a
one-pair CUDA scan on the H100 host) only to convert SciPy's matrices. gamut's compiled code uses
no BLAS and no SciPy matrix, and a command-line process not started under ``coverage`` has no
measurement to report to (one started under it has ``coverage`` imported already and keeps it).
"""
from __future__ import annotations

import importlib
import sys
import threading

#: One hiding window at a time: a thread that restored ``sys.modules`` must not end another's window.
_HIDING = threading.Lock()


def import_without_probes(names: list[str]) -> None:
    """Import the modules ``names`` (those not imported yet) with SciPy and ``coverage`` hidden,
    so that their optional probes fail fast; ``sys.modules`` is restored right after, so both stay
    importable. An import that fails is left to whoever needs the module (no Numba, no CuPy, no
    driver: the commands that need them say so)."""
    with _HIDING:
        wanted = [name for name in names if name not in sys.modules]
        if not wanted:
            return
        hidden = [name for name in ("scipy", "coverage") if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]  # 'import name...' raises ImportError
        try:
            for name in wanted:
                try:
                    importlib.import_module(name)
                except Exception:  # noqa: BLE001 (see the docstring)
                    pass
        finally:
            for name in hidden:
                del sys.modules[name]


def numba_without_probes() -> None:
    """Import Numba's array-math registry without its optional SciPy and ``coverage`` probes (a
    CUDA run's ``cupyx`` is imported so by :func:`gamut.cuda.device.prewarm`)."""
    import_without_probes(["numba.np.arraymath"])
