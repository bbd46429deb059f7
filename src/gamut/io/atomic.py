"""Write outputs so that no data is lost: a regular file through a temporary file beside it,
renamed over it on success; a device or a FIFO in place; standard output as it is. A name that
ends in a compression suffix (``hits.tsv.gz``: :data:`gamut.io.outputs.COMPRESSIONS`) is written
compressed."""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import io
import stat
import sys
from collections.abc import Callable
from collections.abc import Iterable, Iterator, Sequence
from typing import IO

from gamut.errors import UsageError
from gamut.io import tempfiles
from gamut.io.interrupt import deferred_ending, temporary_file
from gamut.io.outputs import OutputTarget, PathLike, check_output, is_stdout, output_compression
from gamut.timeline import span


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
    with atomic_outputs([(path, mode)], inputs) as (handle,):
        yield handle


@contextlib.contextmanager
def atomic_outputs(targets: Sequence[tuple[PathLike | None, str | None]],
                   inputs: Iterable[PathLike | None] = ()) -> Iterator[list[IO | None]]:
    """Yield a handle for each ``(path, mode)`` of ``targets``: outputs that appear together
    (mode None: no file, the handle is None).

    Each is what :func:`atomic_output` gives (standard output, a device or FIFO written in place,
    else a temporary file beside the target), and every check is made before the block runs.
    When the block succeeds, every temporary file is completed (closed, its permission bits set)
    before the first is renamed over its target; a failure before that (in the block, or closing
    a file on a full disk) removes every temporary file and leaves every old output as it was. A
    signal that comes during the renames waits until they are done (``gamut.io.interrupt``), so
    an interrupted run leaves the old outputs or the new ones, not a mixture.
    """
    inputs = list(inputs)
    with contextlib.ExitStack() as stack:
        handles: list[IO | None] = []
        direct: list[tuple[list[IO], OutputTarget]] = []
        pending: list[tuple[list[IO], tempfiles.Temporary, OutputTarget]] = []
        for path, mode in targets:
            if mode is None or is_stdout(path):
                handles.append(None if mode is None else sys.stdout if "b" not in mode else sys.stdout.buffer)
                continue
            target = check_output(path, inputs)
            if target.direct:
                layers = _layers(stack, _open_direct(target), output_compression(path), mode)
                handles.append(layers[0])
                direct.append((layers, target))
                continue
            layers, tmp = _temporary(stack, target, mode, output_compression(path))
            handles.append(layers[0])
            pending.append((layers, tmp, target))
        try:
            yield handles
            with span("outputs complete"):
                for layers, target in direct:
                    _close(layers, target)
                for layers, tmp, target in pending:  # every temporary file complete before the first rename
                    _close(layers, target)
                    _give_mode(tmp.path, target.existing)
        except OSError as exc:  # e.g. a full disk: gamut.cli names the output
            if not exc.filename and len(pending) == 1:
                exc.filename = pending[0][2].shown
            raise
        with deferred_ending(), span("outputs renamed"):
            for _, tmp, target in pending:
                _named(functools.partial(replace_file, tmp.path, target.real), target)


#: ``renameat2``'s flag that swaps two names in one step (Linux 3.15 and later).
RENAME_EXCHANGE = 2


@functools.cache
def _exchange_call() -> Callable[[str, str], bool] | None:
    """``exchange(a, b)``, swapping the two names atomically (True when done), where the C library
    has ``renameat2``; else None."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    at_cwd = getattr(os, "AT_FDCWD", -100)

    def exchange(a: str, b: str) -> bool:
        return renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), RENAME_EXCHANGE) == 0

    return exchange


def replace_file(new: str, dest: str) -> None:
    """``os.replace(new, dest)``, without the wait some file systems add when a rename replaces a
    file: ext4 (``auto_da_alloc``) writes the new file's data out before such a rename returns,
    about 0.4 s per GiB on the development machine, seconds for a scan's 4.5 GB of TSV. Where
    ``dest`` is a regular file and the system can, the two names are exchanged in one step
    (``renameat2(RENAME_EXCHANGE)``: ``dest`` is the new file at once, as with a rename) and the
    old file, now named ``new``, is removed. Otherwise (``dest`` missing or not a regular file, no
    ``renameat2``, a file system without the exchange) ``os.replace``, which raises as it does."""
    exchange = _exchange_call()
    try:
        exchanged = exchange is not None and stat.S_ISREG(os.lstat(dest).st_mode) and exchange(new, dest)
    except OSError:
        exchanged = False
    if not exchanged:
        os.replace(new, dest)
        return
    # ``dest`` is the new file now; ``new`` names what ``dest`` was
    try:
        was_dir = stat.S_ISDIR(os.lstat(new).st_mode)
    except FileNotFoundError:  # removed meanwhile (tempfiles.remove_stale of another run)
        return
    if was_dir:  # a directory took dest's place meanwhile: swap back, and fail as os.replace does
        exchange(new, dest)
        os.replace(new, dest)
        return
    with contextlib.suppress(OSError):  # if it stays, the next run into this place removes it as stale
        os.unlink(new)


def _open_direct(target: OutputTarget) -> IO:
    try:
        return open(target.real, "wb")
    except OSError as exc:  # e.g. a socket, or a device we may not open
        raise UsageError(f"cannot write {target.shown}: {exc.strerror or exc}") from None


def _close(layers: list[IO], target: OutputTarget) -> None:
    """Close an output's layers in order (:func:`_layers`): the text layer, the compressed stream
    (completing it), the file; an error names ``target``."""
    for layer in layers:
        _named(layer.close, target)


def _temporary(stack: contextlib.ExitStack, target: OutputTarget, mode: str,
               compression: str | None) -> tuple[list[IO], tempfiles.Temporary]:
    """A temporary file beside ``target`` (:mod:`gamut.io.tempfiles`: named and locked; the
    stale ones of ``target`` removed first), open in ``mode`` through ``compression``: its
    layers, outermost first (:func:`_layers`). ``stack`` removes the file when it closes (it is
    gone by then once renamed) and a signal that ends the command removes it too."""
    tempfiles.remove_stale(target.real)
    try:
        tmp = tempfiles.create(target.real)
    except OSError as exc:  # e.g. no permission to write in the directory
        raise UsageError(f"cannot write {target.shown}: {exc.strerror or exc}") from None
    stack.callback(tmp.release)  # the lock, held until the file is renamed or removed

    def discard() -> None:
        with contextlib.suppress(OSError):
            os.unlink(tmp.path)

    stack.callback(discard)
    stack.enter_context(temporary_file(tmp.path))
    return _layers(stack, os.fdopen(os.dup(tmp.fd), "wb"), compression, mode), tmp


def _layers(stack: contextlib.ExitStack, raw: IO, compression: str | None, mode: str) -> list[IO]:
    """The handles an output is written through, outermost first and ``raw`` (a binary file) last:
    a compressing writer when ``compression`` is named, and a text layer for a text ``mode`` (the
    encoding and newlines of :func:`open`'s). ``stack`` closes each, outermost first, when the
    block fails (on success :func:`_close` does, raising errors)."""
    layers = [raw]
    stack.callback(_quiet_close, raw)
    if compression is not None:
        from gamut.io.compressed import compressing_writer

        layers.insert(0, compressing_writer(raw, compression))
        stack.callback(_quiet_close, layers[0])
    if "b" not in mode:
        layers.insert(0, io.TextIOWrapper(layers[0], encoding=None))
        stack.callback(_quiet_close, layers[0])
    return layers


def _quiet_close(handle: IO) -> None:
    with contextlib.suppress(OSError, ValueError):
        handle.close()


def _named(action, target: OutputTarget) -> None:
    """``action()``; an OSError without a file name gets ``target``'s (gamut.cli names the output)."""
    try:
        action()
    except OSError as exc:
        if not exc.filename:
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
