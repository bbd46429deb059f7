"""For benchmarks only (bench/gil_ab.sh): every Python process started with this folder on PYTHONPATH
sets the interpreter's switch interval from GAMUT_BENCH_SWITCH_INTERVAL (seconds), if given."""
import os
import sys

if os.environ.get("GAMUT_BENCH_SWITCH_INTERVAL"):
    sys.setswitchinterval(float(os.environ["GAMUT_BENCH_SWITCH_INTERVAL"]))
