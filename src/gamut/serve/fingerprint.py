"""What code a ``gamut`` command would run, in a few hundred ``stat`` calls: the size and
modification time of every file of the gamut package, and the modification time of the
environment's site-packages directories (which an install, upgrade or removal of any package
changes).

A server takes a :class:`Snapshot` before it imports anything more (before its warm-up); each
command sends its own digest. Where they differ and the server's own files have changed since
(an edited source under an editable install, a ``pip install``), the server's code is stale: it
declines the command and ends (:mod:`gamut.serve.server`). Sizes and modification times, not
contents: hashing every file at every command's start would cost milliseconds more, and an edit
that keeps both a file's size and its modification time to the nanosecond is not one an editor,
``git checkout`` or ``pip`` makes.

Light on purpose: the client side runs before any of gamut's heavy imports.
"""
from __future__ import annotations

import hashlib
import os
import site
from pathlib import Path

#: The gamut package directory (absolute: a server's working directory changes with each command).
PACKAGE = Path(__file__).resolve().parent.parent
#: Directories never part of the code (Python's compiled files; Numba's cache beside a source).
_SKIPPED_DIRS = ("__pycache__",)


def _package_files(directory: str, prefix: str, found: dict[str, tuple[int, int]]) -> None:
    with os.scandir(directory) as entries:
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name.endswith("~"):  # editors' swap, lock and backup files
                continue
            if entry.is_dir(follow_symlinks=False):
                if name not in _SKIPPED_DIRS:
                    _package_files(entry.path, f"{prefix}{name}/", found)
            else:
                info = entry.stat()
                found[f"{prefix}{name}"] = (info.st_size, info.st_mtime_ns)


def _site_directories() -> list[str]:
    directories = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        directories.append(site.getusersitepackages())
    return directories


class Snapshot:
    """The files of the package directory ``package`` (name -> size, modification time) and the
    site-packages directories' modification times, with their digest. (Not a dataclass: importing
    ``dataclasses`` would cost every command's start 10 ms.)"""

    def __init__(self, package: Path, files: dict[str, tuple[int, int]], digest: str) -> None:
        self.package = package
        self.files = files
        self.digest = digest

    @classmethod
    def take(cls, package: Path = PACKAGE) -> Snapshot:
        files: dict[str, tuple[int, int]] = {}
        _package_files(str(package), f"{package.name}/", files)
        for directory in _site_directories():
            try:
                files[f"site-packages directory {directory}"] = (0, os.stat(directory).st_mtime_ns)
            except OSError:
                continue
        text = "\n".join(f"{name}\0{size}\0{mtime}" for name, (size, mtime) in sorted(files.items()))
        digest = hashlib.blake2b(f"{package}\n{text}".encode(), digest_size=16).hexdigest()
        return cls(package, files, digest)

    def change(self, later: Snapshot) -> str | None:
        """What differs in ``later`` (one file, in words), None if nothing does."""
        if later.digest == self.digest:
            return None
        for name in sorted(self.files.keys() | later.files.keys()):
            if name not in later.files:
                return f"{name} was removed"
            if name not in self.files:
                return f"{name} was added"
            if self.files[name] != later.files[name]:
                return f"{name} changed"
        return "the package moved"


def digest() -> str:
    """This process's view of the code a command would run (:class:`Snapshot`'s digest)."""
    return Snapshot.take().digest
