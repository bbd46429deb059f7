"""Errors that gamut reports to users as one clear line.

The ``gamut`` command prints every failure as one line ``gamut: error: ...`` on standard error,
never a traceback, and exits with:

- 0: success; also when the reader of standard output goes away (``gamut ... | head``).
- 1: a :class:`GamutError` (bad input, no usable device, a bad option value of ``gamut miranda``,
  as miRanda exits); writing an output failed (an ``OSError`` such as a full disk: ``writing FILE
  failed: No space left on device``); or the run ran out of memory (``MemoryError``).
- 2: a malformed command line: what argparse itself rejects (unknown option, missing argument),
  and a bad option value of ``gamut scan``, ``fold`` or ``splice`` (:func:`option_errors`).
- 130 / 143: interrupted by SIGINT / SIGTERM (128 + the signal; see :mod:`gamut.io.interrupt`).
"""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    import argparse


class GamutError(Exception):
    """A user-facing error: the CLI prints ``gamut: error: <message>`` and exits non-zero."""

    exit_code = 1


class InputError(GamutError):
    """Bad input data (a file, a record, a letter), with the file and record named in the message."""


class UsageError(GamutError):
    """A bad option or argument value (exit status 1 from the API and ``gamut miranda``; 2 from the
    other sub-commands, whose parsers report it: :func:`option_errors`)."""


class DeviceError(GamutError):
    """The requested compute device (GPU) is not available."""


@contextlib.contextmanager
def option_errors(parser: argparse.ArgumentParser | None) -> Iterator[None]:
    """Report a :class:`UsageError` raised inside as ``parser``'s one-line usage error (exit status
    2), as argparse reports its own; without a parser, let it through."""
    try:
        yield
    except UsageError as exc:
        if parser is None:
            raise
        parser.error(str(exc))
