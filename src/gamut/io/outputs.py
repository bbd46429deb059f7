"""Where an output may go, decided before any work: never onto an input, never a read-only file,
devices and pipes written in place, and the format a file's suffix names."""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gamut.errors import UsageError

PathLike = str | os.PathLike


@dataclass(frozen=True)
class OutputTarget:
    """An output path as given (``shown``, for messages) and the file that is really written:
    ``real`` is a symlink's final target, so that replacing it leaves the link a link."""

    shown: str
    real: Path
    existing: os.stat_result | None

    @property
    def direct(self) -> bool:
        """Written in place: a character device, a FIFO or a socket has no contents to replace,
        and renaming a file over it would destroy it."""
        return self.existing is not None and not stat.S_ISREG(self.existing.st_mode)


def is_stdout(path: PathLike | None) -> bool:
    return path is None or os.fspath(path) == "-"


def _stat(path: PathLike) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def check_output(path: PathLike, inputs: Iterable[PathLike | None] = ()) -> OutputTarget:
    """The target of output ``path``, or a one-line :class:`UsageError` when writing it would lose
    data or cannot work: it is one of ``inputs`` (same device and inode, so symlinks and hard
    links count), a directory, a file without write permission bits (checked on the mode, since
    ``os.access`` answers yes to root), or its directory is missing."""
    shown = os.fspath(path)
    real = Path(os.path.realpath(shown)) if os.path.islink(shown) else Path(shown)
    try:
        existing = _stat(real)
    except OSError as exc:  # e.g. a symlink loop, a directory we may not search
        raise UsageError(f"cannot write {shown}: {exc.strerror or exc}") from None
    if existing is None:
        directory = real.parent if str(real.parent) else Path(".")
        if not directory.is_dir():
            raise UsageError(f"cannot write {shown}: the directory {directory} does not exist")
        return OutputTarget(shown, real, None)
    if stat.S_ISDIR(existing.st_mode):
        raise UsageError(f"cannot write {shown}: it is a directory")
    if stat.S_ISREG(existing.st_mode):
        same = _same_input(existing, inputs)
        if same is not None:
            raise UsageError(f"cannot write {shown}: it is the input file {same}; choose another output")
        if existing.st_mode & 0o222 == 0:
            raise UsageError(f"cannot write {shown}: it is read-only (no write permission)")
    return OutputTarget(shown, real, existing)


def _same_input(output: os.stat_result, inputs: Iterable[PathLike | None]) -> str | None:
    """The first of ``inputs`` that is the file ``output`` (missing inputs are the readers' to report)."""
    for item in inputs:
        if item is None or is_stdout(item):
            continue
        try:
            st = os.stat(item)
        except (OSError, ValueError):
            continue
        if (st.st_dev, st.st_ino) == (output.st_dev, output.st_ino):
            return os.fspath(item)
    return None


def check_outputs(outputs: Iterable[PathLike | None], inputs: Iterable[PathLike | None] = ()) -> None:
    """:func:`check_output` for each output that is a path (standard output needs no check)."""
    inputs = list(inputs)
    for path in outputs:
        if not is_stdout(path):
            check_output(path, inputs)


def same_outputs(outputs: Iterable[PathLike | None]) -> str | None:
    """The first output path that names the same file as an earlier one (after links and
    relative parts: ``hits.tsv`` and ``./hits.tsv``, a symlink and its target, two hard links),
    or None. Standard output is not a file here."""
    seen: set = set()
    for path in outputs:
        if is_stdout(path):
            continue
        shown = os.fspath(path)
        try:
            st = os.stat(shown)
            keys = {("inode", st.st_dev, st.st_ino), ("path", os.path.realpath(shown))}
        except OSError:
            keys = {("path", os.path.realpath(shown))}
        if keys & seen:
            return shown
        seen |= keys
    return None


def format_for_output(path: PathLike | None, explicit: str | None, by_suffix: Mapping[str, str], default: str) -> str:
    """The output format: ``explicit`` when given, else the one the file's suffix names (case
    ignored; ``hits.tsv.gz`` names none), else ``default`` (also for standard output)."""
    if explicit is not None:
        return explicit
    if is_stdout(path):
        return default
    return by_suffix.get(Path(os.fspath(path)).suffix.lower(), default)
