"""Zuker's free-energy folding with ViennaRNA's Turner 2004 model (``gamut fold --model turner``, issue 46)."""
