"""gamut's own on-disk cache folder and the first-run notice of the command line."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def cache_root() -> Path:
    """``$GAMUT_CACHE_DIR``, else ``$XDG_CACHE_HOME/gamut``, else ``~/.cache/gamut``."""
    explicit = os.environ.get("GAMUT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gamut"


def _compiled_marker() -> Path:
    """A file that says this installation's compiled code has been built (one per gamut, Numba
    and Python version and Numba cache folder)."""
    import hashlib
    from importlib import metadata

    from gamut import __version__

    try:
        numba = metadata.version("numba")
    except metadata.PackageNotFoundError:
        numba = "?"
    key = "|".join((__version__, numba, sys.version, os.environ.get("NUMBA_CACHE_DIR", "")))
    return cache_root() / f"compiled-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def first_run_notice() -> Path | None:
    """On the first command of an installation, say on a terminal that it compiles its engines
    (Numba caches them, so later runs start in under a second). Returns the marker to
    :func:`mark_compiled` once the command has succeeded, or None when it exists already."""
    try:
        marker = _compiled_marker()
        if marker.exists():
            return None
    except OSError:
        return None
    if sys.stderr.isatty():
        print("gamut: first run of this installation: compiling its engines for this CPU "
              "(about half a minute, once; later runs start in under a second)", file=sys.stderr)
    return marker


def mark_compiled(marker: Path | None) -> None:
    """Record that the compiled code exists (a read-only cache folder is no error)."""
    if marker is None:
        return
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass
