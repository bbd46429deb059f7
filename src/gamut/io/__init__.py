"""Sequence and annotation readers, and writers that never leave half-written files.

The names below are imported on first use, so that importing one submodule (say
:mod:`gamut.io.interrupt`, which every ``gamut`` command's first step needs) does not import the
sequence readers and their compression libraries.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gamut.io.atomic import atomic_output
    from gamut.io.fasta import FastaRecord, read_fasta

__all__ = ["FastaRecord", "atomic_output", "read_fasta"]

_HOMES = {"atomic_output": "gamut.io.atomic", "FastaRecord": "gamut.io.fasta", "read_fasta": "gamut.io.fasta"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gamut.io' has no attribute '{name}'")
    return getattr(importlib.import_module(home), name)
