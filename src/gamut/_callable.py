"""Let an analysis subpackage be called like a function: ``gamut.fold(seq)`` and ``gamut.fold.cpu``.

Each of ``gamut.scan``, ``gamut.fold`` and ``gamut.splice`` is both a package (engines, readers,
writers) and the main entry point of its analysis. The call imports the API module lazily so
``import gamut`` stays fast and CUDA-free.
"""
from __future__ import annotations

import importlib
import sys
import types


def make_package_callable(package: str, api_module: str, function: str) -> None:
    """Make ``sys.modules[package]`` callable, forwarding to ``api_module.function``."""

    class _CallablePackage(types.ModuleType):
        def __call__(self, *args, **kwargs):
            return getattr(importlib.import_module(api_module), function)(*args, **kwargs)

    sys.modules[package].__class__ = _CallablePackage
