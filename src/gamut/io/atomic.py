"""Write outputs so that no data is lost: a regular file through a temporary file beside it,
renamed over it on success; a device or a FIFO in place; standard output as it is."""
from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO

from gamut.errors import UsageError
from gamut.io.interrupt import temporary_file
from gamut.io.outputs import OutputTarget, PathLike, check_output, is_stdout


@contextlib.contextmanager
def atomic_output(path: PathLike | None, mode: str = "w", inputs: Iterable[PathLike | None] = ()) -> Iterator[IO]:
    """Yield a file handle for ``path``; a regular file appears only if the block succeeds.

    ``None`` or ``"-"`` yields standard output instead. Whatever :func:`check_output` refuses
    (an input among ``inputs``, a directory, a read-only file, a missing directory) is a one-line
    :class:`UsageError` before the block runs. A character device or a FIFO is opened and
    written directly (renaming a file over it would replace it); a symlink's target is replaced
    and the link kept. A replaced file keeps its permission bits. The temporary file is removed
    on any exception; a signal that ends the command removes it too (``gamut.io.interrupt``).
    """
    if is_stdout(path):
        yield sys.stdout if "b" not in mode else sys.stdout.buffer
        return
    target = check_output(path, inputs)
    if target.direct:
        with _open_direct(target, mode) as handle:
            yield handle
        return
    yield from _write_atomically(target, mode)


def _open_direct(target: OutputTarget, mode: str) -> IO:
    try:
        return open(target.real, mode)
    except OSError as exc:  # e.g. a socket, or a device we may not open
        raise UsageError(f"cannot write {target.shown}: {exc.strerror or exc}") from None


def _write_atomically(target: OutputTarget, mode: str) -> Iterator[IO]:
    directory = target.real.parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.real.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:  # e.g. no permission to write in the directory
        raise UsageError(f"cannot write {target.shown}: {exc.strerror or exc}") from None
    try:
        with temporary_file(tmp):
            with os.fdopen(fd, mode) as handle:
                yield handle
            _give_mode(tmp, target.existing)
            os.replace(tmp, target.real)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not exc.filename:  # e.g. a full disk: gamut.cli names the output
            exc.filename = target.shown
        raise


def _give_mode(tmp: str, existing: os.stat_result | None) -> None:
    """The replaced file's owner and permission bits, or a new file's usual ones (mkstemp makes 0600)."""
    if existing is None:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        return
    mine = os.stat(tmp)
    if (mine.st_uid, mine.st_gid) != (existing.st_uid, existing.st_gid):
        with contextlib.suppress(OSError):  # only root may give a file away; others keep their own
            os.chown(tmp, existing.st_uid, existing.st_gid)
    os.chmod(tmp, stat.S_IMODE(existing.st_mode))
