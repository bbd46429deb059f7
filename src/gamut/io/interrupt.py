"""End a command promptly on SIGINT or SIGTERM, whatever its main thread is doing.

Python runs a signal handler only in the main thread, between two bytecodes: while the main thread
waits inside a compiled call (a long alignment, a duplex fold), the handler waits with it, for
seconds or minutes. Here the C-level handler's wakeup byte (:func:`signal.set_wakeup_fd`) wakes a
watcher thread at once instead; every long compiled call of gamut releases the GIL, so the watcher
runs, removes the temporary files that outputs registered (:func:`temporary_file`), says so on
standard error and ends the process with ``os._exit(128 + signal)``: 130 for SIGINT, 143 for
SIGTERM. An output that already existed is untouched, since outputs replace their target only when
complete. Whichever of the watcher and the ordinary handler comes first ends the process.
"""
from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Callable, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM)
MESSAGES = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


class Ending:
    """The temporary files of a running command, and the one way it ends on a signal."""

    def __init__(self) -> None:
        self._temporary: set[str] = set()
        self._lock = threading.RLock()  # the main thread's handler may run inside track()
        self._ended = False
        self._deferring = 0
        self._pending: int | None = None

    @contextlib.contextmanager
    def track(self, path: str | os.PathLike) -> Iterator[None]:
        key = os.fspath(path)
        with self._lock:
            self._temporary.add(key)
        try:
            yield
        finally:
            with self._lock:
                self._temporary.discard(key)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """A signal that comes inside waits until the block is done, then ends the process (for
        the renames that make several outputs appear together: all of them, or none)."""
        with self._lock:
            self._deferring += 1
        try:
            yield
        finally:
            with self._lock:
                self._deferring -= 1
                pending = self._pending if not self._deferring else None
            if pending is not None:
                self.end(pending)

    def end(self, signum: int) -> None:
        """Remove the temporary files, say why, and end the process (never returns, except inside
        :meth:`deferred`, which ends it when its block is done)."""
        with self._lock:
            if self._deferring:
                self._pending = signum
                return
            if self._ended:  # the other path is ending it already
                threading.Event().wait()
            self._ended = True
            for path in self._temporary:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        message = f"gamut: {MESSAGES.get(signum, 'ended by signal %d' % signum)}\n".encode()
        with contextlib.suppress(OSError):
            os.write(2, message)
        for words in list(_LAST_WORDS):
            with contextlib.suppress(Exception):
                words(signum)
        os._exit(128 + signum)


#: The guard of the command running in this process, if any. Signal handlers are per process, so
#: this is too; it is set and cleared only by :func:`end_promptly_on_signals`.
_ACTIVE: list[Ending] = []


#: What to do, with the signal's number, just before a signal ends the process (``os._exit`` runs
#: no ``atexit`` handler): a ``gamut serve`` process logs why it ended. Per process, as signal
#: handlers are; changed only by :func:`last_words`.
_LAST_WORDS: list[Callable[[int], None]] = []


@contextlib.contextmanager
def last_words(words: Callable[[int], None]) -> Iterator[None]:
    """While inside, a signal that ends the running command calls ``words(signum)`` first."""
    _LAST_WORDS.append(words)
    try:
        yield
    finally:
        _LAST_WORDS.remove(words)


@contextlib.contextmanager
def temporary_file(path: str | os.PathLike) -> Iterator[None]:
    """While inside, ``path`` is removed if a signal ends the command (outside a command: nothing)."""
    if not _ACTIVE:
        yield
        return
    with _ACTIVE[-1].track(path):
        yield


def deferred_ending() -> contextlib.AbstractContextManager:
    """While inside, a signal that would end the command waits until the block is done (outside a
    command: nothing). Keep such blocks short: a few renames."""
    if not _ACTIVE:
        return contextlib.nullcontext()
    return _ACTIVE[-1].deferred()


@contextlib.contextmanager
def end_promptly_on_signals() -> Iterator[Ending | None]:
    """While inside, SIGINT and SIGTERM end the process within milliseconds (see the module's
    docstring). Outside the main thread, where handlers cannot be set, it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    ending = Ending()
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    stop = threading.Event()

    def watch() -> None:
        while True:
            try:
                data = os.read(read_fd, 64)
            except OSError:
                return
            if stop.is_set() or not data:
                return
            for signum in data:
                if signum in SIGNALS:
                    ending.end(signum)

    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    for sig in SIGNALS:
        signal.signal(sig, lambda signum, frame: ending.end(signum))
    watcher = threading.Thread(target=watch, name="gamut-signals", daemon=True)
    watcher.start()
    _ACTIVE.append(ending)
    try:
        yield ending
    finally:
        _ACTIVE.remove(ending)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(previous_fd)
        stop.set()
        with contextlib.suppress(OSError):
            os.write(write_fd, b"\0")
        watcher.join(timeout=1.0)
        os.close(write_fd)
        os.close(read_fd)

