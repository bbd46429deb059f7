"""A ``gamut`` command run by a ``gamut serve`` process, where one is listening.

:func:`run_served` is the first thing the ``gamut`` command does. Where no server listens (no
socket, or nobody behind it), or the server does not take the command (another environment's
settings), it returns None at once and the command runs in its own process, as always.
Otherwise the server runs it with this process's standard streams, working directory and
environment, and this process waits and exits with the command's status. Ctrl-C and SIGTERM
are passed on: the server ends the command as it would end its own process (removing partial
outputs), and ends with it; the next command runs in its own process again.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Sequence

from gamut.io.interrupt import MESSAGES
from gamut.serve import protocol

#: Commands never handed to a server.
LOCAL_COMMANDS = ("serve",)

#: The exit status when the server ended before the command had finished and no signal asked it to.
LOST = 1


def run_served(argv: Sequence[str], environ: dict[str, str] | None = None) -> int | None:
    """Run ``gamut argv`` in this user's server and return its exit status; None where no server
    takes it (the caller runs it itself)."""
    environ = dict(os.environ if environ is None else environ)
    if argv and argv[0] in LOCAL_COMMANDS:
        return None
    path = protocol.socket_path(environ)
    if path is None or not path.exists():
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock, _Signals(sock) as signals:
        try:
            try:
                sock.connect(str(path))
                protocol.send(sock, {"run": list(argv), "cwd": os.getcwd(), "umask": protocol.current_umask(),
                                     "environ": environ, "settled": protocol.settled_environment(environ)},
                              fds=(0, 1, 2))
            except OSError:  # nobody listens (a stale socket), or a standard stream is closed: run here
                return None
            return _wait(sock, signals)
        except _Interrupted as stop:
            print(f"gamut: {MESSAGES.get(stop.signum, f'ended by signal {stop.signum}')}", file=sys.stderr)
            return 128 + stop.signum


class _Interrupted(Exception):
    """A signal came before the command started (the server busy with another)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Signals:
    """While inside, SIGINT, SIGTERM and SIGHUP end this process alone (:class:`_Interrupted`)
    until the command starts; after, they are passed on to the server."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.started = False
        self.sent: list[int] = []

    def __enter__(self) -> _Signals:
        self.previous = {sig: signal.signal(sig, self._on) for sig in self.SIGNALS}
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    def _on(self, signum: int, frame) -> None:
        if not self.started:
            raise _Interrupted(signum)
        self.sent.append(signum)
        try:
            protocol.send(self.sock, {"signal": signum})
        except OSError:
            pass


def _wait(sock: socket.socket, signals: _Signals) -> int | None:
    """The server's replies: ``started`` (or ``declined``: None), then the command's status."""
    reply = _receive(sock)
    if reply is not None and "declined" in reply:
        return None
    if reply is not None and reply.get("started"):
        signals.started = True
        reply = _receive(sock)
    if reply is None or "status" not in reply:  # the server ended mid-command: by our signal, or it died
        if signals.sent:
            return 128 + signals.sent[0]
        print("gamut: error: the gamut server ended before the command finished "
              "(outputs are written whole or not at all; run it again)", file=sys.stderr)
        return LOST
    return int(reply["status"])


def _receive(sock: socket.socket) -> dict | None:
    try:
        return protocol.receive(sock)[0]
    except (OSError, ValueError):
        return None
