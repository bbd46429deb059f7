"""Nussinov RNA folding. Call ``gamut.fold(sequence, min_loop=..., device=...)``."""
from gamut._callable import make_package_callable

make_package_callable(__name__, "gamut.fold.api", "fold")
