"""Write output files atomically: a temporary file beside the target, renamed on success."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import IO, Iterator

from gamut.errors import UsageError
from gamut.io.interrupt import temporary_file


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike | None, mode: str = "w") -> Iterator[IO]:
    """Yield a file handle for ``path``; the file appears only if the block succeeds.

    ``None`` or ``"-"`` yields standard output (text mode) instead. A missing or unwritable
    directory is a :class:`UsageError` (one line, before any work). The temporary file is removed
    on any exception, including the ``SystemExit`` that ``gamut.cli`` raises on SIGTERM.
    """
    if path is None or str(path) == "-":
        yield sys.stdout if "b" not in mode else sys.stdout.buffer
        return
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise UsageError(f"cannot write {target}: the directory {directory} does not exist")
    if target.is_dir():
        raise UsageError(f"cannot write {target}: it is a directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:  # e.g. no permission to write in the directory
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with temporary_file(tmp):
            with os.fdopen(fd, mode) as handle:
                yield handle
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the usual permissions
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
