"""The ``gamut`` command: a thin dispatcher to each analysis' command-line module.

Each module in ``SUBCOMMANDS`` exposes ``register(subparsers)``, which adds its sub-parser and
sets ``func(args) -> int``. ``gamut miranda`` takes miRanda 3.3a's own argv and bypasses argparse.
"""
from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import warnings
from typing import Callable, NoReturn

from gamut.errors import GamutError

#: Each sub-command and the module that registers it.
SUBCOMMANDS = {"scan": "gamut.scanning.cli", "fold": "gamut.folding.cli", "splice": "gamut.splicing.cli",
               "access": "gamut.access.cli", "serve": "gamut.serve.cli"}


class OneLineParser(argparse.ArgumentParser):
    """argparse with its errors on one line (``gamut: error: gamut scan: ...``), exit status 2;
    ``--help`` still shows the usage. A negative number after an option is its value whatever its
    form (``--score-threshold -1e9``, ``--gap-open -9``, ``--energy-threshold -.5``): argparse's
    own pattern knows no exponents, and took ``-1e9`` for an option (sub-parsers are of this class
    too)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        from gamut.numerals import NEGATIVE_NUMBER

        self._negative_number_matcher = NEGATIVE_NUMBER

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"gamut: error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: of every sub-command, or of ``command`` alone where it names one
    (only its module imported: a scan's command line starts without the folding code, whose
    modules bring Numba)."""
    from gamut import __version__

    parser = OneLineParser(
        prog="gamut",
        description="GPU-accelerated dynamic programming for RNA and DNA sequence analysis.",
        epilog="'gamut miranda QUERY REF [miRanda options]' runs a miRanda 3.3a-compatible scan.",
    )
    parser.add_argument("--version", action="version", version=f"gamut {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("miranda", help="miRanda 3.3a drop-in: gamut miranda QUERY REF [miRanda options]")
    for name in [SUBCOMMANDS[command]] if command in SUBCOMMANDS else SUBCOMMANDS.values():
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


def option_value(argv: list[str], flag: str) -> str | None:
    """The value of ``flag`` in ``argv`` (``--flag VALUE`` or ``--flag=VALUE``; the first), else None."""
    for k, arg in enumerate(argv):
        if arg == flag and k + 1 < len(argv):
            return argv[k + 1]
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1:]
    return None


def cuda_requested(argv: list[str]) -> int | None:
    """The first GPU a command line asks for with ``--device cuda`` (0 unless ``--gpus`` names
    another), else None. Only a hint for :func:`gamut.cuda.device.prewarm`: the sub-command parses
    and checks its options itself."""
    if option_value(argv, "--device") != "cuda":
        return None
    first = (option_value(argv, "--gpus") or "0").split(",")[0].strip()
    if first.lower() == "all":
        return 0
    return int(first) if first.isdigit() else None


def scan_worker_gpus(argv: list[str]) -> list[int]:
    """The GPUs of the worker processes a scan on several GPUs will use (``--gpus 0,1`` or ``all``
    and ``--device cuda``: :func:`~gamut.scanning.pipeline.lanes.worker_lanes`, two on each;
    none for one GPU, with ``--cluster``, or for other commands). A hint for :func:`gamut.scanning.pipeline.gpu_workers.prestarted`: a run whose GPUs
    turn out otherwise starts its own workers."""
    if not argv or argv[0] not in ("scan", "miranda") or cuda_requested(argv) is None:
        return []
    if option_value(argv, "--cluster") is not None:
        return []
    from gamut.scanning.pipeline.lanes import worker_lanes

    listed = (option_value(argv, "--gpus") or "").strip()
    if listed.lower() == "all":
        from gamut.cuda.device import visible_gpu_count

        count = visible_gpu_count()
        return worker_lanes(range(count)) if count > 1 else []
    ids = [g.strip() for g in listed.split(",")]
    if len(ids) < 2 or not all(g.isdigit() for g in ids):
        return []
    return worker_lanes([int(g) for g in ids])


def main(argv: list[str] | None = None, ending: bool = False) -> int:
    """Run the command ``argv`` (default: this process' arguments); ``ending``: the process ends
    when this returns (:func:`run`), so it need not wait for the GPU workers it stops."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from gamut.io.interrupt import end_promptly_on_signals
    from gamut.scanning.pipeline.gpu_workers import prestarted

    gpu = cuda_requested(argv)
    workers = scan_worker_gpus(argv)
    cluster = option_value(argv, "--cluster") is not None
    with prestarted(workers, ending):  # worker processes first: they start beside this one
        if workers:  # their GPUs: this process never initialises CUDA
            from gamut.cuda.device import discover_from_driver_listing

            discover_from_driver_listing()
        if gpu is not None and not workers and not cluster:  # (on several GPUs or a cluster, the workers scan)
            from gamut.cuda.device import prewarm

            prewarm(gpu)  # CuPy (and cupyx) and the CUDA context on a thread, beside the imports below
        if not (cluster and argv[0] == "scan"):  # (a scan on a cluster imports Numba after its workers' orders)
            from gamut.probes import numba_without_probes

            numba_without_probes()
        with end_promptly_on_signals(), warnings.catch_warnings():
            warnings.showwarning = _one_line_warning
            return _dispatch(argv)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning on the command line: ``gamut: warning: ...``, one line, no source location."""
    print(f"gamut: warning: {message}", file=sys.stderr if file is None else file, flush=True)


def run() -> NoReturn:
    """The ``gamut`` command (console script and ``python -m gamut``): in this user's ``gamut serve``
    process where one listens (:mod:`gamut.serve`), else :func:`main`, then a quick exit.

    When :func:`main` returns, every output is complete (files are written to a temporary name and
    renamed before it returns). Standard output and error are flushed, the ``atexit`` handlers run,
    and the process ends with ``os._exit``, skipping Python's own teardown (unloading Numba's
    compiled code, LLVM and the CUDA context): 0.12-0.15 s of a 0.55 s one-pair scan on a 2-core
    CPU, 0.25-0.3 s of 2.1 s on the H100 host. Under a profiler or a tracer the ordinary exit is
    kept, as they write their reports at the end.
    """
    from gamut.serve.client import run_served
    from gamut.timeline import mark

    mark("command starts", command=" ".join(sys.argv[1:2]))
    served = run_served(sys.argv[1:])  # a `gamut serve` process of this user and environment runs it
    if served is not None:
        os._exit(served)
    from gamut.io.heap import reuse_large_buffers

    reuse_large_buffers()  # a process of its own: per-chunk buffers are reused (see gamut.io.heap)
    code = flush_streams(main(ending=True))
    mark("command ends", status=code)
    finish = getattr(atexit, "_run_exitfuncs", None)
    if finish is None or sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    finish()
    os._exit(code)


def flush_streams(code: int) -> int:
    """Flush standard output and error after a command; a failed write of its output turns a
    status 0 into 1 (with a message)."""
    for stream, name in ((sys.stdout, "standard output"), (sys.stderr, "standard error")):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader has gone (e.g. `| head`): nothing more to say
            pass
        except (OSError, ValueError) as exc:
            if stream is sys.stdout:
                print(f"gamut: error: writing {name} failed: {getattr(exc, 'strerror', None) or exc}",
                      file=sys.stderr)
                code = code or 1
    return code


def _dispatch(argv: list[str]) -> int:
    try:
        if argv and argv[0] == "miranda":
            from gamut.scanning.miranda_cli import main as miranda_main

            return _first_run(lambda: miranda_main(argv[1:]))
        parser = build_parser(argv[0] if argv else None)
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 0
        return _first_run(lambda: int(args.func(args) or 0))
    except GamutError as exc:
        print(f"gamut: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:  # outside end_promptly_on_signals (main() called from a thread)
        print("gamut: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of standard output has gone (e.g. `| head`): not an error
        return 0
    except OSError as exc:  # the readers turn theirs into InputError: this is an output failing
        print(f"gamut: error: writing {_output_name(exc)} failed: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"gamut: error: out of memory in {_command(argv)}: {_MEMORY_HINTS.get(_command(argv), _MEMORY_HINT)}",
              file=sys.stderr)
        return 1


_MEMORY_HINT = "try a smaller input (fewer or shorter records per run)"
_MEMORY_HINTS = {
    "gamut scan": "try a smaller --partition-cells, or fewer queries or references per run",
    "gamut miranda": "try a smaller --partition-cells, or fewer queries or references per run",
    "gamut fold": "try fewer or shorter sequences per run, or --no-structure",
    "gamut splice": "try fewer targets per run, or shorter bases and targets",
}


def _command(argv: list[str]) -> str:
    return f"gamut {argv[0]}" if argv and not argv[0].startswith("-") else "gamut"


def _output_name(exc: OSError) -> str:
    """The output a failed write was for: the file named on the error (``gamut.io.atomic`` names
    its target), else standard output, written without a name."""
    name = exc.filename
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    return str(name) if name else "standard output"


def _first_run(command: Callable[[], int]) -> int:
    """Run ``command()``; on an environment's first run, say that it compiles and, once it has
    succeeded, how long it took (see gamut.cache.FirstRunNotice)."""
    from gamut.cache import FirstRunNotice

    notice = FirstRunNotice.start()
    code = 1
    try:
        code = command()
    finally:
        if notice is not None:
            notice.finish(code == 0)
    return code


if __name__ == "__main__":
    run()
