"""Gelfand spliced alignment (``gamut.splice`` is the entry point): CPU and GPU engines of the exact DP."""
