"""What a ``gamut`` command and a ``gamut serve`` process say to each other, and where they meet.

Light on purpose: the client side runs before any of gamut's heavy imports.

Messages are JSON objects framed by a 4-byte big-endian length; the first message of a command
carries its standard input, output and error as file descriptors (``SCM_RIGHTS``). The socket
lives in a directory of the user's own (mode 0700; checked by :mod:`gamut.serve.trust`), named
after the Python environment and gamut's version, so that each environment has its own server;
``GAMUT_SERVER`` names another socket, or turns serving off (``off``).
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import sys
from pathlib import Path
from typing import Any

from gamut.io.descriptors import receive_fds

#: ``GAMUT_SERVER`` values that turn serving off.
OFF = ("off", "0", "no", "false", "")

#: Environment variables read once per process (by Numba, CuPy, the CUDA driver, Python's
#: ``tempfile`` and its text encodings): a command runs in a server only if its values of these
#: equal the server's.
_SETTLED_PREFIXES = ("GAMUT_", "NUMBA_", "CUDA_", "CUPY_", "NVIDIA_", "OMP_", "MKL_", "OPENBLAS_")
_SETTLED_NAMES = ("TMPDIR", "TEMP", "TMP", "PYTHONHASHSEED", "PYTHONPATH", "PYTHONIOENCODING", "PYTHONUTF8",
                  "LD_LIBRARY_PATH", "LANG", "LC_ALL", "LC_CTYPE")
_NOT_SETTLED = ("GAMUT_SERVER",)

_LENGTH = struct.Struct(">I")
#: The longest message (a command line with its environment): a sanity bound, not a tuning knob.
MAX_MESSAGE = 64 << 20


class ProtocolError(OSError):
    """The other side closed the connection or sent something that is not a message."""


def _environment_tag() -> str:
    """Which Python environment and gamut this is: interpreter, package location, version."""
    from gamut._version import __version__

    here = Path(__file__).resolve().parent.parent
    text = "\0".join((os.path.realpath(sys.executable), sys.prefix, str(here), __version__))
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def socket_path(environ: dict[str, str] | None = None) -> Path | None:
    """The server socket of this user and environment (None where ``GAMUT_SERVER`` turns it off)."""
    environ = os.environ if environ is None else environ
    named = environ.get("GAMUT_SERVER")
    if named is not None:
        return None if named.strip().lower() in OFF else Path(named)
    runtime = environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) if runtime and os.path.isdir(runtime) else Path("/tmp")
    return base / f"gamut-{os.getuid()}" / f"serve-{_environment_tag()}.sock"


def is_named(environ: dict[str, str] | None = None) -> bool:
    """Whether ``GAMUT_SERVER`` names the socket (else it is the default one, or serving is off)."""
    return "GAMUT_SERVER" in (os.environ if environ is None else environ)


def listening(path: Path) -> bool:
    """Whether a process answers on ``path`` (a connection, closed at once: nothing is sent)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def already(path: Path, pid: int | None) -> str:
    """The message of a ``gamut serve`` that finds another server on ``path`` (``pid``, if known)."""
    of = f" (pid {pid})" if pid else ""
    if listening(path):
        return f"gamut serve: a server already listens on {path}{of} (stop it with 'gamut serve --stop')"
    return f"gamut serve: a server is already starting on {path}{of} (wait for it, or stop it with 'gamut serve --stop')"


def current_umask() -> int:
    """This process's umask (read by setting it and back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def settled_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables a server fixed when it started (see ``_SETTLED_PREFIXES``)."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in environ.items()
            if (k.startswith(_SETTLED_PREFIXES) or k in _SETTLED_NAMES) and k not in _NOT_SETTLED}


def send(sock: socket.socket, message: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
    """Send one message (and ``fds``, with its first bytes)."""
    data = json.dumps(message).encode()
    head = _LENGTH.pack(len(data))
    if fds:
        socket.send_fds(sock, [head], list(fds))
    else:
        sock.sendall(head)
    sock.sendall(data)


def _exactly(sock: socket.socket, size: int) -> bytes:
    parts = []
    while size:
        part = sock.recv(min(size, 1 << 20))
        if not part:
            raise ProtocolError("the connection closed mid-message")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def receive(sock: socket.socket, max_fds: int = 0) -> tuple[dict[str, Any] | None, list[int]]:
    """One message and the descriptors sent with it; ``(None, [])`` if the other side closed
    the connection before a message began."""
    if max_fds:
        head, fds = receive_fds(sock, _LENGTH.size, max_fds)
    else:
        head, fds = sock.recv(_LENGTH.size), []
    if not head:
        return None, []
    try:
        head += _exactly(sock, _LENGTH.size - len(head))
        (size,) = _LENGTH.unpack(head)
        if size > MAX_MESSAGE:
            raise ProtocolError(f"a message of {size} bytes")
        message = json.loads(_exactly(sock, size))
        if not isinstance(message, dict):
            raise ProtocolError("a message that is not an object")
        return message, list(fds)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
