"""Errors that gamut reports to users as one clear line."""
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
