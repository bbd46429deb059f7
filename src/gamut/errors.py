"""Errors that gamut reports to users as one clear line.

The ``gamut`` command prints every failure as one line ``gamut: error: ...`` on standard error,
never a traceback, and exits with:

- 0: success; also when the reader of standard output goes away (``gamut ... | head``).
- 1: a :class:`GamutError` (bad input, bad option value, no usable device); writing an output
  failed (an ``OSError`` such as a full disk: ``writing FILE failed: No space left on device``);
  or the run ran out of memory (``MemoryError``).
- 2: a malformed command line that argparse itself rejects (unknown option, missing argument).
- 130 / 143: interrupted by SIGINT / SIGTERM (128 + the signal; see :mod:`gamut.io.interrupt`).
"""
from __future__ import annotations


class GamutError(Exception):
    """A user-facing error: the CLI prints ``gamut: error: <message>`` and exits non-zero."""

    exit_code = 1


class InputError(GamutError):
    """Bad input data (a file, a record, a letter), with the file and record named in the message."""


class UsageError(GamutError):
    """A bad command-line option or argument value (exit status 1, as miRanda uses)."""


class DeviceError(GamutError):
    """The requested compute device (GPU) is not available."""
