"""Numba's compiles as they happen, through its event API (``numba.core.event``, event kind
``numba:compile``: a function compiled, not one loaded from Numba's cache).

:func:`cached_only` refuses them on one thread: a warm-up that should load what is compiled
already, never compile what is not (that holds the interpreter lock for tens of seconds).
:class:`CompileWatch` tells whether one is running now, for the first-run notice."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from numba.core import event

COMPILE_EVENT = "numba:compile"


class WouldCompile(RuntimeError):
    """A Numba function called under :func:`cached_only` that is not in Numba's cache."""


class _RefuseOnThread(event.Listener):
    """Raises :class:`WouldCompile` as a compile starts on thread ``ident``; other threads compile."""

    def __init__(self, ident: int) -> None:
        self.ident = ident

    def on_start(self, ev: event.Event) -> None:
        if threading.get_ident() == self.ident:
            raise WouldCompile(f"{_name(ev)} is not compiled yet")

    def on_end(self, ev: event.Event) -> None:
        pass


@contextmanager
def cached_only() -> Iterator[None]:
    """Within: a Numba function this thread calls is loaded from Numba's cache (or was loaded
    before), or raises :class:`WouldCompile` before any of its compiling is done. Other threads
    compile as usual."""
    with event.install_listener(COMPILE_EVENT, _RefuseOnThread(threading.get_ident())):
        yield


class CompileWatch(event.Listener):
    """The compiles running now in this process (nested ones included), while installed
    (:meth:`installed`). Each is known by its event's data, the same object at its start and end
    (a compile refused at its start, see :func:`cached_only`, may end unseen to start).
    ``started`` is called as each compile starts."""

    def __init__(self, started: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._running: set[int] = set()
        self._started = started

    @property
    def compiling(self) -> bool:
        """True while a compile runs."""
        with self._lock:
            return bool(self._running)

    def on_start(self, ev: event.Event) -> None:
        with self._lock:
            self._running.add(id(ev.data))
        if self._started is not None:
            self._started()

    def on_end(self, ev: event.Event) -> None:
        with self._lock:
            self._running.discard(id(ev.data))

    @contextmanager
    def installed(self) -> Iterator[CompileWatch]:
        with event.install_listener(COMPILE_EVENT, self):
            yield self


def _name(ev: event.Event) -> str:
    """The compiled function's name, from the event's data (Numba's dispatcher)."""
    dispatcher = (ev.data or {}).get("dispatcher")
    function = getattr(dispatcher, "py_func", None)
    return getattr(function, "__qualname__", None) or "a Numba function"
