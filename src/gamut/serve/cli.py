"""``gamut serve``: keep a warm gamut process for the commands that follow (docs/serve.md)."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from gamut.cuda.device import DEVICES
from gamut.errors import UsageError
from gamut.numerals import number_type
from gamut.serve import lock, protocol, trust

#: Default seconds a server waits for a command before it ends.
IDLE_TIMEOUT = 3600.0
#: How long ``--detach`` waits for the server's warm-up.
READY_TIMEOUT = 600.0
#: How long ``--stop`` waits for an idle server to end.
STOP_TIMEOUT = 30.0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="keep a warm gamut process: later gamut commands start in milliseconds",
        description="Start gamut once (imports, CUDA context, compiled code) and run every later 'gamut' "
        "command of this user and Python environment in it, with the command's own streams, directory "
        "and environment: the same outputs and exit status, without the start-up. A command that comes "
        "while another runs, or after gamut's files changed, runs in its own process. "
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
    p.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)  # the lock --detach took, handed down
    p.set_defaults(func=run)


def _log(message: str) -> None:
    print(f"gamut serve: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from gamut.serve.fingerprint import Snapshot

    code = Snapshot.take()  # before the server imports anything more (see gamut.serve.fingerprint)
    path = protocol.socket_path()
    if path is None:
        raise UsageError("gamut serve: GAMUT_SERVER turns serving off; unset it or name a socket")
    named = protocol.is_named()
    if args.stop:
        return _stop(path, named)
    if args.status:
        return _status(path, named)
    if args.idle_timeout < 0:
        raise UsageError("gamut serve: --idle-timeout must be at least 0")
    try:
        path = trust.prepare_directory(path, named)
    except trust.Untrusted as why:
        raise UsageError(f"gamut serve: cannot listen on {path}: {why}; set XDG_RUNTIME_DIR to a directory of "
                         "your own, or GAMUT_SERVER to a socket path in one") from None
    if args.detach:
        return _detach(path, named, args)
    from gamut.serve.server import serve, take_lock

    lock_fd = _adopt(args.lock_fd, path) if args.lock_fd is not None else take_lock(path)
    serve(path, _devices(args.device), args.idle_timeout, lock_fd, code)
    return 0


def _adopt(fd: int, path: Path) -> int:
    try:
        return lock.adopt(fd)
    except lock.Held as held:
        raise UsageError(protocol.already(path, held.pid)) from None
    except OSError as exc:
        raise UsageError(f"gamut serve: --lock-fd {fd}: {exc.strerror or exc}") from None


def _devices(device: str) -> list[str]:
    if device != "auto":
        return [device]
    from gamut.cuda import resolve_device

    return ["cpu"] + (["cuda"] if resolve_device("auto", "scan") == "cuda" else [])


def _ask(path: Path, named: bool, request: dict) -> dict | None:
    """The server's reply to ``request``, None if no server listens on ``path`` or it is not this
    user's (said on stderr; nothing is sent then)."""
    try:
        sock = trust.connect(path, named)
    except trust.Untrusted as why:
        _log(f"not using {path}: {why}")
        return None
    if sock is None:
        return None
    with sock:
        try:
            protocol.send(sock, request)
            return protocol.receive(sock)[0]
        except (OSError, ValueError):
            return None


def _stop(path: Path, named: bool) -> int:
    """Ask the server to stop; wait until an idle one has ended (its lock free)."""
    reply = _ask(path, named, {"stop": True})
    if not reply or not reply.get("stopped"):
        _log(f"no server listens on {path}")
        return 1
    if reply.get("after_command"):
        _log(f"the server on {path} ends after the command it is running")
        return 0
    if not lock.wait_free(path, STOP_TIMEOUT):
        _log(f"the server on {path} (pid {lock.holder(path)}) was asked to stop and has not ended "
             f"after {STOP_TIMEOUT:g} s")
        return 1
    _log(f"stopped the server on {path}")
    return 0


def _status(path: Path, named: bool) -> int:
    """One line on standard output: the server's pid, devices, uptime and commands run."""
    reply = _ask(path, named, {"status": True})
    info = reply.get("status_of_server") if reply else None
    if not info:
        print(f"gamut serve: no server listens on {path}")
        return 1
    idle = f"ends after {info['idle_timeout_s']:g} s idle" if info["idle_timeout_s"] else "runs until stopped"
    print(f"gamut serve: pid {info['pid']} on {info['socket']}, warmed up on {', '.join(info['devices'])}, "
          f"up {info['up_s']:g} s, {info['commands']} commands run{', one running now' if info.get('busy') else ''}, "
          f"{idle}")
    return 0


def _detach(path: Path, named: bool, args: argparse.Namespace) -> int:
    """Start the server as a process of its own session, logging beside its socket; wait until it
    listens. The server lock is taken here and handed to the server, so of two started at once,
    one starts a server and the other says whose it is."""
    from gamut.serve.server import take_lock

    lock_fd = take_lock(path, server=False)
    try:
        if protocol.listening(path):  # a server that holds no lock (an older gamut's)
            raise UsageError(protocol.already(path, None))
        log = path.with_suffix(".log")
        command = [sys.executable, "-m", "gamut", "serve", "--device", args.device,
                   "--idle-timeout", str(args.idle_timeout), "--lock-fd", str(lock_fd)]
        with open(log, "ab") as out, open(os.devnull, "rb") as nothing:
            child = subprocess.Popen(command, stdin=nothing, stdout=out, stderr=out, start_new_session=True,
                                     pass_fds=(lock_fd,))
        lock.record(lock_fd, child.pid)
    finally:
        os.close(lock_fd)
    deadline = time.monotonic() + READY_TIMEOUT
    while not _serves(path, named, child.pid):
        if child.poll() is not None:
            raise UsageError(f"gamut serve: the server ended while starting (status {child.returncode}); see {log}")
        if time.monotonic() > deadline:
            child.terminate()
            raise UsageError(f"gamut serve: the server was not ready after {READY_TIMEOUT:g} s; see {log}")
        time.sleep(0.05)
    _log(f"ready on {path} (pid {child.pid}; log {log})")
    return 0


def _serves(path: Path, named: bool, pid: int) -> bool:
    """Whether the server on ``path`` is process ``pid`` (not merely whether one listens)."""
    if not protocol.listening(path):
        return False
    reply = _ask(path, named, {"status": True})
    info = reply.get("status_of_server") if reply else None
    return bool(info) and info.get("pid") == pid
