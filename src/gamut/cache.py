"""gamut's own on-disk cache folder and the compiling notice of the command line."""
from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gamut.compiles import CompileWatch


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


#: Seconds a first command runs (or a later one compiles) before the notice shows: a command that
#: fails at once (a bad option, a missing file) compiles nothing, so its one error line stays alone.
NOTICE_DELAY = 2.0

#: What the notice says as it shows: on an environment's first command, and on a later command
#: that compiles an engine no command had used before (``--device cpu`` after GPU runs).
FIRST_RUN = ("gamut: first run in this environment: compiling gamut's engines for this CPU "
             "(once; about half a minute)")
NEW_ENGINE = "gamut: compiling engines that no earlier command used (once; up to half a minute)"


class FirstRunNotice:
    """What a command says while it compiles, on stderr (whether or not stderr is a terminal: the
    wait is tens of seconds either way, and a log should explain it).

    The first command in an environment (no marker, :func:`compiled_marker`) says so once it has
    run :data:`NOTICE_DELAY` seconds; a later command, where one of Numba's compiles in this process
    has run that long (:class:`gamut.compiles.CompileWatch`). Once the command has succeeded, it
    says how long it took (if the notice showed), and the first command records the marker."""

    def __init__(self, marker: Path | None, delay: float) -> None:
        self.marker = marker
        self.delay = delay
        self.started = time.perf_counter()
        self._lock = threading.Lock()
        self._state = "waiting"  # -> "shown" -> "over", or "waiting" -> "over"
        self._timer: threading.Timer | None = None
        self._compiles: CompileWatch | None = None  # (a later command's: see _watch)
        self._watching: contextlib.ExitStack | None = None
        if marker is None:
            self._watch()
        elif delay <= 0:
            self._show()
        else:
            self._arm()

    @classmethod
    def start(cls) -> FirstRunNotice | None:
        """The notice of this command: a first run's, else one that waits for a long compile (None
        where Numba is not loaded yet: a scan on a cluster, whose client compiles nothing first)."""
        try:
            marker = compiled_marker()
            if not marker.exists():
                return cls(marker, NOTICE_DELAY)
        except OSError:
            pass
        return cls(None, NOTICE_DELAY) if "numba" in sys.modules else None

    def _watch(self) -> None:
        """Arm the timer at the start of each compile while none is armed (see :meth:`_show`)."""
        from gamut.compiles import CompileWatch

        self._compiles = CompileWatch(started=self._arm)
        self._watching = contextlib.ExitStack()
        self._watching.enter_context(self._compiles.installed())

    def _arm(self) -> None:
        with self._lock:
            if self._state != "waiting" or (self._timer is not None and self._timer.is_alive()):
                return
            self._timer = threading.Timer(self.delay, self._show)
            self._timer.daemon = True
            self._timer.start()

    def _show(self) -> None:
        with self._lock:
            if self._state != "waiting" or (self._compiles is not None and not self._compiles.compiling):
                return
            self._state = "shown"
            print(FIRST_RUN if self.marker is not None else NEW_ENGINE, file=sys.stderr, flush=True)

    def finish(self, succeeded: bool) -> None:
        """End the notice; after success, report the time (if the notice showed) and record a first
        run's marker (a read-only cache folder is no error: the notice shows again)."""
        if self._watching is not None:
            self._watching.close()
        with self._lock:
            shown = self._state == "shown"
            self._state = "over"
            timer = self._timer
        if timer is not None:
            timer.cancel()
        if not succeeded:
            return
        if shown:
            later = "; later runs start in under a second" if self.marker is not None else ""
            print(f"gamut: compiled and ran in {time.perf_counter() - self.started:.1f} s{later}",
                  file=sys.stderr, flush=True)
        if self.marker is None:
            return
        try:
            self.marker.parent.mkdir(parents=True, exist_ok=True)
            self.marker.touch()
        except OSError:
            pass
