"""miRNA target scanning with miRanda 3.3a's exact model (``gamut.scan`` is the entry point).

Layers: :mod:`~gamut.scanning.api` (the Python API), :mod:`~gamut.scanning.engines` (alignment
engines), :mod:`~gamut.scanning.energy` (duplex free energies), :mod:`~gamut.scanning.pipeline`
(jobs and runners) and :mod:`~gamut.scanning.sinks` (output formats).
"""
