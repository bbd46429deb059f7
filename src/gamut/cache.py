"""gamut's own on-disk cache folder and the first-run notice of the command line."""
from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
import uuid
from pathlib import Path


def cache_root() -> Path:
    """``$GAMUT_CACHE_DIR``, else ``$XDG_CACHE_HOME/gamut``, else ``~/.cache/gamut``."""
    explicit = os.environ.get("GAMUT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gamut"


def _writable_dir(folder: Path) -> bool:
    """True when ``folder`` exists (or can be made) and a file can be created in it, as Numba
    itself checks before it caches there."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".gamut-probe-{uuid.uuid4().hex}"
        probe.touch()
        probe.unlink()
    except OSError:
        return False
    return True


def compiled_marker_dir() -> Path:
    """Where this environment's compiled engines live, so the marker goes and comes with them:
    ``$NUMBA_CACHE_DIR`` when set, else the ``__pycache__`` folder of gamut's package (Numba's
    in-tree cache), else (read-only install) the user cache folder, where Numba's user-wide
    cache then lives too."""
    explicit = os.environ.get("NUMBA_CACHE_DIR")
    if explicit:
        return Path(explicit)
    in_tree = Path(__file__).resolve().parent / "__pycache__"
    return in_tree if _writable_dir(in_tree) else cache_root()


def compiled_marker() -> Path:
    """The file that says this environment's engines are compiled. Its name carries gamut's,
    Numba's and Python's versions and the environment (``sys.prefix``), so a shared cache
    folder still tells environments apart and an upgrade announces its recompilation."""
    from importlib import metadata

    from gamut._version import __version__

    try:
        numba = metadata.version("numba")
    except metadata.PackageNotFoundError:
        numba = "?"
    key = "|".join((__version__, numba, sys.version, sys.prefix))
    return compiled_marker_dir() / f"gamut-compiled-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


#: Seconds a first command runs before the notice shows: a command that fails at once (a bad
#: option, a missing file) compiles nothing, so its one error line stays alone.
NOTICE_DELAY = 2.0


class FirstRunNotice:
    """The first command in an environment: after :data:`NOTICE_DELAY` seconds still running, say
    on stderr that it compiles the engines (whether or not stderr is a terminal: the wait is tens
    of seconds either way, and a log should explain it); when it has succeeded, say how long it
    took and record that the engines are compiled."""

    def __init__(self, marker: Path, delay: float) -> None:
        self.marker = marker
        self.started = time.perf_counter()
        self._lock = threading.Lock()
        self._state = "waiting"  # -> "shown" -> "over", or "waiting" -> "over"
        self._timer: threading.Timer | None = None
        if delay <= 0:
            self._show()
        else:
            self._timer = threading.Timer(delay, self._show)
            self._timer.daemon = True
            self._timer.start()

    @classmethod
    def start(cls) -> FirstRunNotice | None:
        """A notice for this command, or None when the engines are compiled already."""
        try:
            marker = compiled_marker()
            if marker.exists():
                return None
        except OSError:
            return None
        return cls(marker, NOTICE_DELAY)

    def _show(self) -> None:
        with self._lock:
            if self._state != "waiting":
                return
            self._state = "shown"
            print("gamut: first run in this environment: compiling gamut's engines for this CPU "
                  "(once; about half a minute)", file=sys.stderr, flush=True)

    def finish(self, succeeded: bool) -> None:
        """End the notice; after success, report the time (if the notice showed) and record that
        the engines are compiled (a read-only cache folder is no error: the notice shows again)."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            shown = self._state == "shown"
            self._state = "over"
        if not succeeded:
            return
        if shown:
            print(f"gamut: compiled and ran in {time.perf_counter() - self.started:.1f} s; "
                  "later runs start in under a second", file=sys.stderr, flush=True)
        try:
            self.marker.parent.mkdir(parents=True, exist_ok=True)
            self.marker.touch()
        except OSError:
            pass
