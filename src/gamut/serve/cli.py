"""``gamut serve``: keep a warm gamut process for the commands that follow (docs/serve.md)."""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from gamut.cuda.device import DEVICES
from gamut.errors import UsageError
from gamut.numerals import number_type
from gamut.serve import protocol

#: Default seconds a server waits for a command before it ends.
IDLE_TIMEOUT = 3600.0
#: How long ``--detach`` waits for the server's warm-up.
READY_TIMEOUT = 600.0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="keep a warm gamut process: later gamut commands start in milliseconds",
        description="Start gamut once (imports, CUDA context, compiled code) and run every later 'gamut' "
        "command of this user and Python environment in it, one at a time, with the command's own "
        "streams, directory and environment: the same outputs and exit status, without the start-up. "
        "Set GAMUT_SERVER=off to run a command in its own process.",
    )
    p.add_argument("--device", choices=DEVICES, default="auto",
                   help="what to warm up: cpu, cuda, or auto: the CPU and a usable GPU (default)")
    p.add_argument("--idle-timeout", type=number_type(at_least=0), default=IDLE_TIMEOUT, metavar="SECONDS",
                   help=f"end after this long without a command; 0: never (default {IDLE_TIMEOUT:g})")
    p.add_argument("--detach", action="store_true", help="run in the background; return once it is ready")
    p.add_argument("--stop", action="store_true", help="stop the server of this environment")
    p.add_argument("--status", action="store_true",
                   help="say whether a server of this environment listens, and since when (exit 1 if none)")
    p.set_defaults(func=run)


def _log(message: str) -> None:
    print(f"gamut serve: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    path = protocol.socket_path()
    if path is None:
        raise UsageError("gamut serve: GAMUT_SERVER turns serving off; unset it or name a socket")
    if args.stop:
        return _stop(path)
    if args.status:
        return _status(path)
    if args.idle_timeout < 0:
        raise UsageError("gamut serve: --idle-timeout must be at least 0")
    if "GAMUT_SERVER" not in os.environ:
        protocol.private_directory(path)
    elif not path.parent.is_dir():
        raise UsageError(f"gamut serve: cannot listen on {path}: no directory {path.parent} (GAMUT_SERVER)")
    if args.detach:
        return _detach(path, args)
    from gamut.serve.server import serve

    serve(path, _devices(args.device), args.idle_timeout, _log)
    return 0


def _devices(device: str) -> list[str]:
    if device != "auto":
        return [device]
    from gamut.cuda import resolve_device

    return ["cpu"] + (["cuda"] if resolve_device("auto", "scan") == "cuda" else [])


def _ask(path: Path, request: dict) -> dict | None:
    """The server's reply to ``request``, None if no server listens on ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
            protocol.send(sock, request)
            return protocol.receive(sock)[0]
        except (OSError, ValueError):
            return None


def _stop(path: Path) -> int:
    reply = _ask(path, {"stop": True})
    if not reply or not reply.get("stopped"):
        _log(f"no server listens on {path}")
        return 1
    _log(f"stopped the server on {path}")
    return 0


def _status(path: Path) -> int:
    """One line on standard output: the server's pid, devices, uptime and commands run."""
    reply = _ask(path, {"status": True})
    info = reply.get("status_of_server") if reply else None
    if not info:
        print(f"gamut serve: no server listens on {path}")
        return 1
    idle = f"ends after {info['idle_timeout_s']:g} s idle" if info["idle_timeout_s"] else "runs until stopped"
    print(f"gamut serve: pid {info['pid']} on {info['socket']}, warmed up on {', '.join(info['devices'])}, "
          f"up {info['up_s']:g} s, {info['commands']} commands run, {idle}")
    return 0


def _detach(path: Path, args: argparse.Namespace) -> int:
    """Start the server as a process of its own session, logging beside its socket; wait until it listens."""
    from gamut.serve.server import ALREADY, listening

    if listening(path):
        raise UsageError(ALREADY.format(path=path))
    log = path.with_suffix(".log")
    command = [sys.executable, "-m", "gamut", "serve", "--device", args.device,
               "--idle-timeout", str(args.idle_timeout)]
    with open(log, "ab") as out, open(os.devnull, "rb") as nothing:
        child = subprocess.Popen(command, stdin=nothing, stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + READY_TIMEOUT
    while not listening(path):
        if child.poll() is not None:
            raise UsageError(f"gamut serve: the server ended while starting (status {child.returncode}); see {log}")
        if time.monotonic() > deadline:
            child.terminate()
            raise UsageError(f"gamut serve: the server was not ready after {READY_TIMEOUT:g} s; see {log}")
        time.sleep(0.05)
    _log(f"ready on {path} (pid {child.pid}; log {log})")
    return 0
