"""Spans of a run's stages across its processes, for benchmarks and for a user asking where the time
goes: with ``GAMUT_TIMELINE=FILE`` set, each gamut process of a run (the command, its GPU worker
processes, Dask workers started with the variable) appends one JSON line per span or mark to FILE:
``{"name", "pid", "t0", "t1", ...}`` (wall-clock seconds, comparable across processes).
``bench/timeline.py`` draws them. Unset, :func:`span` and :func:`mark` cost one dictionary lookup.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from typing import Any

VARIABLE = "GAMUT_TIMELINE"


def _write(record: dict[str, Any]) -> None:
    path = os.environ.get(VARIABLE)
    if not path:
        return
    line = (json.dumps(record, default=str) + "\n").encode()
    try:  # one write of a line to a file opened for appending: lines of several processes never mix
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError:
        pass  # a timeline is never worth failing a run for


def mark(name: str, **fields: Any) -> None:
    """A moment of this process (``t0 == t1``)."""
    if os.environ.get(VARIABLE):
        now = time.time()
        _write({"name": name, "pid": os.getpid(), "t0": now, "t1": now, **fields})


@contextlib.contextmanager
def span(name: str, **fields: Any) -> Iterator[None]:
    """The time the block takes in this process."""
    if not os.environ.get(VARIABLE):
        yield
        return
    began = time.time()
    try:
        yield
    finally:
        _write({"name": name, "pid": os.getpid(), "t0": began, "t1": time.time(), **fields})
