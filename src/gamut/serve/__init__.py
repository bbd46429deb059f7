"""A warm ``gamut`` process for many short commands: ``gamut serve``.

A ``gamut`` command pays for its start-up before it reads a byte: Python, NumPy, Numba and CuPy
imported, the CUDA context created, Numba's and CuPy's compiled code loaded from their disk
caches (about 1 s on a GPU host, most of a small scan). ``gamut serve`` pays it once and keeps it:
while it runs, every ``gamut`` command of the same user and Python environment (with the same
settings) hands its command line, working directory, environment and standard streams to it
(:mod:`gamut.serve.client`), which runs the command as the command's own process would
(:mod:`gamut.serve.server`) and returns its exit status. Outputs are byte for byte the same.
"""
