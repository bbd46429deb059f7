"""Optional CUDA support: device discovery and run-time kernel compilation through CuPy.

Nothing here imports CuPy at module import time, so gamut works without it.
"""
from gamut.cuda.device import available_gpus, check_gpus_used, gpu_available, parse_gpus, resolve_device
from gamut.cuda.kernels import load_module

__all__ = ["available_gpus", "check_gpus_used", "gpu_available", "load_module", "parse_gpus", "resolve_device"]
