"""Nussinov RNA folding (``gamut.fold`` is the entry point): CPU and GPU engines, batches, traceback."""
