"""A ``gamut`` command run by a ``gamut serve`` process, where one is listening.

:func:`run_served` is the first thing the ``gamut`` command does. Where no server listens (no
socket, or nobody behind it), the server is busy with another command, or it does not take the
command (another environment's settings or code), it returns None at once and the command runs
in its own process, as always. So it does where the socket or its directory may be another
user's (:mod:`gamut.serve.trust`), with one line on stderr that says why; nothing is sent there.
Otherwise the server runs it with this process's standard streams, working directory and
environment, and this process waits and exits with the command's status. Ctrl-C and SIGTERM
are passed on: the server ends the command as it would end its own process (removing partial
outputs), and ends with it; the next command runs in its own process again.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from gamut.io.interrupt import MESSAGES
from gamut.serve import protocol, trust

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
    if path is None:
        return None
    try:
        sock = trust.connect(path, protocol.is_named(environ))
    except trust.Untrusted as why:
        _note(f"not using the server socket {path}: {why}; running this command in its own process")
        return None
    if sock is None:  # nobody listens (no socket, or a stale one)
        return None
    from gamut.serve.fingerprint import digest

    with sock, _Signals(sock) as signals:
        try:
            try:
                protocol.send(sock, {"run": list(argv), "cwd": os.getcwd(), "umask": protocol.current_umask(),
                                     "environ": environ, "settled": protocol.settled_environment(environ),
                                     "code": digest()},
                              fds=(0, 1, 2))
            except OSError:  # the server has gone, or a standard stream is closed: run here
                return None
            return _wait(sock, signals, path)
        except _Interrupted as stop:
            print(f"gamut: {MESSAGES.get(stop.signum, f'ended by signal {stop.signum}')}", file=sys.stderr)
            return 128 + stop.signum


def _note(message: str) -> None:
    """One line on stderr (if there is one: ``print(file=None)`` would write to stdout)."""
    if sys.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            print(f"gamut: note: {message}", file=sys.stderr, flush=True)


class _Interrupted(Exception):
    """A signal came before the server started the command."""

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


def _wait(sock: socket.socket, signals: _Signals, path: Path) -> int | None:
    """The server's replies: ``started``, then the command's status; None where the server
    declined the command or ended before it started it (it never ran: the caller runs it)."""
    reply = _receive(sock)
    if reply is None or "declined" in reply:
        if reply is not None and reply.get("code_changed"):
            _note(f"the gamut server on {path} runs the code it started with, and {reply['code_changed']} "
                  "since: it ends, and this command runs in its own process")
        return None
    if reply.get("started"):
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
