"""Temporary files beside an output: named for whose they are, locked while their writer lives,
and removed by the next run into the same place once their writer is gone.

A temporary file of ``hits.tsv`` is ``.hits.tsv.gamut-USER-PID.XXXXXXXX.tmp``: a user who finds
one sees that gamut made it, for whom, and in which process. Its writer holds an exclusive
advisory lock on it (:func:`fcntl.flock`) for as long as the file is open; the kernel releases
the lock when the process ends, however it ends (``kill -9`` included). A run killed outright
cannot remove its temporary files, so :func:`remove_stale` does it at the start of the next run
into the same place: it removes only this user's files of the exact name pattern whose lock it
can take, that is whose writer is gone. A lock tells that better than a process id, which the
system reuses. Another user's files, and those of a live run, are left alone.
"""
from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locks, so nothing is ever removed as stale
    fcntl = None

#: The longest file name most file systems take (bytes).
NAME_MAX = 255
#: Room a temporary name needs beyond its prefix: a process id, mkstemp's 8 letters, ".tmp".
_TAIL = 30


@dataclass(frozen=True)
class Temporary:
    """A temporary file being written: its ``path``, and ``fd``, the descriptor that holds its lock
    (write through a duplicate of it, so that closing the writer keeps the lock until
    :meth:`release`)."""

    path: str
    fd: int

    def release(self) -> None:
        """Close the locking descriptor (after the file was renamed, or removed)."""
        with contextlib.suppress(OSError):
            os.close(self.fd)


def user_name() -> str:
    """This process' user name as a file name may hold it (``uid1234`` when the system has none)."""
    try:
        import pwd

        name = pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError, AttributeError):
        name = f"uid{os.geteuid()}" if hasattr(os, "geteuid") else "user"
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "user"


def _owner() -> str:
    """``gamut-USER``: whose temporary files these are."""
    return f"gamut-{user_name()}"


def _short_name(name: str) -> str:
    """``name`` as temporary names hold it: cut short when the whole name would be too long for
    the file system."""
    while name and len(os.fsencode(f".{name}.{_owner()}-")) + _TAIL > NAME_MAX:
        name = name[:-1]
    return name


def create(target: str | os.PathLike) -> Temporary:
    """A new temporary file beside ``target``, created and locked (``OSError`` when it cannot be)."""
    target = Path(target)
    prefix = f".{_short_name(target.name)}.{_owner()}-{os.getpid()}."
    while True:
        fd, path = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=target.parent)
        if fcntl is None:
            return Temporary(path, fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits while a cleaner looks at it (microseconds)
            if _same_file(path, os.fstat(fd)):
                return Temporary(path, fd)
        except OSError:
            os.close(fd)
            raise
        os.close(fd)  # a cleaner removed it before it was locked: make another


def remove_stale(target: str | os.PathLike, *, every_target: bool = False) -> list[str]:
    """Remove the temporary files of ``target`` (with ``every_target``: of every file in
    ``target``, a directory) left by runs of this user that are gone; returns the paths removed.
    Files of another user, of another pattern, or locked by a live writer are left alone."""
    if fcntl is None:
        return []
    target = Path(target)
    directory = target if every_target else target.parent
    name = r".+" if every_target else re.escape(_short_name(target.name))
    pattern = re.compile(rf"\.{name}\.{re.escape(_owner())}-\d+\.[a-z0-9_]+\.tmp")
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for entry in entries:
        if pattern.fullmatch(entry.name) and _remove_if_stale(entry.path):
            removed.append(entry.path)
    return removed


def _remove_if_stale(path: str) -> bool:
    """Remove ``path`` if it is a regular file of this user whose lock is free (its writer gone)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # gone already, a symbolic link, or not ours to read
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its writer is alive
            return False
        if not _same_file(path, st):
            return False
        os.unlink(path)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _same_file(path: str, st: os.stat_result) -> bool:
    """Whether ``path`` (not followed) is still the file of ``st``."""
    try:
        now = os.lstat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)
