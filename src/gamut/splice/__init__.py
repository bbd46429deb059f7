"""Gelfand spliced alignment. Call ``gamut.splice(base, exons, target, ...)``."""
from gamut._callable import make_package_callable

make_package_callable(__name__, "gamut.splice.api", "splice")
